package logstore

import (
	"errors"
	"fmt"
)

// TruncateAfter drops every entry after index (Raft conflict repair). It
// may not cut at or below the snapshot index (ErrCompacted). The cut is
// durable with the next sync; until then a crash may bring back the old
// suffix, but never a mix of old and new entries (see the chain in
// segment.go). Entries appended afterwards carry a new generation.
func (l *Log) TruncateAfter(index uint64) error {
	if err := l.writable(); err != nil {
		return err
	}
	if index >= l.lastIndex {
		return nil
	}
	if index < l.snap.Index {
		return fmt.Errorf("%w: truncate after %d, snapshot at %d", ErrCompacted, index, l.snap.Index)
	}
	// The cut works on the files, so the write buffer goes to the active
	// segment's file first; left in the buffer, its entries (cut or not)
	// would be written after the cut, ahead of the entries appended next
	// (sim seed 4201332 with --long --all-faults: a cut at a segment's
	// base, which reads no header and so flushed nothing, left the cut
	// entries at the start of the emptied segment).
	if err := l.flush(); err != nil {
		return err
	}
	k := l.segmentOf(index + 1)
	s := l.segs[k]
	if err := l.cutSegmentAfter(s, index); err != nil {
		if index == l.snap.Index && errors.Is(err, ErrCorrupt) {
			return l.dropToSnapshot(err)
		}
		return err
	}
	for _, dead := range l.segs[k+1:] {
		l.removeAfterSync(dead)
	}
	l.segs = l.segs[:k+1]
	if s.sealed {
		if err := l.unseal(s); err != nil {
			return err
		}
	}
	l.gen++
	l.structVersion++
	l.cleaner.cleanedThrough = min(l.cleaner.cleanedThrough, index)
	l.terms = cutTermsAfter(l.terms, index)
	l.refreshTail()
	l.startOffset = min(l.startOffset, l.nextOffset)
	l.lowerDurable(index)
	return nil
}

// removeAfterSync retires a segment cut off by a truncation. Its file goes
// once the next sync (which makes the cut durable) completes; if a crash
// brings it back, it no longer chains and recovery deletes it.
func (l *Log) removeAfterSync(s *segment) {
	l.bury(s.f, s.name, l.afterNextSync())
	if s.sealed {
		l.bury(nil, indexName(s.name), l.afterNextSync())
	}
}

// cutSegmentAfter truncates s so that its last entry is index (or s is
// empty, if index < s.base), and recomputes what s knows about its end.
func (l *Log) cutSegmentAfter(s *segment, index uint64) error {
	cutPos, err := l.endOfEntry(s, index)
	if err != nil {
		return err
	}
	cut := newSegment(s.name, s.base, s.fileGen, s.f, s.firstPrevLink, s.baseOffset)
	cut.sealed, cut.openedMono, cut.maxGen = s.sealed, s.openedMono, s.maxGen
	// Re-note the entries from the last sparse point at or before index, so
	// the timestamps, links and index points come out exactly as appended.
	k := 0
	for k < len(s.sparse) && s.sparse[k].index <= index {
		k++
	}
	pos := int64(0)
	if k > 0 {
		p := s.sparse[k-1]
		cut.sparse = append(cut.sparse, s.sparse[:k-1]...)
		cut.maxTimestamp = p.maxTsBefore
		cut.baseOffset, cut.firstPrevLink = s.baseOffset, s.firstPrevLink
		cut.last = p.index - 1
		cut.bytesSinceIndex = l.opts.SegmentBytes // force a point at p
		pos = p.pos
	}
	sc := l.scanner(s, pos, 0)
	for sc.pos < cutPos {
		at := sc.pos
		h, raw, err := sc.next(false)
		if err != nil {
			return corruptAt(s, at, err)
		}
		cut.noteAppended(h, entryLink(raw), at, int64(l.opts.IndexIntervalBytes))
	}
	// The file is cut only once the scan above succeeded: a failed cut
	// leaves the segment as it was.
	if err := s.f.Truncate(cutPos); err != nil {
		return l.fail(fmt.Errorf("truncate %s: %w", s.name, err))
	}
	l.markDirty(s.f)
	cut.size = cutPos
	*s = *cut
	return nil
}

// dropToSnapshot is TruncateAfter(snapshot index) when the cut cannot be
// found because an entry header at or below the snapshot index is damaged
// (why): the scan to the cut crosses it. Raft reads nothing at or below
// the snapshot, so the log is emptied to the snapshot point, as if the
// snapshot had been installed: the entries below it go from this replica
// with the damaged one (for a partition, its Kafka start offset moves to
// the snapshot's next offset, as on a follower that received a snapshot).
// Before this, a repair that had to discard every entry after the
// snapshot failed for good (sim seed 963806 with --all-faults: a flipped
// bit in the header of the controller's entry 2, below its snapshot at 3,
// made every read of entry 4 fail and every repair fail to cut).
func (l *Log) dropToSnapshot(why error) error {
	if l.snap.Index == 0 {
		return why // no snapshot: the damage is in an entry Raft reads
	}
	return l.replaceBySnapshot(l.snap)
}

// endOfEntry is the position in s just past entry index: where the entries
// after it begin (0 if index < s.base). It reads the headers up to index's
// only, never the header of the entry after it, which is often the one a
// repair cuts because it is damaged (sim seed 962084 with --all-faults: a
// flipped bit in the header of the controller's entry 16 made every repair
// fail to cut at 15, so the broker's metadata never got past entry 15).
func (l *Log) endOfEntry(s *segment, index uint64) (int64, error) {
	if index < s.base {
		return 0, nil
	}
	_, pos, h, err := l.findEntry(index)
	if err != nil {
		return 0, err
	}
	return pos + h.size(), nil
}
