package logstore

import (
	"fmt"
	"time"
)

// Snapshots, prefix removal and retention.
//
// The Raft side never reads at or below the snapshot index, but the
// physical log keeps those entries (Kafka consumers still read them) until
// whole segments are removed by CompactTo or ApplyRetention. A segment may
// be removed only when every entry in it is covered by the snapshot point,
// and its file is deleted only after a meta record saying so is durable:
// otherwise a crash could leave an old meta record pointing at entries that
// are gone.

// SetSnapshot records a snapshot point without discarding entries (then
// CompactTo or retention may remove whole segments up to it). m.Index must
// be between the current snapshot index and DurableIndex (a snapshot never
// covers entries this replica has not made durable), and m.Term and
// m.NextOffset must match the log at m.Index. It is durable with the next
// sync.
func (l *Log) SetSnapshot(m SnapshotMeta) error {
	if err := l.writable(); err != nil {
		return err
	}
	switch {
	case m.Index < l.snap.Index:
		return fmt.Errorf("%w: snapshot at %d is older than %d", ErrInvalid, m.Index, l.snap.Index)
	case m.Index > l.sy.durableIndex:
		return fmt.Errorf("%w: snapshot at %d past durable index %d", ErrInvalid, m.Index, l.sy.durableIndex)
	}
	term, err := l.Term(m.Index)
	if err != nil {
		return err
	}
	if term != m.Term {
		return fmt.Errorf("%w: snapshot term %d, entry %d has term %d", ErrInvalid, m.Term, m.Index, term)
	}
	if off := l.OffsetAfterIndex(m.Index); off != m.NextOffset {
		return fmt.Errorf("%w: snapshot next offset %d, log has %d after %d", ErrInvalid, m.NextOffset, off, m.Index)
	}
	m.Data = append([]byte(nil), m.Data...)
	l.snap = m
	l.sy.metaVersion++
	return nil
}

// InstallSnapshot replaces the whole log by snapshot point m (a follower
// receiving a snapshot, or a node restoring one): the log becomes empty
// after m.Index, its next offset m.NextOffset. m.Index must be past the
// current snapshot index. It is durable with the next sync; the old
// segment files are deleted once it is. Until then DurableIndex does not
// count past the previous durable snapshot.
func (l *Log) InstallSnapshot(m SnapshotMeta) error {
	if err := l.writable(); err != nil {
		return err
	}
	if m.Index <= l.snap.Index || m.NextOffset < 0 {
		return fmt.Errorf("%w: install snapshot at %d (offset %d) over snapshot at %d", ErrInvalid, m.Index, m.NextOffset, l.snap.Index)
	}
	return l.replaceBySnapshot(m)
}

// replaceBySnapshot makes the log empty after snapshot point m, dropping
// every segment (InstallSnapshot; TruncateAfter at the snapshot index when
// damage below it hides where to cut).
func (l *Log) replaceBySnapshot(m SnapshotMeta) error {
	if err := l.flush(); err != nil {
		return err
	}
	l.gen++
	l.sy.metaVersion++
	for _, s := range l.segs {
		l.bury(s.f, s.name, l.afterNextSync())
		if s.sealed {
			l.bury(nil, indexName(s.name), l.afterNextSync())
		}
	}
	m.Data = append([]byte(nil), m.Data...)
	l.snap = m
	l.segs, l.terms = nil, nil
	l.logStart = chainPoint{index: m.Index + 1, prevLink: anchor(m.Index, m.Term, m.NextOffset, l.gen), offset: m.NextOffset}
	l.startOffset = m.NextOffset
	l.structVersion++
	l.cleaner.cleanedThrough = 0
	l.lowerDurable(min(l.sy.durableIndex, l.sy.durableSnapIndex))
	if err := l.startSegment(l.logStart.index, l.logStart.prevLink, l.logStart.offset); err != nil {
		return err
	}
	l.refreshTail()
	return nil
}

// CompactTo removes whole segments whose entries are all <= index, oldest
// first, never the active one. index must be <= the snapshot index. The
// Kafka start offset moves past what was removed.
func (l *Log) CompactTo(index uint64) (segmentsRemoved int, err error) {
	if err := l.writable(); err != nil {
		return 0, err
	}
	if index > l.snap.Index {
		return 0, fmt.Errorf("%w: compact to %d past snapshot %d", ErrInvalid, index, l.snap.Index)
	}
	n := 0
	for n < len(l.segs)-1 && l.segs[n].sealed && l.segs[n].last <= index {
		n++
	}
	l.dropPrefix(n)
	return n, nil
}

// ApplyRetention deletes the oldest sealed segments past retentionMs (by
// their largest batch timestamp against now; < 0: no limit) or while the
// log stays at or above retentionBytes without them (< 0: no limit), or
// that lie wholly below the start offset (retainable says exactly which).
// It never deletes the active segment, a segment holding an index >= limitIndex
// (the node passes its applied or commit bound), or entries the snapshot
// point does not cover: take snapshots (SetSnapshot) for retention to act.
func (l *Log) ApplyRetention(now time.Time, retentionMs, retentionBytes int64, limitIndex uint64) (removed int, err error) {
	if err := l.writable(); err != nil {
		return 0, err
	}
	n := l.retainable(now.UnixMilli(), retentionMs, retentionBytes, limitIndex, l.snap.Index)
	l.dropPrefix(n)
	return n, nil
}

// dropPrefix removes the first n segments: the log now starts at the next
// one, and their files go once the meta record saying so is durable.
func (l *Log) dropPrefix(n int) {
	if n == 0 {
		return
	}
	l.sy.metaVersion++
	for _, s := range l.segs[:n] {
		l.bury(s.f, s.name, l.afterNextSync())
		if s.sealed {
			l.bury(nil, indexName(s.name), l.afterNextSync())
		}
	}
	l.segs = l.segs[n:]
	first := l.segs[0]
	l.logStart = chainPoint{index: first.base, prevLink: first.firstPrevLink, offset: first.baseOffset}
	l.terms = termsIn(l.terms, first.base, l.lastIndex)
	l.startOffset = max(l.startOffset, first.baseOffset)
	l.structVersion++
	l.stats.SegmentsRemoved += int64(n)
}
