package replica

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"pgregory.net/rapid"

	"github.com/floe-broker/floe/consensus"
)

func TestSnapshotDataRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sd := SnapshotData{
			Conf: consensus.ConfState{
				Voters:   rapid.SliceOfN(rapid.OneOf(rapid.Uint64Range(0, 10), rapid.Uint64()), 0, 6).Draw(t, "voters"),
				Learners: rapid.SliceOfN(rapid.OneOf(rapid.Uint64Range(0, 10), rapid.Uint64()), 0, 6).Draw(t, "learners"),
			},
			NextOffset: rapid.Int64().Draw(t, "next"),
			App:        rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "app"),
		}
		enc := EncodeSnapshotData(sd)
		got, err := DecodeSnapshotData(enc)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		// Empty lists and empty App read back as nil.
		if fmt.Sprint(got.Conf.Voters) != fmt.Sprint(sd.Conf.Voters) || fmt.Sprint(got.Conf.Learners) != fmt.Sprint(sd.Conf.Learners) ||
			got.NextOffset != sd.NextOffset || !bytes.Equal(got.App, sd.App) {
			t.Fatalf("round trip: %+v, want %+v", got, sd)
		}
		if !bytes.Equal(EncodeSnapshotData(got), enc) {
			t.Fatalf("re-encoding differs")
		}
		// Every strict non-empty prefix fails, and so do trailing bytes.
		cut := rapid.IntRange(1, len(enc)-1).Draw(t, "cut")
		if _, err := DecodeSnapshotData(enc[:cut]); err == nil {
			t.Fatalf("%d of %d bytes decoded", cut, len(enc))
		}
		if _, err := DecodeSnapshotData(append(bytes.Clone(enc), 0)); err == nil {
			t.Fatalf("trailing byte accepted")
		}
	})
}

func TestSnapshotDataEmpty(t *testing.T) {
	sd, err := DecodeSnapshotData(nil)
	if err != nil || sd.Conf.Voters != nil || sd.NextOffset != 0 || sd.App != nil {
		t.Fatalf("DecodeSnapshotData(nil) = %+v, %v", sd, err)
	}
	if _, err := DecodeSnapshotData([]byte{2, 0, 0, 0, 0}); err == nil {
		t.Fatalf("version 2 accepted")
	}
}

// FuzzDecodeSnapshotData: arbitrary bytes (a MsgSnap from a peer, a meta
// record) never panic, and whatever decodes re-encodes to the same value.
func FuzzDecodeSnapshotData(f *testing.F) {
	f.Add(EncodeSnapshotData(SnapshotData{Conf: consensus.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}}, NextOffset: 77, App: []byte("x")}))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{1, 1, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		sd, err := DecodeSnapshotData(b)
		if err != nil {
			return
		}
		again, err := DecodeSnapshotData(EncodeSnapshotData(sd))
		if err != nil || fmt.Sprint(again) != fmt.Sprint(sd) {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", sd, again, err)
		}
	})
}

// confModel is membership as sets, changed as consensus/confchange.go
// describes Raft changing it: add a voter (promoting a learner), add a
// learner (demoting a voter), remove either; a change with node id 0, an
// unknown type, or one leaving no voter changes nothing.
type confModel struct{ voters, learners map[uint64]bool }

func sortedKeys(m map[uint64]bool) []uint64 {
	var out []uint64
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (m confModel) state() consensus.ConfState {
	return consensus.ConfState{Voters: sortedKeys(m.voters), Learners: sortedKeys(m.learners)}
}

// apply changes the model and reports whether Raft would accept cc.
func (m *confModel) apply(cc consensus.ConfChange) bool {
	nv, nl := map[uint64]bool{}, map[uint64]bool{}
	for id := range m.voters {
		nv[id] = id != cc.NodeID
	}
	for id := range m.learners {
		nl[id] = id != cc.NodeID
	}
	switch cc.Type {
	case consensus.ConfAddVoter:
		nv[cc.NodeID] = true
	case consensus.ConfAddLearner:
		nl[cc.NodeID] = true
	case consensus.ConfRemove:
	default:
		return false
	}
	for id, in := range nv {
		if !in {
			delete(nv, id)
		}
	}
	for id, in := range nl {
		if !in {
			delete(nl, id)
		}
	}
	if cc.NodeID == 0 || len(nv) == 0 {
		return false
	}
	m.voters, m.learners = nv, nl
	return true
}

// raftApply asks a real RawNode with membership cs to apply cc.
func raftApply(t fataler, cs consensus.ConfState, cc consensus.ConfChange) consensus.ConfState {
	ms := consensus.NewMemoryStorage()
	ms.SetConfState(cs)
	rn, err := consensus.NewRawNode(consensus.Config{ID: 1, ElectionTicks: 10, HeartbeatTicks: 1, Storage: ms, Rand: rand.New(rand.NewSource(1))})
	if err != nil {
		t.Fatalf("raw node: %v", err)
	}
	return rn.ApplyConfChange(cc)
}

func genConfChange(t *rapid.T) consensus.ConfChange {
	return consensus.ConfChange{
		Type:   consensus.ConfChangeType(rapid.IntRange(1, 3).Draw(t, "type")),
		NodeID: rapid.Uint64Range(1, 6).Draw(t, "node"),
	}
}

// ApplyConf is what CheckpointAt uses to compute the membership recorded in
// a snapshot; it must agree with the sets model and with Raft itself on
// every change Raft accepts.
func TestApplyConfMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &confModel{voters: map[uint64]bool{1: true}, learners: map[uint64]bool{}}
		cs := m.state()
		for i := 0; i < rapid.IntRange(1, 30).Draw(t, "changes"); i++ {
			cc := genConfChange(t)
			before := fmt.Sprint(cs)
			if !m.apply(cc) {
				continue // see TestApplyConfRefusesWhatRaftRefuses
			}
			fromRaft := raftApply(t, cs, cc)
			next := ApplyConf(cs, cc)
			if fmt.Sprint(cs) != before {
				t.Fatalf("ApplyConf changed its input")
			}
			if fmt.Sprint(next) != fmt.Sprint(m.state()) {
				t.Fatalf("ApplyConf(%v, %+v) = %v, model %v", cs, cc, next, m.state())
			}
			if fmt.Sprint(next) != fmt.Sprint(fromRaft) {
				t.Fatalf("ApplyConf(%v, %+v) = %v, Raft %v", cs, cc, next, fromRaft)
			}
			cs = next
		}
	})
}

// ApplyConf's comment: "the membership after a configuration change, as
// Raft applies it". Raft leaves the membership unchanged for a change it
// refuses (consensus/confchange.go applyConfChange).
func TestApplyConfRefusesWhatRaftRefuses(t *testing.T) {
	cs := consensus.ConfState{Voters: []uint64{1}, Learners: []uint64{2}}
	for _, cc := range []consensus.ConfChange{
		{Type: consensus.ConfRemove, NodeID: 1},        // no voter left
		{Type: consensus.ConfAddVoter, NodeID: 0},      // node id 0
		{Type: consensus.ConfChangeType(9), NodeID: 2}, // unknown type
		{Type: consensus.ConfAddLearner, NodeID: 1},    // demotes the last voter
	} {
		want := raftApply(t, cs, cc)
		if got := ApplyConf(cs, cc); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ApplyConf(%v, %+v) = %v, Raft keeps %v", cs, cc, got, want)
		}
	}
}
