package logstore

// A torn write into zero-filled sectors (issue 13). A real file system may
// make a write's new file size durable before all of its data: sectors
// never written read back as zeros. The entry being written then has a
// prefix of its bytes (its header whole, or cut inside it) and zeros from
// a sector boundary to the end of the file. Its CRC fails (or, cut inside
// the header, its header check), which by itself reads as damage; but a
// tear leaves exactly this, and fencing over an entry that was never
// durable costs availability when a majority crashes so at once.

import (
	"encoding/binary"
	"errors"
	"io"
)

// sectorBytes is the granularity of a torn write: a disk writes whole
// sectors, so the zeros of sectors that never landed start at a multiple of
// it (the file's own offsets: segments start at file offset 0).
const sectorBytes = 512

// tornIntoZeros reports whether the entry at pos of f (the segment file at
// base), which should have been entry index and failed for why, is the
// last write torn at a sector boundary with zeros after it: the bytes from
// a sector boundary strictly inside the entry to the end of the file are
// all zero, in the active segment (no later segment file holds data), and
// the entry is past every point known durable (the meta record's commit
// index and the snapshot point: an entry at or below them was fsynced, so
// zeros in it are damage, whatever they look like).
//
// Strictly inside: a header check that fails over a whole header means the
// header was changed after it was written whole (damage), so for
// errHeaderCheck the boundary must fall inside the header; for a CRC
// mismatch, inside the entry its (whole) header describes. Zeros from the
// entry's start are zeroRegionAt's case.
//
// What this takes for a tear that was not one: damage that zeroes the
// entry from a sector boundary to the end of the file (it looks exactly
// like the tear), and an entry damaged elsewhere whose own last bytes are
// zeros across a sector boundary (a batch's last byte, its last record's
// header count, is often 0: about 1 in 512 of such entries). Both only
// above the durable commit index, the class docs/architecture.md already
// lists as not detected.
//
// first holds the bytes from pos that recovery already read (zeroRegionAt);
// when they reach end, nothing is read again.
func (l *Log) tornIntoZeros(f File, base uint64, pos, end int64, index uint64, why error, first []byte) bool {
	if index <= l.hs.Commit || index <= l.snap.Index {
		return false
	}
	if int64(len(first)) != end-pos {
		first = nil // only part of the tail, or nothing, was read
	}
	var entryEnd int64
	switch {
	case errors.Is(why, errHeaderCheck):
		entryEnd = pos + entryHeaderBytes
	case errors.Is(why, errChecksum):
		hb := make([]byte, entryHeaderBytes)
		if len(first) >= entryHeaderBytes {
			hb = first
		} else if _, err := f.ReadAt(hb, pos); err != nil {
			return false
		}
		h, err := parseEntryHeader(hb, l.opts.EntryBytesMax)
		if err != nil {
			return false
		}
		entryEnd = pos + h.size()
	default:
		return false
	}
	z, ok := zeroRunStart(f, pos, end, first)
	if !ok {
		return false
	}
	boundary := (z + sectorBytes - 1) / sectorBytes * sectorBytes
	if boundary <= pos || boundary >= min(entryEnd, end) {
		return false
	}
	if errors.Is(why, errChecksum) && !tornTailCanMatch(f, pos, boundary, entryEnd, first) {
		// No bytes in place of the zeros make the entry's CRC hold: the
		// bytes before the boundary, which a tear leaves as written,
		// were changed (seed 1101738: a flipped bit 27 bytes before
		// the boundary of an entry whose one byte after it is 0).
		return false
	}
	return !l.laterSegmentData(base)
}

// tornTailCanMatch reports whether some bytes in place of the entry's
// bytes from boundary to entryEnd (all zeros now: the part of the entry a
// tear lost) give the entry at pos the CRC its header holds. A tear leaves
// every byte before the boundary as written, so if none do, a byte before
// it was damaged. Only a tail shorter than the CRC tells: CRC-32C is
// affine in the tail's bits and maps every tail of fewer than 32 bits to
// its own value (it detects every burst up to 32 bits), while 32 bits or
// more reach every value. Those are solved for exactly (a GF(2) span
// test over the tail's bits), without trying 2^(8k) tails; a read that
// fails says a match is possible (the tear stands, as before).
func tornTailCanMatch(f File, pos, boundary, entryEnd int64, first []byte) bool {
	k := entryEnd - boundary
	if k >= 4 || k <= 0 {
		return true
	}
	b := first
	if int64(len(b)) < boundary-pos {
		b = make([]byte, boundary-pos)
		if n, err := f.ReadAt(b, pos); err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
			return true
		}
	}
	b = b[:boundary-pos]
	stored := binary.LittleEndian.Uint32(b)
	prefix := crc32c(b[4:])
	tail := make([]byte, k)
	c0 := crc32cUpdate(prefix, tail)
	// The images of the tail's single bits (minus c0), reduced to an
	// echelon basis by their leading bits; then the target stored^c0 is
	// reachable exactly when it reduces to zero against that basis.
	var basis [32]uint32
	for i := range 8 * k {
		tail[i/8] = 1 << (i % 8)
		v := crc32cUpdate(prefix, tail) ^ c0
		tail[i/8] = 0
		for bit := 31; bit >= 0 && v != 0; bit-- {
			if v&(1<<bit) == 0 {
				continue
			}
			if basis[bit] == 0 {
				basis[bit] = v
				break
			}
			v ^= basis[bit]
		}
	}
	t := stored ^ c0
	for bit := 31; bit >= 0 && t != 0; bit-- {
		if t&(1<<bit) != 0 && basis[bit] != 0 {
			t ^= basis[bit]
		}
	}
	return t == 0
}

// zeroRunStart returns where the run of zero bytes that ends f at end
// starts, looking no further back than pos (end if the last byte is not
// zero); from b, the bytes pos..end, when given. ok is false if a read
// failed.
func zeroRunStart(f File, pos, end int64, b []byte) (int64, bool) {
	if b != nil {
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != 0 {
				return pos + int64(i) + 1, true
			}
		}
		return pos, true
	}
	const window = 64 << 10
	buf := make([]byte, min(window, end-pos))
	for hi := end; hi > pos; {
		lo := max(pos, hi-window)
		b := buf[:hi-lo]
		if n, err := f.ReadAt(b, lo); err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
			return 0, false
		}
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != 0 {
				return lo + int64(i) + 1, true
			}
		}
		hi = lo
	}
	return pos, true
}
