package consensus

// unstable holds what the RawNode has accepted but the caller has not yet
// persisted: at most one incoming snapshot, and a run of entries after it.
// Some of it may be in progress: handed out in a Ready whose write is not
// yet acknowledged by Advance (rawnode.go, pipelined Readys). Those are not
// handed out again unless a conflicting append replaces them.
//
// Invariant: entries[i].Index == offset+i.
// Invariant: if snapshot != nil, offset == snapshot.Meta.Index+1 or later.
// Invariant: offset <= inProgress <= offset+len(entries).
// Invariant: snapshotInProgress implies snapshot != nil.
//
// Slices handed out in a Ready are never written again: every change that
// would overwrite an element builds a new backing array.
type unstable struct {
	snapshot *Snapshot
	entries  []Entry
	offset   uint64
	// inProgress is the first index not yet handed out in a Ready.
	inProgress uint64
	// snapshotInProgress: the snapshot was handed out in a Ready.
	snapshotInProgress bool
}

// pendingEntries are the entries not yet handed out in a Ready.
func (u *unstable) pendingEntries() []Entry {
	if n := len(u.entries); n == 0 || u.inProgress >= u.offset+uint64(n) {
		return nil
	}
	return u.entries[u.inProgress-u.offset : len(u.entries) : len(u.entries)]
}

// pendingSnapshot is the snapshot if it was not yet handed out.
func (u *unstable) pendingSnapshot() *Snapshot {
	if u.snapshotInProgress {
		return nil
	}
	return u.snapshot
}

// accept marks everything unstable as handed out (a Ready took it).
func (u *unstable) accept() {
	u.inProgress = u.offset + uint64(len(u.entries))
	u.snapshotInProgress = u.snapshot != nil
}

// maybeFirstIndex is the first log index if an unstable snapshot decides it.
func (u *unstable) maybeFirstIndex() (uint64, bool) {
	if u.snapshot != nil {
		return u.snapshot.Meta.Index + 1, true
	}
	return 0, false
}

// maybeLastIndex is the last log index if unstable state decides it.
func (u *unstable) maybeLastIndex() (uint64, bool) {
	if n := len(u.entries); n != 0 {
		return u.offset + uint64(n) - 1, true
	}
	if u.snapshot != nil {
		return u.snapshot.Meta.Index, true
	}
	return 0, false
}

// maybeTerm is the term of entry i if unstable state knows it.
func (u *unstable) maybeTerm(i uint64) (uint64, bool) {
	if i < u.offset {
		if u.snapshot != nil && u.snapshot.Meta.Index == i {
			return u.snapshot.Meta.Term, true
		}
		return 0, false
	}
	last, ok := u.maybeLastIndex()
	if !ok || i > last {
		return 0, false
	}
	return u.entries[i-u.offset].Term, true
}

// stableTo marks entries up to i as persisted, provided entry i still has
// term t (a conflicting append may have replaced it since the Ready was
// handed out; then those entries go out again in the next Ready).
func (u *unstable) stableTo(i, t uint64) {
	if i < u.offset || i >= u.offset+uint64(len(u.entries)) {
		return
	}
	if u.entries[i-u.offset].Term != t {
		return
	}
	u.entries = u.entries[i+1-u.offset:]
	u.offset = i + 1
	u.inProgress = max(u.inProgress, u.offset)
	if len(u.entries) == 0 {
		u.entries = nil // let the persisted array be collected
	}
}

// stableSnapTo marks the snapshot at index i as persisted; it reports
// whether that was the pending snapshot.
func (u *unstable) stableSnapTo(i uint64) bool {
	if u.snapshot != nil && u.snapshot.Meta.Index == i {
		u.snapshot = nil
		u.snapshotInProgress = false
		return true
	}
	return false
}

// restore replaces everything with snapshot s.
func (u *unstable) restore(s Snapshot) {
	u.offset = s.Meta.Index + 1
	u.inProgress = u.offset
	u.entries = nil
	u.snapshot = &s
	u.snapshotInProgress = false
}

// truncateAndAppend appends ents, first dropping any entries at or after
// ents[0].Index. Precondition: ents is non-empty and dense.
func (u *unstable) truncateAndAppend(ents []Entry) {
	from := ents[0].Index
	end := u.offset + uint64(len(u.entries))
	switch {
	case from == end:
		// The common case: the entries follow on. Appending never writes
		// an element already handed out (those are all below len).
		u.entries = append(u.entries, ents...)
	case from <= u.offset:
		// Everything unstable is replaced.
		u.offset = from
		u.entries = append([]Entry(nil), ents...)
		u.inProgress = from
	default:
		// Keep a prefix; copy it so a Ready holding the old slice is safe.
		keep := make([]Entry, 0, int(from-u.offset)+len(ents))
		keep = append(keep, u.entries[:from-u.offset]...)
		u.entries = append(keep, ents...)
		// Entries handed out from from on are replaced: they go out again
		// (the caller's write of them truncates what the earlier Ready
		// wrote).
		u.inProgress = min(u.inProgress, from)
	}
}

// slice returns the unstable entries in [lo, hi). The caller checks bounds.
func (u *unstable) slice(lo, hi uint64) []Entry {
	return u.entries[lo-u.offset : hi-u.offset : hi-u.offset]
}
