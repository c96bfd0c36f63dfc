package replica

import (
	"fmt"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/wire"
)

// SnapshotData is what a group keeps at its log's snapshot point (in
// logstore.SnapshotMeta.Data) and what a leader sends in MsgSnap: the
// membership at that index and the state machine's own checkpoint.
type SnapshotData struct {
	Conf consensus.ConfState
	// NextOffset is the Kafka offset after the snapshot point (0 for groups
	// that hold no Kafka batches).
	NextOffset int64
	App        []byte
}

const snapshotDataVersion = 1

// EncodeSnapshotData encodes sd.
func EncodeSnapshotData(sd SnapshotData) []byte {
	var w wire.Writer
	w.U8(snapshotDataVersion)
	writeIDs(&w, sd.Conf.Voters)
	writeIDs(&w, sd.Conf.Learners)
	w.Varint(sd.NextOffset)
	w.Bytes(sd.App)
	return w.B
}

// DecodeSnapshotData decodes what EncodeSnapshotData wrote. Empty input is
// the empty snapshot of a group that has none yet.
func DecodeSnapshotData(b []byte) (SnapshotData, error) {
	if len(b) == 0 {
		return SnapshotData{}, nil
	}
	r := wire.Reader{B: b}
	if v := r.U8(); v != snapshotDataVersion {
		return SnapshotData{}, fmt.Errorf("replica: snapshot data version %d unknown", v)
	}
	var sd SnapshotData
	sd.Conf.Voters = readIDs(&r)
	sd.Conf.Learners = readIDs(&r)
	sd.NextOffset = r.Varint()
	sd.App = r.Bytes()
	if err := r.Done(); err != nil {
		return SnapshotData{}, fmt.Errorf("replica: snapshot data: %w", err)
	}
	return sd, nil
}

func writeIDs(w *wire.Writer, ids []uint64) {
	w.Uvarint(uint64(len(ids)))
	for _, id := range ids {
		w.Uvarint(id)
	}
}

func readIDs(r *wire.Reader) []uint64 {
	n := r.Count(1)
	var ids []uint64
	for i := 0; i < n; i++ {
		ids = append(ids, r.Uvarint())
	}
	return ids
}

// ApplyConf returns the membership after a configuration change, as Raft
// applies it (consensus.ConfState.Apply): a change Raft refuses leaves the
// membership as it is.
func ApplyConf(cs consensus.ConfState, cc consensus.ConfChange) consensus.ConfState {
	return cs.Apply(cc)
}
