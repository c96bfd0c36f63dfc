package partition

import (
	"math/rand"
	"time"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/node/records"
	"github.com/floe-broker/floe/node/replica"
)

// A rig is one partition replica as the node runs it, without the node: a
// single-voter Raft group on a logstore.Log over a SimFS, driven the way
// node/ready.go drives it (Take, observe the role, sync, Complete), with
// every applied entry recorded so tests can rebuild state from scratch.
type rig struct {
	t   tb
	fs  *logstore.SimFS
	dir string
	cfg Config

	log  *logstore.Log
	rep  *replica.Replica
	host *consensus.Host // ticks the replica's Raft node, as the node's host does
	p    *Partition
	rec  *recorder

	now time.Time
}

// tb is what the rig needs of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

// recorder is the state machine the replica sees: the partition, with
// every applied entry kept by index (a restart applies some again; they
// are the same entries).
type recorder struct {
	p       *Partition
	applied map[uint64]consensus.Entry
}

func (r *recorder) Apply(e consensus.Entry) {
	e.Data = append([]byte(nil), e.Data...)
	r.applied[e.Index] = e
	r.p.Apply(e)
}

func (r *recorder) Restore(meta consensus.SnapshotMeta, sd replica.SnapshotData) error {
	return r.p.Restore(meta, sd)
}

// rigLogOptions keeps segments small so that compaction has whole
// segments to drop.
var rigLogOptions = logstore.Options{SegmentBytes: 2048}

func newRig(t tb, cfg Config) *rig {
	r := &rig{t: t, fs: logstore.NewSimFS(rand.New(rand.NewSource(1))), dir: "p", cfg: cfg,
		rec: &recorder{applied: map[uint64]consensus.Entry{}}, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r.open(true)
	return r
}

// open opens the log (bootstrapping a one-voter group on first boot, as
// node/replicas.go does) and starts a fresh partition and replica on it.
func (r *rig) open(first bool) {
	r.t.Helper()
	log, _, err := logstore.Open(r.fs, r.dir, rigLogOptions)
	if err != nil {
		r.t.Fatalf("open log: %v", err)
	}
	if first {
		cc := consensus.ConfChange{Type: consensus.ConfAddVoter, NodeID: 1}
		e := replica.ToLog(consensus.Entry{Term: 1, Index: 1, Type: consensus.EntryConfChange, Data: cc.Marshal()})
		if err := log.Append(e); err != nil {
			r.t.Fatalf("bootstrap: %v", err)
		}
		log.SetHardState(logstore.HardState{Term: 1, Commit: 1})
		if err := log.Sync(); err != nil {
			r.t.Fatalf("bootstrap sync: %v", err)
		}
	}
	r.log = log
	r.p = New("t", 0, r.cfg)
	r.rec.p = r.p
	rc := consensus.Config{ID: 1, ElectionTicks: 10, HeartbeatTicks: 1, MaxSizePerMsg: 1 << 20,
		MaxInflightMsgs: 256, CheckQuorum: true, PreVote: true, Rand: rand.New(rand.NewSource(2)),
		Fresh: log.HardState().Term <= 1} // as node/replicas.go raftConfig
	rep, err := replica.New(replica.Config{Group: 16, Raft: rc}, log, r.rec)
	if err != nil {
		r.t.Fatalf("replica: %v", err)
	}
	r.rep = rep
	r.host = consensus.NewHost(1)
	rep.Register(r.host)
	r.p.Attach(rep)
}

// restart closes the log cleanly and opens everything again.
func (r *rig) restart() {
	r.t.Helper()
	if err := r.log.Close(); err != nil {
		r.t.Fatalf("close: %v", err)
	}
	r.open(false)
}

// lead makes this replica the leader and drives until it is ready.
func (r *rig) lead() {
	r.t.Helper()
	r.drive() // apply the bootstrap configuration first: only a voter campaigns
	if !r.p.IsLeader() && r.log.HardState().Term > 1 {
		// Restarted: no campaign before an election timeout has passed
		// (consensus: a restarted member keeps its lease promises).
		for range 10 {
			r.host.Tick()
		}
	}
	r.rep.Campaign()
	r.drive()
	if !r.p.IsLeader() || !r.p.Ready() {
		r.t.Fatalf("not a ready leader after campaigning: leader %v ready %v", r.p.IsLeader(), r.p.Ready())
	}
}

// observeRole is node/tick.go's observeRole for one partition.
func (r *rig) observeRole() {
	st := r.rep.Status()
	isLeader := st.RaftState == consensus.StateLeader
	if r.p.Leader() == st.Lead && r.p.IsLeader() == isLeader && r.p.Term() == st.Term {
		return
	}
	r.p.RoleChanged(st.Lead, isLeader, st.Term)
}

// take runs the first half of a Ready: write it and observe the role.
func (r *rig) take() (mustSync bool) {
	r.t.Helper()
	_, mustSync, err := r.rep.Take()
	if err != nil {
		r.t.Fatalf("take: %v", err)
	}
	r.observeRole()
	return mustSync
}

// complete syncs if asked and completes the Ready in flight.
func (r *rig) complete(mustSync bool) {
	r.t.Helper()
	if mustSync {
		if err := r.log.Sync(); err != nil {
			r.t.Fatalf("sync: %v", err)
		}
	}
	if _, err := r.rep.Complete(); err != nil {
		r.t.Fatalf("complete: %v", err)
	}
}

// drive walks Readies until Raft has nothing more to do.
func (r *rig) drive() {
	r.t.Helper()
	for i := 0; r.rep.HasWork(); i++ {
		if i > 1000 {
			r.t.Fatalf("Raft never ran out of work")
		}
		r.complete(r.take())
	}
}

// batch builds a batch of n records a millisecond apart; pid < 0 means no
// producer.
func batch(pid int64, epoch int16, seq int32, n int) ([]byte, records.Header) {
	return buildBatch(pid, epoch, seq, n, 1_700_000_000_000, 1)
}

// buildBatch builds a batch of n records stamped tsMs, tsMs+stepMs, ...
func buildBatch(pid int64, epoch int16, seq int32, n int, tsMs, stepMs int64) ([]byte, records.Header) {
	recs := make([]records.Record, n)
	for i := range recs {
		recs[i] = records.Record{TimestampDelta: int64(i) * stepMs, Value: []byte{byte(i), byte(seq)}}
	}
	o := records.BuildOptions{BaseTimestamp: tsMs}
	if pid >= 0 {
		o.Producer = &records.Producer{ID: pid, Epoch: epoch, BaseSequence: seq}
	}
	b := records.Build(o, recs)
	h, err := records.ParseHeader(b)
	if err != nil {
		panic(err) // Build makes valid batches
	}
	return b, h
}

// produce appends a batch on the leader.
func (r *rig) produce(pid int64, epoch int16, seq int32, n int) (AppendResult, error) {
	b, h := batch(pid, epoch, seq, n)
	return r.p.Append(b, h, r.now)
}

// waitResult records how a WaitCommit ended.
type waitResult struct {
	calls int
	err   error
}

func (w *waitResult) done(err error) { w.calls++; w.err = err }

func (r *rig) wait(res AppendResult) *waitResult {
	w := &waitResult{}
	r.p.WaitCommit(res.Index, res.Term, res.BaseOffset, w.done)
	return w
}
