package replica

import (
	"errors"
	"fmt"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/logstore"
)

// EntryBatch is the Raft entry type of a Kafka record batch. Every other
// application entry type is opaque to the log.
const EntryBatch = consensus.EntryAppFirst

// Raft entry types and log kinds correspond one to one; only two values
// swap: a Kafka batch is KindBatch in the log, and a configuration change
// takes the log kind the batch type would have had.
func kindOf(t consensus.EntryType) uint8 {
	switch t {
	case EntryBatch:
		return logstore.KindBatch
	case consensus.EntryType(logstore.KindBatch):
		return uint8(EntryBatch)
	}
	return uint8(t)
}

func typeOf(kind uint8) consensus.EntryType {
	switch kind {
	case logstore.KindBatch:
		return EntryBatch
	case uint8(EntryBatch):
		return consensus.EntryType(logstore.KindBatch)
	}
	return consensus.EntryType(kind)
}

// ToLog converts a Raft entry to a log entry (sharing Data).
func ToLog(e consensus.Entry) logstore.Entry {
	return logstore.Entry{Index: e.Index, Term: e.Term, Kind: kindOf(e.Type), Data: e.Data}
}

// FromLog converts a log entry to a Raft entry (sharing Data).
func FromLog(e logstore.Entry) consensus.Entry {
	return consensus.Entry{Index: e.Index, Term: e.Term, Type: typeOf(e.Kind), Data: e.Data}
}

// Snapshotter is what the storage needs from the state machine that owns
// the group: the membership and opaque state recorded at the log's snapshot
// point (logstore.SnapshotMeta.Data holds them, encoded by EncodeSnapshotData).
type Storage struct {
	log   *logstore.Log
	cache entryCache
	// damaged is set when a read met a checksum failure: the node repairs
	// the replica (node/repair.go).
	damaged bool
	// confOverride, when set, is the membership InitialState reports
	// instead of the snapshot's: a later one from the replica's
	// membership checkpoint.
	confOverride *consensus.ConfState
}

// NewStorage adapts log to consensus.Storage.
func NewStorage(log *logstore.Log) *Storage {
	return &Storage{log: log, cache: entryCache{bytesMax: entryCacheBytes}}
}

// InitialState implements consensus.Storage.
func (s *Storage) InitialState() (consensus.HardState, consensus.ConfState, error) {
	hs := s.log.HardState()
	sd, err := DecodeSnapshotData(s.log.Snapshot().Data)
	if err != nil {
		return consensus.HardState{}, consensus.ConfState{}, err
	}
	conf := sd.Conf
	if s.confOverride != nil {
		conf = *s.confOverride
	}
	return consensus.HardState{Term: hs.Term, Vote: hs.Vote, Commit: hs.Commit}, conf, nil
}

// Entries implements consensus.Storage.
func (s *Storage) Entries(lo, hi, maxBytes uint64) ([]consensus.Entry, error) {
	if lo <= s.log.Snapshot().Index {
		return nil, consensus.ErrCompacted
	}
	if hi > s.log.LastIndex()+1 {
		return nil, consensus.ErrUnavailable
	}
	if ents, ok := s.cache.get(lo, hi, maxBytes); ok {
		return ents, nil
	}
	if maxBytes > uint64(maxInt) {
		maxBytes = uint64(maxInt)
	}
	var out []consensus.Entry
	err := s.log.EntriesFunc(lo, hi, int(maxBytes), func(les []logstore.Entry) {
		out = make([]consensus.Entry, len(les))
		for i, e := range les {
			out[i] = FromLog(e)
		}
	})
	if err != nil {
		if errors.Is(err, logstore.ErrCorrupt) {
			s.damaged = true
		}
		return nil, mapErr(err)
	}
	return out, nil
}

// EntryTypes implements consensus.TypeScanner: the types of [lo, hi) from
// the entries' headers alone (logstore.Log.Kinds), without their data.
func (s *Storage) EntryTypes(lo, hi uint64) ([]consensus.EntryType, error) {
	if lo <= s.log.Snapshot().Index {
		return nil, consensus.ErrCompacted
	}
	if hi > s.log.LastIndex()+1 {
		return nil, consensus.ErrUnavailable
	}
	kinds, err := s.log.Kinds(lo, hi)
	if err != nil {
		if errors.Is(err, logstore.ErrCorrupt) {
			s.damaged = true
		}
		return nil, mapErr(err)
	}
	out := make([]consensus.EntryType, len(kinds))
	for i, k := range kinds {
		out[i] = typeOf(k)
	}
	return out, nil
}

const maxInt = int(^uint(0) >> 1)

// Term implements consensus.Storage.
func (s *Storage) Term(i uint64) (uint64, error) {
	t, err := s.log.Term(i)
	return t, mapErr(err)
}

// FirstIndex implements consensus.Storage.
func (s *Storage) FirstIndex() (uint64, error) { return s.log.FirstIndex(), nil }

// LastIndex implements consensus.Storage.
func (s *Storage) LastIndex() (uint64, error) { return s.log.LastIndex(), nil }

// Snapshot implements consensus.Storage: the log's snapshot point, whose
// Data carries the membership and the state machine's checkpoint there.
func (s *Storage) Snapshot() (consensus.Snapshot, error) {
	m := s.log.Snapshot()
	sd, err := DecodeSnapshotData(m.Data)
	if err != nil {
		return consensus.Snapshot{}, err
	}
	return consensus.Snapshot{
		Meta: consensus.SnapshotMeta{Index: m.Index, Term: m.Term, ConfState: sd.Conf},
		Data: m.Data,
	}, nil
}

func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, logstore.ErrCompacted):
		return consensus.ErrCompacted
	case errors.Is(err, logstore.ErrUnavailable):
		return consensus.ErrUnavailable
	}
	return fmt.Errorf("replica storage: %w", err)
}
