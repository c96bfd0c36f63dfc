package logstore

// A segment file holds consecutive log entries, nothing else. Its name is
// its first entry's Raft index and the generation that created it:
// "<base index, 20 digits>-<generation, 10 digits>.log" (the generation keeps
// names unique when a snapshot install re-creates a base whose old file is
// not yet deleted). Each entry:
//
//	 0 ┌────────────────────────────┐
//	   │ crc32c          uint32     │ CRC-32C of bytes 4 .. end of payload
//	 4 │ magic           uint8 0xF1 │ format version
//	 5 │ kind            uint8      │ KindBatch or an opaque control kind
//	 6 │ headerCheck     uint16     │ see below; 0 in files written
//	   │                            │ before it existed (unchecked)
//	 8 │ length          uint32     │ payload bytes
//	12 │ gen             uint32     │ log generation at append (see below)
//	16 │ index           uint64     │ Raft index
//	24 │ term            uint64     │ Raft term
//	32 │ baseOffset      int64      │ batch: its first Kafka offset;
//	   │                            │ other kinds: the log's next offset
//	40 │ lastOffsetDelta int32      │ batch: offsets taken - 1; others: -1
//	44 │ prevLink        uint32     │ link of the previous entry (chain)
//	48 │ maxTimestamp    int64      │ batch: its maxTimestamp; others: -1
//	56 ├────────────────────────────┤
//	   │ payload (length bytes)     │ KindBatch: the Kafka v2 record batch,
//	   │                            │ exactly as produced (base offset set)
//	   └────────────────────────────┘
//
// All integers are little-endian. The header repeats what the batch already
// says (offsets, timestamp) so that indexing and recovery never parse a
// batch.
//
// The header check. headerCheck = the two halves of CRC-32C over bytes
// 4..5 and 8..55 (every header field but the CRC and the check itself)
// XORed together, 0 replaced by 1. The CRC covers the whole entry, but it
// can only be checked over the span the length field names: a length
// damaged together with the CRC (or damaged so that the entry seems to run
// past the end of the file) made recovery take a damaged entry for a torn
// write, or a wrong span for an entry. A header whose check fails was
// written whole and changed afterwards (a torn write leaves a prefix of
// what was written, so a whole header is the header written): it is damage,
// whatever its length says. The check sits in bytes that used to be
// reserved and zero: a check of 0 is an entry written before it existed,
// read unchecked as before.
//
// The chain. link(entry) = CRC-32C over magic, kind and bytes 12..47 (gen,
// index, term, offsets, prevLink): every entry names the one before it.
// Recovery follows the chain across segment files, so a file that a crash
// brought back from before a truncation or a snapshot install cannot be
// spliced onto the current log, even when its indexes line up. The link
// leaves out the length, payload and timestamp, so the cleaner can rewrite a
// payload without breaking the chain. The generation makes an entry
// re-appended after a truncation differ from the one it replaced even when
// their bytes match.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

const (
	entryHeaderBytes = 56
	entryMagic       = 0xF1
)

// entryHeader is a decoded entry header.
type entryHeader struct {
	crc             uint32
	kind            uint8
	length          uint32
	gen             uint32
	index, term     uint64
	baseOffset      int64
	lastOffsetDelta int32
	prevLink        uint32
	maxTimestamp    int64
}

// offsetAfter is the Kafka offset following this entry.
func (h entryHeader) offsetAfter() int64 { return h.baseOffset + int64(h.lastOffsetDelta) + 1 }

func (h entryHeader) size() int64 { return entryHeaderBytes + int64(h.length) }

func putEntryHeader(b []byte, h entryHeader) {
	le := binary.LittleEndian
	b[4], b[5] = entryMagic, h.kind
	le.PutUint32(b[8:], h.length)
	le.PutUint32(b[12:], h.gen)
	le.PutUint64(b[16:], h.index)
	le.PutUint64(b[24:], h.term)
	le.PutUint64(b[32:], uint64(h.baseOffset))
	le.PutUint32(b[40:], uint32(h.lastOffsetDelta))
	le.PutUint32(b[44:], h.prevLink)
	le.PutUint64(b[48:], uint64(h.maxTimestamp))
	le.PutUint16(b[6:], headerCheck(b))
}

// headerCheck computes the header check of the encoded entry header b
// (never 0: 0 marks a header written without one).
func headerCheck(b []byte) uint16 {
	c := crc32cUpdate(crc32c(b[4:6]), b[8:entryHeaderBytes])
	if v := uint16(c) ^ uint16(c>>16); v != 0 {
		return v
	}
	return 1
}

// appendEntry encodes h and payload at the end of dst, filling in length and
// CRC, and returns the link of the new entry.
func appendEntry(dst []byte, h entryHeader, payload []byte) ([]byte, uint32) {
	start := len(dst)
	dst = append(dst, make([]byte, entryHeaderBytes)...)
	dst = append(dst, payload...)
	h.length = uint32(len(payload))
	putEntryHeader(dst[start:], h)
	binary.LittleEndian.PutUint32(dst[start:], crc32c(dst[start+4:]))
	return dst, entryLink(dst[start:])
}

// entryLink computes the chain link of the encoded entry header b.
func entryLink(b []byte) uint32 { return crc32cUpdate(crc32c(b[4:6]), b[12:48]) }

var errBadHeader = errors.New("bad entry header")

// errHeaderCheck is a header whose check fails: it was damaged after it was
// written (it is also an errBadHeader).
var errHeaderCheck = fmt.Errorf("%w: header check mismatch", errBadHeader)

// parseEntryHeader decodes b[:entryHeaderBytes]; it checks the header check
// (when the header has one), the magic and that the payload is at most
// lengthMax.
func parseEntryHeader(b []byte, lengthMax int) (entryHeader, error) {
	le := binary.LittleEndian
	h := entryHeader{
		crc:             le.Uint32(b),
		kind:            b[5],
		length:          le.Uint32(b[8:]),
		gen:             le.Uint32(b[12:]),
		index:           le.Uint64(b[16:]),
		term:            le.Uint64(b[24:]),
		baseOffset:      int64(le.Uint64(b[32:])),
		lastOffsetDelta: int32(le.Uint32(b[40:])),
		prevLink:        le.Uint32(b[44:]),
		maxTimestamp:    int64(le.Uint64(b[48:])),
	}
	if check := le.Uint16(b[6:]); check != 0 && check != headerCheck(b) {
		return h, errHeaderCheck
	}
	if b[4] != entryMagic || int64(h.length) > int64(lengthMax) {
		return h, errBadHeader
	}
	return h, nil
}

// segment is one segment file and what the log knows about it.
//
// Invariants: last+1 == base when the segment is empty, and then lastLink ==
// firstPrevLink and baseOffset == nextOffset; size is the number of bytes
// the log has written to the file; sparse is sorted by index, offset and pos
// alike, and its first entry (if any) is the segment's first entry.
type segment struct {
	name    string
	base    uint64
	fileGen uint32
	f       File
	sealed  bool

	last          uint64
	size          int64
	baseOffset    int64 // the first entry's baseOffset
	nextOffset    int64 // offsetAfter of the last entry
	maxTimestamp  int64 // -1 when no batch
	maxGen        uint32
	firstPrevLink uint32
	lastLink      uint32
	lastPos       int64 // -1 when empty

	sparse          []indexEntry
	bytesSinceIndex int64
	openedMono      time.Duration // Clock.Monotonic when it became active, for SegmentAge
}

func (s *segment) empty() bool { return s.last < s.base }

func segmentName(base uint64, gen uint32) string {
	return fmt.Sprintf("%020d-%010d.log", base, gen)
}

func indexName(segName string) string { return strings.TrimSuffix(segName, ".log") + ".idx" }

// parseSegmentName is segmentName's inverse.
func parseSegmentName(name string) (base uint64, gen uint32, ok bool) {
	stem, found := strings.CutSuffix(name, ".log")
	if !found || len(stem) != 31 || stem[20] != '-' {
		return 0, 0, false
	}
	b, err1 := strconv.ParseUint(stem[:20], 10, 64)
	g, err2 := strconv.ParseUint(stem[21:], 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return b, uint32(g), true
}

func newSegment(name string, base uint64, gen uint32, f File, prevLink uint32, nextOffset int64) *segment {
	return &segment{
		name: name, base: base, fileGen: gen, f: f,
		last: base - 1, baseOffset: nextOffset, nextOffset: nextOffset,
		maxTimestamp: -1, firstPrevLink: prevLink, lastLink: prevLink, lastPos: -1,
	}
}

// noteAppended updates s for an entry of header h and link written at pos,
// adding a sparse index point every intervalBytes.
func (s *segment) noteAppended(h entryHeader, link uint32, pos int64, intervalBytes int64) {
	if len(s.sparse) == 0 || s.bytesSinceIndex >= intervalBytes {
		s.sparse = append(s.sparse, indexEntry{index: h.index, offset: h.baseOffset, pos: pos, maxTsBefore: s.maxTimestamp})
		s.bytesSinceIndex = 0
	}
	if s.empty() {
		s.baseOffset = h.baseOffset
		s.firstPrevLink = h.prevLink
	}
	s.bytesSinceIndex += h.size()
	s.last = h.index
	s.size = pos + h.size()
	s.nextOffset = h.offsetAfter()
	s.maxTimestamp = max(s.maxTimestamp, h.maxTimestamp)
	s.maxGen = max(s.maxGen, h.gen)
	s.lastLink = link
	s.lastPos = pos
}

// entryScanner reads consecutive entries of one file from pos up to end,
// through a buffer refilled in large reads.
type entryScanner struct {
	f         File
	pos, end  int64
	buf       []byte
	bufStart  int64 // file position of buf[0]
	bufLen    int
	lengthMax int
}

const scanChunkBytes = 64 << 10

func newEntryScanner(f File, pos, end int64, lengthMax int, chunk int) *entryScanner {
	return newEntryScannerIn(nil, f, pos, end, lengthMax, chunk)
}

// newEntryScannerIn is newEntryScanner reading through *keep's array when
// it is large enough: only the scanner's length (the chunk) decides its
// reads, never the array behind it, so a scanner reads exactly the same
// calls either way. A fresh array of at most scanBufKeepMax bytes replaces
// *keep, for the next scanner. (keep nil: always a fresh array.)
func newEntryScannerIn(keep *[]byte, f File, pos, end int64, lengthMax int, chunk int) *entryScanner {
	size := max(min(int64(chunk), end-pos), entryHeaderBytes)
	var buf []byte
	switch {
	case keep != nil && int64(cap(*keep)) >= size:
		buf = (*keep)[:size]
	default:
		buf = make([]byte, size)
		if keep != nil && size <= scanBufKeepMax {
			*keep = buf
		}
	}
	return &entryScanner{f: f, pos: pos, end: end, bufStart: pos, lengthMax: lengthMax, buf: buf}
}

// scanBufKeepMax bounds the scan buffer a Log keeps between reads: 2 MiB
// keeps the chunk of a 1 MiB Read (the coordinators' replays).
const scanBufKeepMax = 2 << 20

// errTruncated means the file ended inside an entry.
var errTruncated = errors.New("entry runs past the end of the file")

// ensure makes buf hold at least n bytes from pos.
func (s *entryScanner) ensure(n int) error {
	off := int(s.pos - s.bufStart)
	if off+n <= s.bufLen {
		return nil
	}
	if s.pos+int64(n) > s.end {
		return errTruncated
	}
	if off > s.bufLen {
		off, s.bufLen = 0, 0 // pos skipped past the buffer
	}
	copy(s.buf, s.buf[off:s.bufLen])
	s.bufLen -= off
	s.bufStart = s.pos
	if n > len(s.buf) {
		nb := make([]byte, max(n, 2*len(s.buf)))
		copy(nb, s.buf[:s.bufLen])
		s.buf = nb
	}
	for s.bufLen < n {
		want := min(int64(len(s.buf)-s.bufLen), s.end-(s.bufStart+int64(s.bufLen)))
		m, err := s.f.ReadAt(s.buf[s.bufLen:s.bufLen+int(want)], s.bufStart+int64(s.bufLen))
		s.bufLen += m
		if err != nil && (!errors.Is(err, io.EOF) || s.bufLen < n) {
			if errors.Is(err, io.EOF) {
				return errTruncated
			}
			return readFault{err}
		}
	}
	return nil
}

// peek decodes the header at pos without advancing. At the end it returns
// io.EOF.
func (s *entryScanner) peek() (entryHeader, error) {
	if s.pos >= s.end {
		return entryHeader{}, io.EOF
	}
	if err := s.ensure(entryHeaderBytes); err != nil {
		return entryHeader{}, err
	}
	return parseEntryHeader(s.buf[s.pos-s.bufStart:], s.lengthMax)
}

// skip advances past the entry whose header peek returned, unread.
func (s *entryScanner) skip(h entryHeader) { s.pos += h.size() }

// take returns the whole encoded entry whose header peek returned (it
// aliases the scanner's buffer until the next call) and advances. With
// verify it checks the CRC first.
func (s *entryScanner) take(h entryHeader, verify bool) ([]byte, error) {
	if err := s.ensure(int(h.size())); err != nil {
		return nil, err
	}
	off := int(s.pos - s.bufStart)
	raw := s.buf[off : off+int(h.size())]
	if verify && crc32c(raw[4:]) != h.crc {
		return nil, errChecksum
	}
	s.pos += h.size()
	return raw, nil
}

// next is peek then take.
func (s *entryScanner) next(verify bool) (entryHeader, []byte, error) {
	h, err := s.peek()
	if err != nil {
		return h, nil, err
	}
	raw, err := s.take(h, verify)
	return h, raw, err
}

var errChecksum = errors.New("entry checksum mismatch")

// readFault is a failed read of a segment file (an I/O error, not what the
// file holds): the entry may be intact, and reading again may work.
type readFault struct{ err error }

func (e readFault) Error() string { return e.err.Error() }
func (e readFault) Unwrap() error { return e.err }

// corruptAt builds the error a read returns for a damaged entry: it wraps
// ErrCorrupt and names the segment and position. A failed read is not
// damage and does not wrap ErrCorrupt: taken for damage, a transient I/O
// error made repair discard a replica's intact entries (simulator, 30% of
// reads failing: the controller's commit index went back at a restart).
func corruptAt(s *segment, pos int64, err error) error {
	var rf readFault
	if errors.As(err, &rf) {
		return fmt.Errorf("read segment %s at byte %d: %w", s.name, pos, rf.err)
	}
	return fmt.Errorf("%w: segment %s at byte %d: %v", ErrCorrupt, s.name, pos, err)
}
