package replica

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"pgregory.net/rapid"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/node/records"
)

// Raft entry types and log kinds correspond one to one.
func TestKindTypeBijection(t *testing.T) {
	seen := map[uint8]consensus.EntryType{}
	for i := 0; i < 256; i++ {
		typ := consensus.EntryType(i)
		k := kindOf(typ)
		if prev, dup := seen[k]; dup {
			t.Fatalf("types %d and %d both map to kind %d", prev, typ, k)
		}
		seen[k] = typ
		if back := typeOf(k); back != typ {
			t.Fatalf("typeOf(kindOf(%d)) = %d", typ, back)
		}
		if back := kindOf(typeOf(uint8(i))); back != uint8(i) {
			t.Fatalf("kindOf(typeOf(%d)) = %d", i, back)
		}
	}
	if kindOf(EntryBatch) != logstore.KindBatch || typeOf(logstore.KindBatch) != EntryBatch {
		t.Fatalf("a Kafka batch must be KindBatch in the log")
	}
	if kindOf(consensus.EntryNormal) != uint8(consensus.EntryNormal) {
		t.Fatalf("the leader's empty entry changed kind")
	}
	e := consensus.Entry{Index: 7, Term: 3, Type: consensus.EntryConfChange, Data: []byte{1, 2}}
	if got := FromLog(ToLog(e)); got.Index != e.Index || got.Term != e.Term || got.Type != e.Type || !bytes.Equal(got.Data, e.Data) {
		t.Fatalf("FromLog(ToLog(%+v)) = %+v", e, got)
	}
}

// storagePair is the adapter over a real log next to consensus's
// MemoryStorage, the reference implementation of the Storage contract,
// with the same history written to both the way the replica writes it.
type storagePair struct {
	log  *logstore.Log
	st   *Storage
	mem  *consensus.MemoryStorage
	conf consensus.ConfState
	// rep, if set, writes Readies through Replica.write (and st is the
	// storage its Raft reads, with whatever it caches); otherwise the
	// test writes the log itself the same way.
	rep *Replica
}

func newStoragePair(t fataler) *storagePair {
	log, _, err := logstore.Open(logstore.NewSimFS(rand.New(rand.NewSource(1))), "g", logstore.Options{SegmentBytes: 512})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return &storagePair{log: log, st: NewStorage(log), mem: consensus.NewMemoryStorage()}
}

// newReplicaStoragePair is a storagePair written through a replica.
func newReplicaStoragePair(t fataler) *storagePair {
	sp := newStoragePair(t)
	rep, err := New(Config{Group: 16, Raft: raftConfig(1)}, sp.log, &appSM{})
	if err != nil {
		t.Fatalf("replica: %v", err)
	}
	sp.rep, sp.st = rep, rep.storage
	return sp
}

type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// entryData makes Data for an entry of type typ written after offset.
func entryData(typ consensus.EntryType, offset int64, n int) []byte {
	if typ == EntryBatch {
		recs := make([]records.Record, n)
		b := records.Build(records.BuildOptions{BaseOffset: offset}, recs)
		return b
	}
	return bytes.Repeat([]byte{byte(typ)}, n*7)
}

var entryTypes = []consensus.EntryType{consensus.EntryNormal, consensus.EntryConfChange, EntryBatch, EntryBatch + 1, 200}

// Append writes entries from index from on, replacing the suffix as
// Replica.write does.
func (sp *storagePair) Append(t *rapid.T) {
	snap, last := sp.log.Snapshot().Index, sp.log.LastIndex()
	from := rapid.Uint64Range(snap+1, last+1).Draw(t, "from")
	term, err := sp.log.Term(from - 1)
	if err != nil {
		t.Fatalf("term of %d: %v", from-1, err)
	}
	offset := sp.log.OffsetAfterIndex(from - 1)
	if offset < 0 {
		t.Fatalf("no offset after %d", from-1)
	}
	var es []consensus.Entry
	for i := 0; i < rapid.IntRange(1, 5).Draw(t, "count"); i++ {
		term += uint64(rapid.IntRange(0, 1).Draw(t, "termStep"))
		typ := rapid.SampledFrom(entryTypes).Draw(t, "type")
		n := rapid.IntRange(0, 4).Draw(t, "size")
		if typ == EntryBatch {
			n++
		}
		e := consensus.Entry{Index: from + uint64(i), Term: term, Type: typ, Data: entryData(typ, offset, n)}
		if typ == EntryBatch {
			offset += int64(n)
		}
		es = append(es, e)
	}
	hs := consensus.HardState{Term: term, Vote: 1, Commit: from - 1}
	if sp.rep != nil {
		if err := sp.rep.write(&consensus.Ready{Entries: es, HardState: hs}); err != nil {
			t.Fatalf("replica write: %v", err)
		}
	} else {
		if from <= last {
			if err := sp.log.TruncateAfter(from - 1); err != nil {
				t.Fatalf("truncate after %d: %v", from-1, err)
			}
		}
		les := make([]logstore.Entry, len(es))
		for i, e := range es {
			les[i] = ToLog(e)
		}
		if err := sp.log.Append(les...); err != nil {
			t.Fatalf("log append: %v", err)
		}
		sp.log.SetHardState(logstore.HardState{Term: hs.Term, Vote: hs.Vote, Commit: hs.Commit})
	}
	if err := sp.mem.Append(es); err != nil {
		t.Fatalf("memory append: %v", err)
	}
	sp.mem.SetHardState(hs)
	if err := sp.log.Sync(); err != nil {
		t.Fatalf("sync: %v", err)
	}
}

// Snapshot records a snapshot point and drops what it can, as retention
// does (node/maintain.go).
func (sp *storagePair) Snapshot(t *rapid.T) {
	snap, last := sp.log.Snapshot().Index, sp.log.LastIndex()
	if last <= snap {
		t.Skip("nothing to snapshot")
	}
	i := rapid.Uint64Range(snap+1, last).Draw(t, "index")
	term, _ := sp.log.Term(i)
	sp.conf = consensus.ConfState{Voters: []uint64{1, i}}
	data := EncodeSnapshotData(SnapshotData{Conf: sp.conf, NextOffset: sp.log.OffsetAfterIndex(i), App: []byte("app")})
	if err := sp.log.SetSnapshot(logstore.SnapshotMeta{Index: i, Term: term, NextOffset: sp.log.OffsetAfterIndex(i), Data: data}); err != nil {
		t.Fatalf("SetSnapshot(%d): %v", i, err)
	}
	if _, err := sp.log.CompactTo(i); err != nil {
		t.Fatalf("CompactTo(%d): %v", i, err)
	}
	if _, err := sp.mem.CreateSnapshot(i, &sp.conf, data); err != nil {
		t.Fatalf("CreateSnapshot(%d): %v", i, err)
	}
	if err := sp.mem.Compact(i); err != nil {
		t.Fatalf("Compact(%d): %v", i, err)
	}
}

// Install replaces everything by a received snapshot.
func (sp *storagePair) Install(t *rapid.T) {
	snap := sp.log.Snapshot().Index
	i := snap + rapid.Uint64Range(1, 8).Draw(t, "ahead")
	lastTerm, _ := sp.log.Term(sp.log.LastIndex())
	term := lastTerm + rapid.Uint64Range(0, 2).Draw(t, "termStep")
	next := max(sp.log.NextOffset(), 0) + rapid.Int64Range(0, 5).Draw(t, "offsetStep")
	sp.conf = consensus.ConfState{Voters: []uint64{2}, Learners: []uint64{i}}
	data := EncodeSnapshotData(SnapshotData{Conf: sp.conf, NextOffset: next})
	snapshot := consensus.Snapshot{Meta: consensus.SnapshotMeta{Index: i, Term: term, ConfState: sp.conf}, Data: data}
	if sp.rep != nil {
		if err := sp.rep.write(&consensus.Ready{Snapshot: snapshot}); err != nil {
			t.Fatalf("replica write of snapshot %d: %v", i, err)
		}
	} else if err := sp.log.InstallSnapshot(logstore.SnapshotMeta{Index: i, Term: term, NextOffset: next, Data: data}); err != nil {
		t.Fatalf("InstallSnapshot(%d): %v", i, err)
	}
	if err := sp.log.Sync(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if err := sp.mem.ApplySnapshot(snapshot); err != nil {
		t.Fatalf("ApplySnapshot(%d): %v", i, err)
	}
}

func errClass(err error) string {
	switch {
	case err == nil:
		return "nil"
	case errors.Is(err, consensus.ErrCompacted):
		return "ErrCompacted"
	case errors.Is(err, consensus.ErrUnavailable):
		return "ErrUnavailable"
	}
	return "other: " + err.Error()
}

func describeEntries(es []consensus.Entry) string {
	var b bytes.Buffer
	for _, e := range es {
		fmt.Fprintf(&b, "[%d@%d t%d %x]", e.Index, e.Term, e.Type, e.Data)
	}
	return b.String()
}

// Query asks both storages the same questions.
func (sp *storagePair) Query(t *rapid.T) {
	last := sp.log.LastIndex()
	lo := rapid.Uint64Range(0, last+2).Draw(t, "lo")
	hi := rapid.Uint64Range(lo, last+3).Draw(t, "hi")
	maxBytes := rapid.SampledFrom([]uint64{0, 1, 10, 30, 100, math.MaxUint64}).Draw(t, "maxBytes")
	got, gerr := sp.st.Entries(lo, hi, maxBytes)
	want, werr := sp.mem.Entries(lo, hi, maxBytes)
	if errClass(gerr) != errClass(werr) || describeEntries(got) != describeEntries(want) {
		t.Fatalf("Entries(%d, %d, %d):\n got %s %v\nwant %s %v", lo, hi, maxBytes, describeEntries(got), gerr, describeEntries(want), werr)
	}
	i := rapid.Uint64Range(0, last+2).Draw(t, "termIndex")
	gt, gerr := sp.st.Term(i)
	wt, werr := sp.mem.Term(i)
	if gt != wt || errClass(gerr) != errClass(werr) {
		t.Fatalf("Term(%d) = %d %v, want %d %v", i, gt, gerr, wt, werr)
	}
}

// QueryTypes compares EntryTypes (consensus.TypeScanner, read from the
// log's entry headers) with the types of MemoryStorage's entries.
func (sp *storagePair) QueryTypes(t *rapid.T) {
	last := sp.log.LastIndex()
	lo := rapid.Uint64Range(0, last+2).Draw(t, "lo")
	hi := rapid.Uint64Range(lo, last+3).Draw(t, "hi")
	got, gerr := sp.st.EntryTypes(lo, hi)
	want, werr := sp.mem.Entries(lo, hi, math.MaxUint64)
	wantTypes := make([]consensus.EntryType, len(want))
	for i, e := range want {
		wantTypes[i] = e.Type
	}
	if errClass(gerr) != errClass(werr) || fmt.Sprint(got) != fmt.Sprint(wantTypes) {
		t.Fatalf("EntryTypes(%d, %d) = %v %v, want %v %v", lo, hi, got, gerr, wantTypes, werr)
	}
}

func (sp *storagePair) Check(t *rapid.T) {
	gf, _ := sp.st.FirstIndex()
	wf, _ := sp.mem.FirstIndex()
	gl, _ := sp.st.LastIndex()
	wl, _ := sp.mem.LastIndex()
	if gf != wf || gl != wl {
		t.Fatalf("first/last %d %d, want %d %d", gf, gl, wf, wl)
	}
	gs, err := sp.st.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	ws, _ := sp.mem.Snapshot()
	if gs.Meta.Index != ws.Meta.Index || gs.Meta.Term != ws.Meta.Term || fmt.Sprint(gs.Meta.ConfState) != fmt.Sprint(ws.Meta.ConfState) ||
		!bytes.Equal(gs.Data, ws.Data) {
		t.Fatalf("Snapshot = %+v, want %+v", gs.Meta, ws.Meta)
	}
	hs, cs, err := sp.st.InitialState()
	whs, _, _ := sp.mem.InitialState()
	if err != nil || hs != whs || fmt.Sprint(cs) != fmt.Sprint(ws.Meta.ConfState) {
		t.Fatalf("InitialState = %+v %+v %v; want %+v %+v", hs, cs, err, whs, ws.Meta.ConfState)
	}
}

func TestStorageMatchesMemoryStorage(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sp := newStoragePair(t)
		t.Repeat(rapid.StateMachineActions(sp))
	})
}

// The same, with every Ready written by Replica.write and read back
// through the storage Raft uses: whatever the replica keeps in memory must
// answer like the log.
func TestReplicaStorageMatchesMemoryStorage(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sp := newReplicaStoragePair(t)
		// A small cache, so that it also evicts.
		sp.st.cache.bytesMax = rapid.IntRange(1, 80).Draw(t, "cacheBytes")
		t.Repeat(rapid.StateMachineActions(sp))
	})
}

// The contract's edges, spelled out.
func TestStorageEdges(t *testing.T) {
	sp := newStoragePair(t)
	for i := uint64(1); i <= 6; i++ {
		le := ToLog(consensus.Entry{Index: i, Term: 1 + i/3, Type: consensus.EntryNormal, Data: bytes.Repeat([]byte{'x'}, 10)})
		if err := sp.log.Append(le); err != nil {
			t.Fatal(err)
		}
	}
	if err := sp.log.Sync(); err != nil {
		t.Fatal(err)
	}
	data := EncodeSnapshotData(SnapshotData{Conf: consensus.ConfState{Voters: []uint64{1, 2}}})
	if err := sp.log.SetSnapshot(logstore.SnapshotMeta{Index: 2, Term: 1, Data: data}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lo, hi, max uint64
		n           int
		err         error
	}{
		{2, 4, 100, 0, consensus.ErrCompacted}, // at the snapshot index
		{1, 4, 100, 0, consensus.ErrCompacted},
		{3, 8, 100, 0, consensus.ErrUnavailable}, // past the last index
		{3, 7, 100, 4, nil},
		{3, 7, 25, 2, nil},
		{3, 7, 0, 1, nil}, // always at least one
		{3, 7, math.MaxUint64, 4, nil},
		{5, 5, 100, 0, nil},
	} {
		es, err := sp.st.Entries(tc.lo, tc.hi, tc.max)
		if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) || len(es) != tc.n {
			t.Errorf("Entries(%d, %d, %d) = %d entries, %v; want %d, %v", tc.lo, tc.hi, tc.max, len(es), err, tc.n, tc.err)
		}
	}
	for _, tc := range []struct {
		i, term uint64
		err     error
	}{{1, 0, consensus.ErrCompacted}, {2, 1, nil}, {3, 2, nil}, {6, 3, nil}, {7, 0, consensus.ErrUnavailable}} {
		term, err := sp.st.Term(tc.i)
		if term != tc.term || !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
			t.Errorf("Term(%d) = %d, %v; want %d, %v", tc.i, term, err, tc.term, tc.err)
		}
	}
	if f, _ := sp.st.FirstIndex(); f != 3 {
		t.Errorf("FirstIndex = %d, want 3", f)
	}
	snap, err := sp.st.Snapshot()
	if err != nil || snap.Meta.Index != 2 || snap.Meta.Term != 1 || fmt.Sprint(snap.Meta.ConfState.Voters) != "[1 2]" {
		t.Errorf("Snapshot = %+v, %v", snap.Meta, err)
	}
}

// A snapshot point whose data does not decode is an error, not a panic
// or an empty membership.
func TestStorageBadSnapshotData(t *testing.T) {
	sp := newStoragePair(t)
	if err := sp.log.Append(logstore.Entry{Index: 1, Term: 1}); err != nil {
		t.Fatal(err)
	}
	if err := sp.log.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := sp.log.SetSnapshot(logstore.SnapshotMeta{Index: 1, Term: 1, Data: []byte{9, 9}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.st.Snapshot(); err == nil {
		t.Errorf("Snapshot accepted undecodable data")
	}
	if _, _, err := sp.st.InitialState(); err == nil {
		t.Errorf("InitialState accepted undecodable data")
	}
}
