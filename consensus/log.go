package consensus

import (
	"errors"
	"math"
	"slices"

	"github.com/floe-broker/floe/internal/assert"
)

// noLimit means "no byte limit" wherever a maxBytes is taken.
const noLimit = math.MaxUint64

// raftLog is a node's view of its Raft log: the persisted part in storage
// followed by the part not yet persisted (unstable).
//
// Invariant: applied <= committed <= lastIndex().
// Invariant: firstIndex()-1 <= applied, except while an unstable snapshot
// is pending (then nothing is handed out for applying until it is).
//
// Where etcd panics on a call that would break these, this log refuses or
// clamps (the safe answer in production) and fails an assertion
// (internal/assert), which stops a test or a simulator seed.
type raftLog struct {
	storage  Storage
	unstable unstable
	// committed is the highest index known to be committed by a quorum.
	committed uint64
	// applied is the highest index the application has applied (it was
	// handed out in a Ready that has been advanced).
	applied uint64
	// applying is the highest index handed out for applying in a Ready
	// not yet advanced (0 if none): the next Ready's committed entries
	// start after it (pipelined Readys, rawnode.go).
	applying uint64
	// maxApplyBytes bounds the committed entries handed out at once.
	maxApplyBytes uint64
}

func newRaftLog(storage Storage) (*raftLog, error) {
	first, err := storage.FirstIndex()
	if err != nil {
		return nil, err
	}
	last, err := storage.LastIndex()
	if err != nil {
		return nil, err
	}
	l := &raftLog{storage: storage, maxApplyBytes: noLimit}
	l.unstable.offset = last + 1
	l.unstable.inProgress = last + 1
	l.committed = first - 1
	l.applied = first - 1
	return l, nil
}

// firstIndex is the first index that can be read (snapshot index + 1).
func (l *raftLog) firstIndex() uint64 {
	if i, ok := l.unstable.maybeFirstIndex(); ok {
		return i
	}
	i, err := l.storage.FirstIndex()
	if err != nil {
		// Storage promises not to fail here once opened; if it does, the
		// safest answer is "nothing readable below the unstable part".
		return l.unstable.offset
	}
	return i
}

// lastIndex is the index of the last entry (the snapshot index if empty).
func (l *raftLog) lastIndex() uint64 {
	if i, ok := l.unstable.maybeLastIndex(); ok {
		return i
	}
	i, err := l.storage.LastIndex()
	if err != nil {
		return l.unstable.offset - 1
	}
	return i
}

// persistedIndex is the last index known durable: everything before the
// unstable part has been persisted and acknowledged with Advance.
func (l *raftLog) persistedIndex() uint64 { return l.unstable.offset - 1 }

// term returns the term of entry i, ErrCompacted below the snapshot and
// ErrUnavailable past the end.
func (l *raftLog) term(i uint64) (uint64, error) {
	if t, ok := l.unstable.maybeTerm(i); ok {
		return t, nil
	}
	if i+1 < l.firstIndex() {
		return 0, ErrCompacted
	}
	if i > l.lastIndex() {
		return 0, ErrUnavailable
	}
	if i == 0 {
		return 0, nil
	}
	return l.storage.Term(i)
}

// termOrZero is term(i) with any error read as term 0, for comparisons.
func (l *raftLog) termOrZero(i uint64) uint64 {
	t, err := l.term(i)
	if err != nil {
		return 0
	}
	return t
}

func (l *raftLog) lastTerm() uint64 { return l.termOrZero(l.lastIndex()) }

// matchTerm says whether entry i exists with term t.
func (l *raftLog) matchTerm(i, t uint64) bool {
	got, err := l.term(i)
	return err == nil && got == t
}

// isUpToDate is Raft's election restriction (§5.4.1): a candidate whose
// last entry is (lastIndex, lastTerm) is at least as up to date as us.
func (l *raftLog) isUpToDate(lastIndex, lastTerm uint64) bool {
	ourTerm := l.lastTerm()
	return lastTerm > ourTerm || (lastTerm == ourTerm && lastIndex >= l.lastIndex())
}

// findConflict returns the index of the first entry in ents that is missing
// from the log or has a different term there, or 0 if all are present.
func (l *raftLog) findConflict(ents []Entry) uint64 {
	for _, e := range ents {
		if !l.matchTerm(e.Index, e.Term) {
			return e.Index
		}
	}
	return 0
}

// findConflictByTerm walks back from index to the last entry whose term is
// at most term, returning that index and its term. A leader uses it to skip
// a whole term of mismatching entries per round trip (fast backtracking).
func (l *raftLog) findConflictByTerm(index, term uint64) (uint64, uint64) {
	for {
		t, err := l.term(index)
		if err != nil {
			return index, 0
		}
		if t <= term {
			return index, t
		}
		index--
	}
}

// maybeAppend is a follower's handling of an append: if the log has an
// entry at index with logTerm, it adds ents (replacing a conflicting
// suffix) and advances the commit index. It returns the index of the last
// entry the leader vouched for.
func (l *raftLog) maybeAppend(index, logTerm, commit uint64, ents []Entry) (uint64, bool) {
	if !l.matchTerm(index, logTerm) {
		return 0, false
	}
	lastNew := index + uint64(len(ents))
	if ci := l.findConflict(ents); ci != 0 {
		if ci <= l.committed {
			// A leader may never ask us to overwrite a committed entry;
			// refuse rather than lose it.
			return 0, false
		}
		l.append(ents[ci-index-1:]...)
	}
	l.commitTo(min(commit, lastNew))
	return lastNew, true
}

// append adds dense entries that start at or below lastIndex()+1,
// truncating what follows. It refuses to truncate committed entries.
func (l *raftLog) append(ents ...Entry) bool {
	if len(ents) == 0 {
		return true
	}
	if ents[0].Index <= l.committed || ents[0].Index > l.lastIndex()+1 {
		assert.Failf("raft log: append at %d: committed %d, last %d", ents[0].Index, l.committed, l.lastIndex())
		return false
	}
	l.unstable.truncateAndAppend(ents)
	return true
}

// commitTo raises the commit index. i must not pass the last entry we
// hold (a caller that may learn a larger commit index, a heartbeat's,
// bounds it first).
func (l *raftLog) commitTo(i uint64) {
	if last := l.lastIndex(); i > last {
		assert.Failf("raft log: commit to %d past the last index %d", i, last)
		i = last
	}
	if i > l.committed {
		l.committed = i
	}
}

func (l *raftLog) appliedTo(i uint64) {
	if i > l.committed {
		assert.Failf("raft log: applied to %d past the commit index %d", i, l.committed)
		return
	}
	if i > l.applied {
		l.applied = i
	}
}

func (l *raftLog) stableTo(i, t uint64) { l.unstable.stableTo(i, t) }

// stableSnapTo marks the pending snapshot at i persisted, which also
// applies it.
func (l *raftLog) stableSnapTo(i uint64) {
	if l.unstable.stableSnapTo(i) {
		l.applied = max(l.applied, i)
	}
}

// restore replaces the log with snapshot s; s is committed by definition.
func (l *raftLog) restore(s Snapshot) {
	l.committed = s.Meta.Index
	l.unstable.restore(s)
}

// unstableEntries are the entries the caller must persist next.
// Those already handed out in a Ready not yet advanced are not repeated.
func (l *raftLog) unstableEntries() []Entry { return l.unstable.pendingEntries() }

// hasNextCommittedEnts says whether committed entries await applying (and
// were not handed out already).
func (l *raftLog) hasNextCommittedEnts() bool {
	return l.unstable.snapshot == nil && l.committed > max(l.applied, l.applying)
}

// nextCommittedEnts returns the committed entries not yet applied. Nothing
// is returned while a snapshot is pending: it must be installed first.
func (l *raftLog) nextCommittedEnts() []Entry {
	if !l.hasNextCommittedEnts() {
		return nil
	}
	ents, err := l.slice(max(l.applied, l.applying)+1, l.committed+1, l.maxApplyBytes)
	if err != nil {
		return nil // storage trouble; the next Ready tries again
	}
	return ents
}

// entries returns entries from lo to the end, at most maxBytes of data.
func (l *raftLog) entries(lo, maxBytes uint64) ([]Entry, error) {
	if lo > l.lastIndex() {
		return nil, nil
	}
	return l.slice(lo, l.lastIndex()+1, maxBytes)
}

// snapshot is the snapshot the log starts from.
func (l *raftLog) snapshot() (Snapshot, error) {
	if l.unstable.snapshot != nil {
		return *l.unstable.snapshot, nil
	}
	return l.storage.Snapshot()
}

// slice returns entries in [lo, hi), at most maxBytes of data but at least
// one entry when the range is not empty.
// hasType says whether an entry in [lo, hi) has type t. It reads only the
// types of the stored entries when the storage is a TypeScanner.
func (l *raftLog) hasType(lo, hi uint64, t EntryType) (bool, error) {
	ts, ok := l.storage.(TypeScanner)
	if !ok || lo >= l.unstable.offset || lo < l.firstIndex() || lo > hi || hi > l.lastIndex()+1 {
		ents, err := l.slice(lo, hi, noLimit)
		return slices.ContainsFunc(ents, func(e Entry) bool { return e.Type == t }), err
	}
	types, err := ts.EntryTypes(lo, min(hi, l.unstable.offset))
	if err != nil {
		return false, err
	}
	if uint64(len(types)) != min(hi, l.unstable.offset)-lo {
		return false, ErrUnavailable
	}
	if slices.Contains(types, t) {
		return true, nil
	}
	if hi <= l.unstable.offset {
		return false, nil
	}
	fresh := l.unstable.slice(l.unstable.offset, hi)
	return slices.ContainsFunc(fresh, func(e Entry) bool { return e.Type == t }), nil
}

func (l *raftLog) slice(lo, hi, maxBytes uint64) ([]Entry, error) {
	if lo < l.firstIndex() {
		return nil, ErrCompacted
	}
	if lo > hi || hi > l.lastIndex()+1 {
		return nil, ErrUnavailable
	}
	if lo == hi {
		return nil, nil
	}
	var ents []Entry
	if lo < l.unstable.offset {
		stored, err := l.storage.Entries(lo, min(hi, l.unstable.offset), maxBytes)
		if err != nil {
			if errors.Is(err, ErrCompacted) {
				return nil, ErrCompacted
			}
			return nil, err
		}
		if len(stored) == 0 {
			return nil, ErrUnavailable
		}
		// Storage may have returned fewer because of maxBytes.
		if uint64(len(stored)) < min(hi, l.unstable.offset)-lo {
			return limitSize(stored, maxBytes), nil
		}
		ents = stored
	}
	if hi > l.unstable.offset {
		from := max(lo, l.unstable.offset)
		fresh := l.unstable.slice(from, hi)
		if len(ents) == 0 {
			ents = fresh
		} else {
			joined := make([]Entry, 0, len(ents)+len(fresh))
			joined = append(joined, ents...)
			ents = append(joined, fresh...)
		}
	}
	return limitSize(ents, maxBytes), nil
}

// limitSize keeps the longest prefix of ents whose data fits maxBytes, and
// always the first entry. maxBytes 0 means exactly one entry.
func limitSize(ents []Entry, maxBytes uint64) []Entry {
	if len(ents) == 0 {
		return ents
	}
	if maxBytes == 0 {
		return ents[:1:1]
	}
	size := uint64(len(ents[0].Data))
	n := 1
	for ; n < len(ents); n++ {
		size += uint64(len(ents[n].Data))
		if size > maxBytes {
			break
		}
	}
	return ents[:n:n]
}

// payloadBytes is the data size of ents, what flow control counts.
func payloadBytes(ents []Entry) uint64 {
	var n uint64
	for i := range ents {
		n += uint64(len(ents[i].Data))
	}
	return n
}
