package partition

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/node/replica"
)

// fromScratch rebuilds the snapshot data at bound the slow, obvious way: a
// new partition applies every entry from index 1 up to bound.
func (r *rig) fromScratch(bound uint64) replica.SnapshotData {
	r.t.Helper()
	fresh := New(r.p.Topic, r.p.Index, r.cfg)
	var conf consensus.ConfState
	for i := uint64(1); i <= bound; i++ {
		e, ok := r.rec.applied[i]
		if !ok {
			r.t.Fatalf("entry %d was never applied", i)
		}
		if e.Type == consensus.EntryConfChange {
			cc, err := consensus.UnmarshalConfChange(e.Data)
			if err != nil {
				r.t.Fatalf("entry %d: %v", i, err)
			}
			conf = replica.ApplyConf(conf, cc)
		}
		fresh.Apply(e)
	}
	return replica.SnapshotData{Conf: conf, NextOffset: fresh.HighWatermark(), App: fresh.Checkpoint()}
}

// checkCheckpointAt compares CheckpointAt(bound) with fromScratch(bound).
func (r *rig) checkCheckpointAt(bound uint64) {
	r.t.Helper()
	meta, err := r.p.CheckpointAt(bound)
	if err != nil {
		r.t.Fatalf("CheckpointAt(%d): %v", bound, err)
	}
	want := r.fromScratch(bound)
	got, err := replica.DecodeSnapshotData(meta.Data)
	if err != nil {
		r.t.Fatalf("CheckpointAt(%d) data: %v", bound, err)
	}
	if meta.Index != bound || meta.Term != r.rec.applied[bound].Term || meta.NextOffset != want.NextOffset {
		r.t.Fatalf("CheckpointAt(%d) = index %d term %d next %d; want %d %d %d", bound, meta.Index, meta.Term,
			meta.NextOffset, bound, r.rec.applied[bound].Term, want.NextOffset)
	}
	if fmt.Sprint(got.Conf) != fmt.Sprint(want.Conf) || got.NextOffset != want.NextOffset {
		r.t.Fatalf("CheckpointAt(%d): conf %v next %d; want %v %d", bound, got.Conf, got.NextOffset, want.Conf, want.NextOffset)
	}
	if !bytes.Equal(got.App, want.App) {
		g, _ := DecodeCheckpoint(got.App)
		w, _ := DecodeCheckpoint(want.App)
		r.t.Fatalf("CheckpointAt(%d) partition state differs from a replay from scratch:\nstart %d\n%s\nwant start %d\n%s",
			bound, g.StartOffset, describe(g.Producers), w.StartOffset, describe(w.Producers))
	}
}

// retentionMachine runs a partition through produces (good, retried and
// refused), DeleteRecords, commits, snapshots with compaction as
// node/maintain.go takes them, and restarts. CheckpointAt must always equal
// a replay from scratch, and a restart must come back to the same state.
//
// Batches carry timestamps that move on by steps around the (short)
// producer expiry, and the expiry itself changes through the log, so
// producers expire along the way: the replay and the restart must expire
// the same ones at the same entries.
type retentionMachine struct {
	r    *rig
	seqs map[int64]int32 // next sequence per producer, as its client sees it
	ts   int64           // the clients' clock
}

func (m *retentionMachine) Produce(t *rapid.T) {
	pid := rapid.SampledFrom([]int64{-1, 1, 2, 3}).Draw(t, "pid")
	n := rapid.IntRange(1, 4).Draw(t, "records")
	seq := m.seqs[pid]
	if pid >= 0 && seq > 0 && rapid.IntRange(0, 3).Draw(t, "retry") == 0 {
		seq = rapid.Int32Range(0, seq-1).Draw(t, "oldSeq") // a retry or a bad sequence
	}
	m.ts += rapid.Int64Range(-5, 40).Draw(t, "tsStep") // clients' clocks disagree a little
	res, err := m.r.appendAt(pid, 0, seq, n, m.ts)
	if err == nil && !res.Duplicate && pid >= 0 {
		m.seqs[pid] = seq + int32(n)
	}
}

// ChangeExpiry changes the topic's producer.id.expiration.ms; the leader
// puts it in the log.
func (m *retentionMachine) ChangeExpiry(t *rapid.T) {
	ms := rapid.Int64Range(1, 100).Draw(t, "expirationMs")
	m.r.cfg.ProducerIDExpirationMs = ms
	m.r.p.Cfg.ProducerIDExpirationMs = ms
	if err := m.r.p.SyncProducerExpiry(); err != nil {
		t.Fatalf("sync producer expiry: %v", err)
	}
	if got := m.r.p.pending.Expiration(); got != ms {
		t.Fatalf("leader's pending table applies expiry %d after proposing %d", got, ms)
	}
}

func (m *retentionMachine) DeleteRecords(t *rapid.T) {
	off := rapid.Int64Range(0, m.r.p.HighWatermark()+2).Draw(t, "offset")
	if _, _, err := m.r.p.ProposeStartOffset(off); err != nil {
		t.Fatalf("propose start offset: %v", err)
	}
}

func (m *retentionMachine) Commit(t *rapid.T) { m.r.drive() }

func (m *retentionMachine) Snapshot(t *rapid.T) {
	m.r.drive()
	snap, applied := m.r.log.Snapshot().Index, m.r.rep.Applied()
	if _, err := m.r.p.CheckpointAt(snap); err == nil {
		t.Fatalf("CheckpointAt(snapshot index %d) accepted", snap)
	}
	if _, err := m.r.p.CheckpointAt(applied + 1); err == nil {
		t.Fatalf("CheckpointAt(applied+1 = %d) accepted", applied+1)
	}
	if applied <= snap {
		return
	}
	bound := rapid.Uint64Range(snap+1, applied).Draw(t, "bound")
	m.r.checkCheckpointAt(bound)
	meta, _ := m.r.p.CheckpointAt(bound)
	if err := m.r.log.SetSnapshot(meta); err != nil {
		t.Fatalf("SetSnapshot at %d: %v", bound, err)
	}
	if _, err := m.r.log.CompactTo(bound); err != nil {
		t.Fatalf("CompactTo(%d): %v", bound, err)
	}
}

func (m *retentionMachine) Restart(t *rapid.T) {
	m.r.drive()
	cp, hw := m.r.p.Checkpoint(), m.r.p.HighWatermark()
	m.r.restart()
	m.r.lead()
	if !bytes.Equal(m.r.p.Checkpoint(), cp) || m.r.p.HighWatermark() != hw {
		t.Fatalf("restart changed the state: hw %d, want %d; checkpoint equal %v", m.r.p.HighWatermark(), hw, bytes.Equal(m.r.p.Checkpoint(), cp))
	}
}

func (m *retentionMachine) Check(t *rapid.T) {
	if m.r.rep.Busy() {
		return
	}
	snap, applied := m.r.log.Snapshot().Index, m.r.rep.Applied()
	if applied > snap {
		m.r.checkCheckpointAt(applied)
	}
	if s, hw := m.r.p.StartOffset(), m.r.p.HighWatermark(); s > hw || hw > m.r.log.NextOffset() {
		t.Fatalf("start %d, high watermark %d, log next %d out of order", s, hw, m.r.log.NextOffset())
	}
	checkTableInvariants(t, m.r.p.applied)
	if p := m.r.p; p.pending != nil {
		checkTableInvariants(t, p.pending)
		// With the whole log applied, the leader's view is the applied one.
		if !m.r.rep.HasWork() && applied == m.r.log.LastIndex() && !bytes.Equal(EncodeCheckpoint(Checkpoint{Producers: p.pending}), EncodeCheckpoint(Checkpoint{Producers: p.applied})) {
			t.Fatalf("leader's pending producers differ from the applied ones with the whole log applied:\n%s\nwant\n%s",
				describe(p.pending), describe(p.applied))
		}
	}
}

func TestCheckpointAtEqualsReplay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := DefaultConfig()
		cfg.ProducerIDExpirationMs = 50
		r := newRig(t, cfg)
		r.lead()
		if err := r.p.SyncProducerExpiry(); err != nil {
			t.Fatal(err)
		}
		m := &retentionMachine{r: r, seqs: map[int64]int32{}, ts: 1_700_000_000_000}
		t.Repeat(rapid.StateMachineActions(m))
		r.drive()
		// Every bound the log can still describe.
		for b := r.log.Snapshot().Index + 1; b <= r.rep.Applied(); b++ {
			r.checkCheckpointAt(b)
		}
	})
}
