package logstore

// Indexes. Each segment keeps a sparse index in memory: one point every
// Options.IndexIntervalBytes of entries, giving the entry's Raft index, Kafka
// base offset, file position, and the largest batch timestamp before it in
// the segment. One sorted array serves three lookups (by index, by offset,
// and by time through the running maximum); a lookup lands on a point and
// scans forward at most one interval.
//
// Term runs live at the log level: terms change rarely, so Term(i) is a
// binary search over (first index, term) pairs, without I/O.
//
// When a segment is sealed its sparse index and term runs are written to a
// sidecar file, "<segment name minus .log>.idx", so that opening the log
// reads the small index files instead of scanning sealed segments:
//
//	 0 magic          [8]byte "FLOEIDX1"
//	 8 crc32c         uint32  CRC-32C of bytes 12..end
//	12 segmentBytes   int64   the segment's size when sealed
//	20 base           uint64
//	28 last           uint64
//	36 baseOffset     int64
//	44 nextOffset     int64
//	52 maxTimestamp   int64
//	60 firstPrevLink  uint32
//	64 lastLink       uint32
//	68 lastPos        int64   position of the last entry
//	76 maxGen         uint32
//	80 termCount      uint32
//	84 pointCount     uint32
//	88 termCount  × (firstIndex uint64, term uint64)
//	   pointCount × (index uint64, offset int64, pos int64, maxTsBefore int64)
//
// Little-endian. The index file is derived data: if it is missing, fails its
// CRC, or disagrees with its segment (size, or the last entry at lastPos),
// opening the log rescans the segment and rewrites it.

import (
	"encoding/binary"
	"errors"
	"sort"
)

// indexEntry is one sparse index point.
type indexEntry struct {
	index       uint64
	offset      int64
	pos         int64
	maxTsBefore int64
}

// termRun says entries from firstIndex on have term, up to the next run.
type termRun struct {
	firstIndex uint64
	term       uint64
}

// findByIndex returns the position of the sparse point to scan from to find
// entry i (the last point at or before i).
func findByIndex(sparse []indexEntry, i uint64) int64 {
	k := sort.Search(len(sparse), func(k int) bool { return sparse[k].index > i })
	if k == 0 {
		return 0
	}
	return sparse[k-1].pos
}

// findByOffset returns the position to scan from to find the batch holding
// offset: the last point whose entry's base offset is at or before it. No
// entry at or after a later point can hold an earlier offset.
func findByOffset(sparse []indexEntry, offset int64) int64 {
	k := sort.Search(len(sparse), func(k int) bool { return sparse[k].offset > offset })
	if k == 0 {
		return 0
	}
	return sparse[k-1].pos
}

// findByTime returns the position to scan from to find the first batch with
// maxTimestamp >= ts: the last point before which no batch reached ts.
func findByTime(sparse []indexEntry, ts int64) int64 {
	k := sort.Search(len(sparse), func(k int) bool { return sparse[k].maxTsBefore >= ts })
	if k == 0 {
		return 0
	}
	return sparse[k-1].pos
}

// termAt returns the term of index i from runs (i must be covered).
func termAt(runs []termRun, i uint64) (uint64, bool) {
	k := sort.Search(len(runs), func(k int) bool { return runs[k].firstIndex > i })
	if k == 0 {
		return 0, false
	}
	return runs[k-1].term, true
}

// noteTerm extends runs with an entry (index, term) appended at the end.
func noteTerm(runs []termRun, index, term uint64) []termRun {
	if n := len(runs); n > 0 && runs[n-1].term == term {
		return runs
	}
	return append(runs, termRun{firstIndex: index, term: term})
}

// cutTermsAfter drops the terms of entries after index.
func cutTermsAfter(runs []termRun, index uint64) []termRun {
	k := sort.Search(len(runs), func(k int) bool { return runs[k].firstIndex > index })
	return runs[:k]
}

// termsIn returns the runs covering [lo, hi], clipped to start at lo.
func termsIn(runs []termRun, lo, hi uint64) []termRun {
	var out []termRun
	for k, r := range runs {
		end := ^uint64(0)
		if k+1 < len(runs) {
			end = runs[k+1].firstIndex - 1
		}
		if end < lo || r.firstIndex > hi {
			continue
		}
		out = append(out, termRun{firstIndex: max(r.firstIndex, lo), term: r.term})
	}
	return out
}

const (
	indexMagic       = "FLOEIDX1"
	indexHeaderBytes = 88
	indexPointBytes  = 32
	indexTermBytes   = 16
)

// encodeIndex serializes a sealed segment's index with its term runs.
func encodeIndex(s *segment, terms []termRun) []byte {
	b := make([]byte, indexHeaderBytes, indexHeaderBytes+len(terms)*indexTermBytes+len(s.sparse)*indexPointBytes)
	le := binary.LittleEndian
	copy(b, indexMagic)
	le.PutUint64(b[12:], uint64(s.size))
	le.PutUint64(b[20:], s.base)
	le.PutUint64(b[28:], s.last)
	le.PutUint64(b[36:], uint64(s.baseOffset))
	le.PutUint64(b[44:], uint64(s.nextOffset))
	le.PutUint64(b[52:], uint64(s.maxTimestamp))
	le.PutUint32(b[60:], s.firstPrevLink)
	le.PutUint32(b[64:], s.lastLink)
	le.PutUint64(b[68:], uint64(s.lastPos))
	le.PutUint32(b[76:], s.maxGen)
	le.PutUint32(b[80:], uint32(len(terms)))
	le.PutUint32(b[84:], uint32(len(s.sparse)))
	for _, t := range terms {
		b = le.AppendUint64(b, t.firstIndex)
		b = le.AppendUint64(b, t.term)
	}
	for _, p := range s.sparse {
		b = le.AppendUint64(b, p.index)
		b = le.AppendUint64(b, uint64(p.offset))
		b = le.AppendUint64(b, uint64(p.pos))
		b = le.AppendUint64(b, uint64(p.maxTsBefore))
	}
	le.PutUint32(b[8:], crc32c(b[12:]))
	return b
}

var errBadIndex = errors.New("bad index file")

// decodeIndex fills s's summary and sparse index from an index file and
// returns its term runs. It checks the framing and CRC; the caller checks
// the summary against the segment file itself.
func decodeIndex(b []byte, s *segment) ([]termRun, error) {
	le := binary.LittleEndian
	if len(b) < indexHeaderBytes || string(b[:8]) != indexMagic || le.Uint32(b[8:]) != crc32c(b[12:]) {
		return nil, errBadIndex
	}
	nTerms, nPoints := int64(le.Uint32(b[80:])), int64(le.Uint32(b[84:]))
	if int64(len(b)) != indexHeaderBytes+nTerms*indexTermBytes+nPoints*indexPointBytes {
		return nil, errBadIndex
	}
	s.size = int64(le.Uint64(b[12:]))
	if le.Uint64(b[20:]) != s.base {
		return nil, errBadIndex
	}
	s.last = le.Uint64(b[28:])
	s.baseOffset = int64(le.Uint64(b[36:]))
	s.nextOffset = int64(le.Uint64(b[44:]))
	s.maxTimestamp = int64(le.Uint64(b[52:]))
	s.firstPrevLink = le.Uint32(b[60:])
	s.lastLink = le.Uint32(b[64:])
	s.lastPos = int64(le.Uint64(b[68:]))
	s.maxGen = le.Uint32(b[76:])
	p := b[indexHeaderBytes:]
	terms := make([]termRun, nTerms)
	for i := range terms {
		terms[i] = termRun{firstIndex: le.Uint64(p), term: le.Uint64(p[8:])}
		p = p[indexTermBytes:]
	}
	s.sparse = make([]indexEntry, nPoints)
	for i := range s.sparse {
		s.sparse[i] = indexEntry{index: le.Uint64(p), offset: int64(le.Uint64(p[8:])),
			pos: int64(le.Uint64(p[16:])), maxTsBefore: int64(le.Uint64(p[24:]))}
		p = p[indexPointBytes:]
	}
	return terms, nil
}
