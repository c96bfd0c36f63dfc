package consensus

import (
	"errors"
	"sync"
)

// ErrSnapOutOfDate: a snapshot older than the one already held.
var ErrSnapOutOfDate = errors.New("consensus: snapshot is older than the storage's")

// MemoryStorage is an in-memory Storage, for tests and simulations. The
// application writes to it what each Ready asks to persist, before calling
// Advance. Safe for concurrent use.
type MemoryStorage struct {
	mu        sync.Mutex
	hardState HardState
	confState ConfState
	snapshot  Snapshot
	// ents[0] is a dummy holding the snapshot's index and term, so that
	// ents[i] has index ents[0].Index+i. Invariant: len(ents) >= 1.
	ents []Entry
}

// NewMemoryStorage returns an empty storage: no entries, no snapshot, an
// empty membership (set one with SetConfState to bootstrap a group).
func NewMemoryStorage() *MemoryStorage {
	return &MemoryStorage{ents: make([]Entry, 1)}
}

// InitialState implements Storage.
func (ms *MemoryStorage) InitialState() (HardState, ConfState, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.hardState, cloneConfState(ms.confState), nil
}

// SetHardState saves the hard state.
func (ms *MemoryStorage) SetHardState(hs HardState) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.hardState = hs
}

// SetConfState records the current membership (for bootstrap, or after
// applying a configuration change) reported by InitialState.
func (ms *MemoryStorage) SetConfState(cs ConfState) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.confState = cloneConfState(cs)
}

func cloneConfState(cs ConfState) ConfState {
	return ConfState{Voters: append([]uint64(nil), cs.Voters...), Learners: append([]uint64(nil), cs.Learners...)}
}

func (ms *MemoryStorage) firstIndex() uint64 { return ms.ents[0].Index + 1 }

func (ms *MemoryStorage) lastIndex() uint64 { return ms.ents[0].Index + uint64(len(ms.ents)) - 1 }

// Entries implements Storage.
func (ms *MemoryStorage) Entries(lo, hi, maxBytes uint64) ([]Entry, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	offset := ms.ents[0].Index
	if lo <= offset {
		return nil, ErrCompacted
	}
	if hi > ms.lastIndex()+1 || lo > hi {
		return nil, ErrUnavailable
	}
	ents := ms.ents[lo-offset : hi-offset : hi-offset]
	if len(ents) == 0 || maxBytes == noLimit {
		return ents, nil
	}
	size := uint64(len(ents[0].Data))
	n := 1
	for ; n < len(ents); n++ {
		size += uint64(len(ents[n].Data))
		if size > maxBytes {
			break
		}
	}
	return ents[:n:n], nil
}

// Term implements Storage.
func (ms *MemoryStorage) Term(i uint64) (uint64, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	offset := ms.ents[0].Index
	if i < offset {
		return 0, ErrCompacted
	}
	if i > ms.lastIndex() {
		return 0, ErrUnavailable
	}
	return ms.ents[i-offset].Term, nil
}

// FirstIndex implements Storage.
func (ms *MemoryStorage) FirstIndex() (uint64, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.firstIndex(), nil
}

// LastIndex implements Storage.
func (ms *MemoryStorage) LastIndex() (uint64, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.lastIndex(), nil
}

// Snapshot implements Storage.
func (ms *MemoryStorage) Snapshot() (Snapshot, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.snapshot, nil
}

// ApplySnapshot replaces the contents with snap (a Ready's Snapshot): the
// log becomes empty after snap's index, and the membership snap's.
func (ms *MemoryStorage) ApplySnapshot(snap Snapshot) error {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if snap.Meta.Index <= ms.snapshot.Meta.Index && !ms.snapshot.IsEmpty() {
		return ErrSnapOutOfDate
	}
	ms.snapshot = snap
	ms.confState = cloneConfState(snap.Meta.ConfState)
	ms.ents = []Entry{{Term: snap.Meta.Term, Index: snap.Meta.Index}}
	return nil
}

// CreateSnapshot records a snapshot of the application's state at applied
// index i (with membership cs, if not nil) without dropping entries; call
// Compact afterwards to drop them.
func (ms *MemoryStorage) CreateSnapshot(i uint64, cs *ConfState, data []byte) (Snapshot, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if i <= ms.snapshot.Meta.Index {
		return Snapshot{}, ErrSnapOutOfDate
	}
	offset := ms.ents[0].Index
	if i < offset || i > ms.lastIndex() {
		return Snapshot{}, ErrUnavailable
	}
	ms.snapshot.Meta.Index = i
	ms.snapshot.Meta.Term = ms.ents[i-offset].Term
	if cs != nil {
		ms.snapshot.Meta.ConfState = cloneConfState(*cs)
	}
	ms.snapshot.Data = data
	return ms.snapshot, nil
}

// Compact drops the entries before compactIndex; compactIndex itself stays
// as the dummy that holds the term. The application must not compact past
// its applied index, nor past its latest snapshot if a lagging follower
// may still need entries.
func (ms *MemoryStorage) Compact(compactIndex uint64) error {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	offset := ms.ents[0].Index
	if compactIndex <= offset {
		return ErrCompacted
	}
	if compactIndex > ms.lastIndex() {
		return ErrUnavailable
	}
	i := compactIndex - offset
	ents := make([]Entry, 1, uint64(len(ms.ents))-i)
	ents[0] = Entry{Index: ms.ents[i].Index, Term: ms.ents[i].Term}
	ms.ents = append(ents, ms.ents[i+1:]...)
	return nil
}

// Append adds dense entries (a Ready's Entries); entries at or below the
// last index replace that suffix. Entries already compacted are skipped. A
// gap after the last index is an error, and nothing is written.
func (ms *MemoryStorage) Append(entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	for i := 1; i < len(entries); i++ {
		if entries[i].Index != entries[i-1].Index+1 {
			return ErrUnavailable
		}
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	first := ms.firstIndex()
	last := entries[len(entries)-1].Index
	if last < first {
		return nil // all compacted away already
	}
	if entries[0].Index < first {
		entries = entries[first-entries[0].Index:]
	}
	offset := entries[0].Index - ms.ents[0].Index
	switch {
	case uint64(len(ms.ents)) > offset:
		// Replace the suffix; copy so slices handed out stay intact.
		kept := make([]Entry, offset, offset+uint64(len(entries)))
		copy(kept, ms.ents[:offset])
		ms.ents = append(kept, entries...)
	case uint64(len(ms.ents)) == offset:
		ms.ents = append(ms.ents, entries...)
	default:
		return ErrUnavailable
	}
	return nil
}
