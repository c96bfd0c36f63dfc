package logstore

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/floe-broker/floe/node/records"
)

// ReadResult is what Read returns: whole stored batches, concatenated as
// stored, and the offset after the last one (the offset asked for if none).
type ReadResult struct {
	Data       []byte
	NextOffset int64
}

// scanner opens an entry scanner on s from pos, reading chunks of at least
// scanChunkBytes.
//
// Its buffer is the log's scan buffer (l.bufs.scan), reused by every scanner
// the log, and every log sharing its ReadBuffers, opens: what take and next
// return aliases it until the next such scanner opens, so one scanner is
// live at a time and nothing a read hands out (or keeps) is that memory:
// callers copy it. Reading through a reused buffer changes no read the
// scanner makes (newEntryScannerIn), so a simulation's file-system faults,
// drawn per read, stay the same.
func (l *Log) scanner(s *segment, pos int64, chunk int) *entryScanner {
	return l.scannerChunk(s, pos, max(chunk, scanChunkBytes))
}

// scannerChunk is scanner reading chunks of exactly chunk bytes.
func (l *Log) scannerChunk(s *segment, pos int64, chunk int) *entryScanner {
	return newEntryScannerIn(&l.bufs.scan, s.f, pos, s.size, l.opts.EntryBytesMax, chunk)
}

// segmentOf returns the position in segs of the segment holding entry i,
// which must be physically present.
func (l *Log) segmentOf(i uint64) int {
	return sort.Search(len(l.segs), func(k int) bool { return l.segs[k].last >= i })
}

// findEntry returns the segment, position and header of entry i, which must
// be physically present (logStart.index <= i <= lastIndex).
func (l *Log) findEntry(i uint64) (*segment, int64, entryHeader, error) {
	if err := l.flush(); err != nil {
		return nil, 0, entryHeader{}, err
	}
	k := l.segmentOf(i)
	if k == len(l.segs) || i < l.segs[k].base {
		return nil, 0, entryHeader{}, fmt.Errorf("%w: entry %d not in any segment", ErrUnavailable, i)
	}
	s := l.segs[k]
	sc := l.scanner(s, findByIndex(s.sparse, i), 0)
	for {
		pos := sc.pos
		h, err := sc.peek()
		if err != nil {
			return nil, 0, h, corruptAt(s, pos, err)
		}
		switch {
		case h.index == i:
			return s, pos, h, nil
		case h.index > i:
			return nil, 0, h, corruptAt(s, pos, fmt.Errorf("found index %d looking for %d", h.index, i))
		}
		sc.skip(h)
	}
}

// checkRange says whether [lo, hi) can be read: ErrCompacted if lo <= the
// snapshot index, ErrUnavailable if hi-1 > LastIndex, and empty for a
// range with nothing in it. what names the reader in the errors.
func (l *Log) checkRange(what string, lo, hi uint64) (empty bool, err error) {
	switch {
	case lo <= l.snap.Index:
		return false, fmt.Errorf("%w: %s from %d, snapshot at %d", ErrCompacted, what, lo, l.snap.Index)
	case hi > l.lastIndex+1:
		return false, fmt.Errorf("%w: %s to %d, last index %d", ErrUnavailable, what, hi-1, l.lastIndex)
	}
	return lo >= hi, nil
}

// Entries returns entries [lo, hi): at most maxBytes of Data in all, but at
// least one entry if the range is not empty (maxBytes < 0: no limit). It
// returns ErrCompacted if lo <= the snapshot index, ErrUnavailable if
// hi-1 > LastIndex, and an error wrapping ErrCorrupt for damaged entries.
//
// The caller owns what it gets: the slice and every entry's Data (a fresh
// copy, never the log's buffers; nil for an empty payload).
func (l *Log) Entries(lo, hi uint64, maxBytes int) ([]Entry, error) {
	var out []Entry
	err := l.EntriesFunc(lo, hi, maxBytes, func(es []Entry) {
		if len(es) > 0 {
			out = make([]Entry, len(es))
			copy(out, es)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil // no entries: a nil slice
}

// EntriesFunc is Entries handing its entries to fn instead of returning
// them, once, on success only (with an empty slice when there are none),
// so a caller that converts them allocates one slice, its own: the slice
// fn gets is the log's, reused by the next EntriesFunc, and fn must not
// keep it (nor call the log). The entries' Data are the caller's to keep,
// as Entries'.
func (l *Log) EntriesFunc(lo, hi uint64, maxBytes int, fn func([]Entry)) error {
	ents, err := l.entries(lo, hi, maxBytes)
	if err != nil {
		return err
	}
	fn(ents)
	clear(ents) // drop the Data the caller now owns
	if ents != nil && cap(ents) <= entBufKeepMax {
		l.bufs.ents = ents[:0]
	}
	return nil
}

// entBufKeepMax bounds the entries l.bufs.ents keeps room for between reads
// (1.5 MiB of them, at 48 bytes an Entry).
const entBufKeepMax = 1 << 15

// entries reads entries [lo, hi) as Entries says into l.bufs.ents, each
// entry's Data a copy of its own.
func (l *Log) entries(lo, hi uint64, maxBytes int) ([]Entry, error) {
	if empty, err := l.checkRange("entries", lo, hi); empty || err != nil {
		return nil, err
	}
	s, pos, _, err := l.findEntry(lo)
	if err != nil {
		return nil, err
	}
	out := l.bufs.ents[:0]
	total := 0
	for k := l.segmentOf(lo); k < len(l.segs) && lo < hi; k++ {
		s = l.segs[k]
		sc := l.scanner(s, pos, 0)
		for lo < hi {
			at := sc.pos
			h, raw, err := sc.next(true)
			if err == io.EOF {
				break
			}
			if err == nil && h.index != lo {
				err = fmt.Errorf("found index %d, want %d", h.index, lo)
			}
			if err != nil {
				clear(out) // the kept slice holds no copies
				return nil, corruptAt(s, at, err)
			}
			if len(out) > 0 && maxBytes >= 0 && total+int(h.length) > maxBytes {
				lo = hi // stop
				break
			}
			total += int(h.length)
			out = append(out, Entry{Index: h.index, Term: h.term, Kind: h.kind,
				Data: append([]byte(nil), raw[entryHeaderBytes:]...)})
			lo++
		}
		pos = 0
	}
	return out, nil
}

// kindsChunkBytes is the read size of Kinds: it reads headers, so with
// entries larger than this it reads a fraction of the log (a 64 KiB batch:
// a sixteenth); with smaller ones it reads them all, but decodes and
// copies nothing but the headers.
const kindsChunkBytes = 4 << 10

// Kinds returns the kind of each entry in [lo, hi), reading only the
// entries' headers: neither their payloads nor their checksums (which
// cover the payloads). It checks what the headers say instead: each
// entry's index, and its chain link against the entry before it (segment.go),
// so a damaged header is reported as ErrCorrupt and never read as a kind.
// A damaged payload is not noticed; reading the entry (Entries) notices it.
// Bounds and errors as Entries.
func (l *Log) Kinds(lo, hi uint64) ([]uint8, error) {
	if empty, err := l.checkRange("kinds", lo, hi); empty || err != nil {
		return nil, err
	}
	_, pos, _, err := l.findEntry(lo)
	if err != nil {
		return nil, err
	}
	out := make([]uint8, 0, hi-lo)
	var prevLink uint32
	linked := false
	for k := l.segmentOf(lo); k < len(l.segs) && lo < hi; k++ {
		s := l.segs[k]
		sc := l.scannerChunk(s, pos, kindsChunkBytes)
		for lo < hi {
			at := sc.pos
			h, err := sc.peek()
			if err == io.EOF {
				break
			}
			if err == nil && h.index != lo {
				err = fmt.Errorf("found index %d, want %d", h.index, lo)
			}
			if err == nil && linked && h.prevLink != prevLink {
				err = fmt.Errorf("entry %d does not chain to the entry before it", h.index)
			}
			if err != nil {
				return nil, corruptAt(s, at, err)
			}
			prevLink, linked = entryLink(sc.buf[at-sc.bufStart:]), true
			out = append(out, h.kind)
			sc.skip(h)
			lo++
		}
		pos = 0
	}
	if lo < hi {
		return nil, fmt.Errorf("%w: kinds stop at %d, want %d", ErrCorrupt, lo, hi)
	}
	return out, nil
}

// OffsetAfterIndex returns the Kafka offset after the last batch at or
// before index: NextOffset for LastIndex, the snapshot's NextOffset for the
// snapshot index when its entry is gone. It returns -1 for an index neither
// present nor the one just before the physical log.
func (l *Log) OffsetAfterIndex(index uint64) int64 {
	switch {
	case index > l.lastIndex:
		return -1
	case index == l.lastIndex:
		return l.nextOffset
	case index+1 == l.logStart.index:
		return l.logStart.offset
	case index < l.logStart.index:
		if index == l.snap.Index {
			return l.snap.NextOffset
		}
		return -1
	}
	_, _, h, err := l.findEntry(index)
	if err != nil {
		return -1
	}
	return h.offsetAfter()
}

// Read returns whole stored batches starting with the one holding offset,
// only batches whose base offset is below limitOffset (the high watermark),
// up to maxBytes but always at least one whole batch if one qualifies
// (KIP-74). It does not decode batches. Offsets below StartOffset or above
// NextOffset give ErrOffsetOutOfRange; a damaged entry gives an error
// wrapping ErrCorrupt naming its segment and position, and nothing of it is
// served.
//
// The caller owns Data (a copy of exactly its size, never the log's
// buffers).
func (l *Log) Read(offset int64, maxBytes int, limitOffset int64) (ReadResult, error) {
	res, err := l.ReadTransient(offset, maxBytes, limitOffset)
	if res.Data != nil {
		data := make([]byte, len(res.Data)) // not nil, even when empty
		copy(data, res.Data)
		res.Data = data
	}
	return res, err
}

// ReadTransient is Read whose Data is the log's read buffer, not a copy:
// it is valid only until the next read of this log or of any log sharing
// its ReadBuffers, and the caller copies what it keeps. It is for readers
// that decode the batches and drop them (a coordinator's replay reads its
// whole partition, a MiB at a time).
func (l *Log) ReadTransient(offset int64, maxBytes int, limitOffset int64) (ReadResult, error) {
	res := ReadResult{NextOffset: offset}
	if offset < l.startOffset || offset > l.nextOffset {
		return res, fmt.Errorf("%w: offset %d, log has [%d, %d)", ErrOffsetOutOfRange, offset, l.startOffset, l.nextOffset)
	}
	if offset == l.nextOffset || offset >= limitOffset {
		return res, nil
	}
	if err := l.flush(); err != nil {
		return res, err
	}
	k := sort.Search(len(l.segs), func(k int) bool { return l.segs[k].nextOffset > offset })
	if k >= len(l.segs) {
		return res, nil
	}
	start := findByOffset(l.segs[k].sparse, offset)
	// Size the result by what the log holds past the start, not by the
	// budget: a consumer at the head asks for megabytes and gets a few
	// batches, and zeroing a megabyte per fetch would dominate the CPU.
	avail := l.segs[k].size - start
	for _, s := range l.segs[k+1:] {
		avail += s.size
	}
	// That size is for the read buffer (l.bufs.read) the batches are
	// gathered in, when it is new; Read then copies them to a Data of
	// exactly their size.
	data := l.bufs.read[:0]
	if cap(data) == 0 {
		data = make([]byte, 0, min(int64(max(maxBytes, 0)), avail, readBufKeepMax))
	}
	var err error
	for first := true; k < len(l.segs); k, first = k+1, false {
		s := l.segs[k]
		pos := int64(0)
		if first {
			pos = start
		}
		var done bool
		done, err = l.readSegment(s, pos, offset, maxBytes, limitOffset, &data, &res.NextOffset)
		if err != nil || done {
			break
		}
	}
	res.Data = data // not nil, even when empty
	if cap(data) <= readBufKeepMax {
		l.bufs.read = data[:0]
	}
	return res, err
}

// readBufKeepMax bounds the read buffer a Log keeps between reads.
const readBufKeepMax = 2 << 20

// readSegment appends qualifying batches of s from pos to res; done reports
// that the byte budget or the limit offset stopped it.
func (l *Log) readSegment(s *segment, pos, offset int64, maxBytes int, limitOffset int64, data *[]byte, next *int64) (done bool, err error) {
	sc := l.scanner(s, pos, min(maxBytes+entryHeaderBytes, 8<<20))
	for {
		at := sc.pos
		h, err := sc.peek()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return true, corruptAt(s, at, err)
		}
		if h.kind != KindBatch || h.offsetAfter() <= offset {
			sc.skip(h)
			continue
		}
		if h.baseOffset >= limitOffset {
			return true, nil
		}
		if len(*data) > 0 && len(*data)+int(h.length) > maxBytes {
			return true, nil
		}
		raw, err := sc.take(h, true)
		if err != nil {
			return true, corruptAt(s, at, err)
		}
		*data = append(*data, raw[entryHeaderBytes:]...)
		*next = h.offsetAfter()
	}
}

// OffsetForTime returns the first offset at or after StartOffset whose
// record timestamp is >= ts (Kafka ListOffsets by time); ok is false when no
// record is that late. It reads the first batch whose maxTimestamp reaches
// ts and decodes it to find the record. (Kafka's "earliest" and "latest"
// are StartOffset and NextOffset.)
func (l *Log) OffsetForTime(ts int64) (offset int64, ok bool, err error) {
	if err := l.flush(); err != nil {
		return 0, false, err
	}
	for _, s := range l.segs {
		if s.nextOffset <= l.startOffset || s.maxTimestamp < ts {
			continue
		}
		off, found, err := l.offsetForTimeIn(s, ts)
		if err != nil || found {
			return off, found, err
		}
	}
	return 0, false, nil
}

func (l *Log) offsetForTimeIn(s *segment, ts int64) (int64, bool, error) {
	sc := l.scanner(s, findByTime(s.sparse, ts), 0)
	for {
		at := sc.pos
		h, err := sc.peek()
		if err == io.EOF {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, corruptAt(s, at, err)
		}
		if h.kind != KindBatch || h.maxTimestamp < ts || h.offsetAfter() <= l.startOffset {
			sc.skip(h)
			continue
		}
		raw, err := sc.take(h, true)
		if err != nil {
			return 0, false, corruptAt(s, at, err)
		}
		if off, ok := firstRecordAtOrAfter(raw[entryHeaderBytes:], ts, l.startOffset); ok {
			return off, true, nil
		}
	}
}

// firstRecordAtOrAfter finds the first record of batch b at or after
// minOffset with timestamp >= ts. A batch it cannot decode answers with its
// first offset at or after minOffset: its header said a record reaches ts.
func firstRecordAtOrAfter(b []byte, ts, minOffset int64) (int64, bool) {
	bh, err := records.ParseBatch(b)
	if err != nil {
		return 0, false
	}
	var found int64
	err = records.Records(b, func(r records.Record) error {
		if off := bh.BaseOffset + int64(r.OffsetDelta); off >= minOffset && bh.Timestamp(r) >= ts {
			found = off
			return errFound
		}
		return nil
	})
	switch err {
	case errFound:
		return found, true
	case nil:
		return 0, false
	}
	return max(bh.BaseOffset, minOffset), true
}

// errFound stops a walk over a batch's records at the one sought.
var errFound = errors.New("found")
