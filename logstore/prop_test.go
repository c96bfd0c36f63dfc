package logstore

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/floe-broker/floe/node/records"
)

// The property test drives a Log on a SimFS with random appends, syncs
// (whole, and split into PrepareSync / appends / Run / FinishSync),
// truncations, snapshots, prefix removal, hard-state changes, clean reopens
// and crashes, and checks it against a naive model.
//
// The model keeps every version of the log since the last completed sync (a
// truncation or a snapshot install starts a new version) and the log as of
// that sync (durable). After a crash the recovered log must equal a prefix
// of one version that keeps at least what that version shares with the
// durable log; in the usual case (no truncation since the sync) that reads:
// a prefix of what was appended that holds everything synced, and nothing
// else. Its snapshot point and hard state must be ones set since the sync.
//
// Runs -rapid.checks cases (default 100, about 10 s); use more for soaks:
// go test ./logstore -run TestLogProperty -rapid.checks=5000

type mlog struct {
	epoch      int    // snapshot installs so far
	base       uint64 // entries start at base+1
	baseOffset int64  // the Kafka offset after base
	entries    []Entry
	ids        []int // ids[k] identifies entries[k]: a re-appended entry with equal content is still a new entry
}

func (m *mlog) last() uint64 { return m.base + uint64(len(m.entries)) }

func (m *mlog) entry(i uint64) (Entry, bool) {
	if i <= m.base || i > m.last() {
		return Entry{}, false
	}
	return m.entries[i-m.base-1], true
}

func (m *mlog) clone() *mlog {
	c := *m
	c.entries = append([]Entry(nil), m.entries...)
	c.ids = append([]int(nil), m.ids...)
	return &c
}

func (m *mlog) cut(last uint64) {
	m.entries = m.entries[:last-m.base]
	m.ids = m.ids[:last-m.base]
}

func (m *mlog) nextOffset() int64 {
	for i := len(m.entries) - 1; i >= 0; i-- {
		if e := m.entries[i]; e.Kind == KindBatch {
			h, _ := records.ParseBatch(e.Data)
			return h.NextOffset()
		}
	}
	return m.baseOffset
}

type msnap struct {
	meta  SnapshotMeta
	epoch int
}

type model struct {
	versions []*mlog // since the last completed sync; the last is current
	durable  *mlog
	snaps    []msnap     // snapshot points set since the last completed sync
	hss      []HardState // hard states set since then
	nextID   int
	plan     *SyncPlan
	planAt   struct{ version, snap, hs int }
	planLog  *mlog
}

func (m *model) cur() *mlog { return m.versions[len(m.versions)-1] }

func (m *model) newVersion(v *mlog) { m.versions = append(m.versions, v) }

// synced records a completed sync of what was current at prepare time.
func (m *model) synced(durable *mlog, version, snap, hs int) {
	m.durable = durable
	m.versions = m.versions[version:]
	m.snaps = m.snaps[snap:]
	m.hss = m.hss[hs:]
}

func (m *model) reset(l *Log, v *mlog) {
	m.versions = []*mlog{v}
	m.durable = v.clone()
	m.snaps = []msnap{{meta: l.Snapshot(), epoch: v.epoch}}
	m.hss = []HardState{l.HardState()}
	m.plan = nil
}

func TestLogProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Int64().Draw(rt, "fsSeed")
		fsys := NewSimFS(rand.New(rand.NewSource(seed)))
		opts := Options{
			SegmentBytes:       int64(rapid.IntRange(300, 3000).Draw(rt, "segmentBytes")),
			IndexIntervalBytes: rapid.IntRange(64, 1024).Draw(rt, "indexInterval"),
		}
		l, _, err := Open(fsys, "p", opts)
		if err != nil {
			rt.Fatal(err)
		}
		m := &model{}
		m.reset(l, &mlog{})
		p := &propRun{t: rt, fsys: fsys, opts: opts, l: l, m: m}
		steps := rapid.IntRange(5, 150).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			op := rapid.SampledFrom(propOps).Draw(rt, "op")
			p.do(op)
			p.checkLive()
		}
		p.crashAndCheck(CrashRandom)
	})
}

var propOps = []string{"append", "append", "append", "append", "sync", "prepare", "finish",
	"truncate", "crash", "reopen", "setsnapshot", "compact", "install", "hardstate", "retention"}

type propRun struct {
	t    *rapid.T
	fsys *SimFS
	opts Options
	l    *Log
	m    *model
}

func (p *propRun) do(op string) {
	t, l, m := p.t, p.l, p.m
	switch op {
	case "append":
		p.append()
	case "sync":
		if m.plan != nil {
			p.finish()
		}
		p.prepare()
		p.finish()
	case "prepare":
		if m.plan == nil {
			p.prepare()
		}
	case "finish":
		if m.plan != nil {
			p.finish()
		}
	case "truncate":
		if l.LastIndex() <= l.Snapshot().Index {
			return
		}
		at := rapid.Uint64Range(l.Snapshot().Index, l.LastIndex()-1).Draw(t, "truncateAfter")
		if err := l.TruncateAfter(at); err != nil {
			t.Fatalf("truncate after %d: %v", at, err)
		}
		v := m.cur().clone()
		v.cut(at)
		m.newVersion(v)
	case "crash":
		mode := rapid.SampledFrom([]CrashMode{CrashRandom, CrashRandom, CrashLoseAll, CrashKeepAll, CrashTornLast}).Draw(t, "crashMode")
		p.crashAndCheck(mode)
	case "reopen":
		if m.plan != nil {
			return
		}
		before := allEntries(t, l)
		must(t, l.Close())
		p.reopen()
		if err := sameEntries(allEntries(t, p.l), before); err != nil {
			t.Fatalf("clean reopen changed the log: %v", err)
		}
		m.reset(p.l, m.cur().clone())
	case "setsnapshot":
		lo, hi := l.Snapshot().Index, l.DurableIndex()
		if hi <= lo {
			return
		}
		i := rapid.Uint64Range(lo+1, hi).Draw(t, "snapIndex")
		term, _ := l.Term(i)
		s := SnapshotMeta{Index: i, Term: term, NextOffset: l.OffsetAfterIndex(i), Data: []byte(fmt.Sprintf("state@%d", i))}
		if err := l.SetSnapshot(s); err != nil {
			t.Fatalf("set snapshot %d: %v", i, err)
		}
		m.snaps = append(m.snaps, msnap{meta: s, epoch: m.cur().epoch})
	case "compact":
		if _, err := l.CompactTo(l.Snapshot().Index); err != nil {
			t.Fatal(err)
		}
	case "retention":
		if _, err := l.ApplyRetention(time.Unix(0, 0), -1, 1, l.LastIndex()+1); err != nil {
			t.Fatal(err)
		}
	case "install":
		cur := m.cur()
		s := SnapshotMeta{
			Index:      l.Snapshot().Index + rapid.Uint64Range(1, 20).Draw(t, "installAhead"),
			Term:       l.HardState().Term + l.lastTerm + 1,
			NextOffset: l.NextOffset() + rapid.Int64Range(0, 5).Draw(t, "installOffsetGap"),
			Data:       []byte("installed"),
		}
		if err := l.InstallSnapshot(s); err != nil {
			t.Fatalf("install %+v: %v", s, err)
		}
		v := &mlog{epoch: cur.epoch + 1, base: s.Index, baseOffset: s.NextOffset}
		m.newVersion(v)
		m.snaps = append(m.snaps, msnap{meta: s, epoch: v.epoch})
	case "hardstate":
		hs := l.HardState()
		hs.Term += rapid.Uint64Range(0, 2).Draw(t, "hsTermUp")
		hs.Vote = rapid.Uint64Range(0, 3).Draw(t, "hsVote")
		hs.Commit = rapid.Uint64Range(0, l.LastIndex()).Draw(t, "hsCommit")
		l.SetHardState(hs)
		m.hss = append(m.hss, hs)
	}
}

func (p *propRun) append() {
	t, l, m := p.t, p.l, p.m
	n := rapid.IntRange(1, 4).Draw(t, "appendCount")
	term := l.lastTerm
	if rapid.IntRange(0, 5).Draw(t, "termBump") == 0 {
		term++
	}
	off := l.NextOffset()
	es := make([]Entry, n)
	for k := range es {
		e := Entry{Index: l.LastIndex() + 1 + uint64(k), Term: term}
		if rapid.IntRange(0, 4).Draw(t, "isControl") == 0 {
			e.Kind, e.Data = 7, []byte(fmt.Sprintf("ctl-%d", e.Index))
		} else {
			recs := rapid.IntRange(1, 4).Draw(t, "records")
			e.Kind, e.Data = KindBatch, simpleBatch(t, off, recs, int64(e.Index), fmt.Sprintf("g%d", l.gen))
			off += int64(recs)
		}
		es[k] = e
	}
	if err := l.Append(es...); err != nil {
		t.Fatalf("append: %v", err)
	}
	cur := m.cur()
	cur.entries = append(cur.entries, es...)
	for range es {
		m.nextID++
		cur.ids = append(cur.ids, m.nextID)
	}
}

func (p *propRun) prepare() {
	m := p.m
	m.plan = p.l.PrepareSync()
	if m.plan == nil {
		return
	}
	m.planAt.version, m.planAt.snap, m.planAt.hs = len(m.versions)-1, len(m.snaps)-1, len(m.hss)-1
	m.planLog = m.cur().clone()
}

func (p *propRun) finish() {
	m := p.m
	if m.plan == nil {
		return
	}
	err := m.plan.Run()
	p.l.FinishSync(m.plan, err)
	m.plan = nil
	if err != nil {
		p.t.Fatalf("sync: %v", err)
	}
	m.synced(m.planLog, m.planAt.version, m.planAt.snap, m.planAt.hs)
}

func (p *propRun) reopen() {
	l, rec, err := Open(p.fsys, "p", p.opts)
	if err != nil {
		p.t.Fatalf("reopen: %v", err)
	}
	if rec.Corrupt {
		p.t.Fatalf("recovery reported corruption without any: %+v", rec)
	}
	p.l = l
}

// crashAndCheck crashes the FS, reopens, and checks the recovered log.
func (p *propRun) crashAndCheck(mode CrashMode) {
	t, m := p.t, p.m
	p.fsys.CrashWith(mode)
	m.plan = nil
	p.reopen()
	l := p.l
	got := allEntries(t, l)
	snap := l.Snapshot()
	var reasons []string
	for vi, v := range m.versions {
		if err := p.matches(v, got, snap); err != nil {
			reasons = append(reasons, fmt.Sprintf("version %d (epoch %d, base %d, last %d): %v", vi, v.epoch, v.base, v.last(), err))
			continue
		}
		if !p.hardStateOK(l.HardState()) {
			t.Fatalf("recovered hard state %+v was never set since the last sync (%+v)", l.HardState(), m.hss)
		}
		kept := v.clone()
		kept.cut(l.LastIndex())
		m.reset(l, kept)
		p.checkLive()
		return
	}
	t.Fatalf("after crash (mode %d) the log (snapshot %d, last %d) matches no version:\n%v", mode, snap.Index, l.LastIndex(), reasons)
}

// matches checks the recovered log against one model version.
func (p *propRun) matches(v *mlog, got []Entry, snap SnapshotMeta) error {
	m := p.m
	snapOK := false
	for _, s := range m.snaps {
		if s.epoch == v.epoch && s.meta.Index == snap.Index && s.meta.Term == snap.Term &&
			s.meta.NextOffset == snap.NextOffset && string(s.meta.Data) == string(snap.Data) {
			snapOK = true
		}
	}
	if !snapOK {
		return fmt.Errorf("snapshot %d not set in this version's epoch", snap.Index)
	}
	last := snap.Index + uint64(len(got))
	if last > v.last() {
		return fmt.Errorf("recovered last %d past the version's %d", last, v.last())
	}
	for k, e := range got {
		want, ok := v.entry(e.Index)
		if !ok || e.Index != snap.Index+1+uint64(k) || sameEntries([]Entry{e}, []Entry{want}) != nil {
			return fmt.Errorf("entry %d differs", e.Index)
		}
	}
	if need := p.required(v); last < need {
		return fmt.Errorf("recovered last %d, but %d was durable", last, need)
	}
	return nil
}

// required is how far a recovery into version v must reach: what v shares
// with the durable log.
func (p *propRun) required(v *mlog) uint64 {
	d := p.m.durable
	if v.epoch != d.epoch {
		return v.base
	}
	i := d.base
	for i < min(d.last(), v.last()) && d.ids[i-d.base] == v.ids[i-v.base] {
		i++
	}
	return i
}

func (p *propRun) hardStateOK(hs HardState) bool {
	for _, h := range p.m.hss {
		if h.Term == hs.Term && h.Vote == hs.Vote {
			return true
		}
	}
	return false
}

// checkLive checks the open log against the current model version.
func (p *propRun) checkLive() {
	t, l, cur := p.t, p.l, p.m.cur()
	if l.LastIndex() != cur.last() {
		t.Fatalf("last index %d, model %d", l.LastIndex(), cur.last())
	}
	if l.NextOffset() != cur.nextOffset() {
		t.Fatalf("next offset %d, model %d", l.NextOffset(), cur.nextOffset())
	}
	if l.DurableIndex() > l.LastIndex() {
		t.Fatalf("durable %d past last %d", l.DurableIndex(), l.LastIndex())
	}
	checkSizeBytes(t, l, "a step")
	checkDirty(t, l, "a step")
	got := allEntries(t, l)
	want := cur.entries[l.Snapshot().Index-cur.base:]
	if err := sameEntries(got, want); err != nil {
		t.Fatalf("live log differs from the model: %v", err)
	}
	for _, e := range got {
		if term, err := l.Term(e.Index); err != nil || term != e.Term {
			t.Fatalf("Term(%d) = %d, %v; want %d", e.Index, term, err, e.Term)
		}
	}
	// The Kafka view: every batch from StartOffset on reads back intact.
	byOffset := map[int64]string{}
	for _, e := range cur.entries {
		if e.Kind == KindBatch {
			h, _ := records.ParseBatch(e.Data)
			byOffset[h.BaseOffset] = string(e.Data)
		}
	}
	for _, b := range readAllBatches(t, l) {
		h, err := records.ParseBatch(b)
		if err != nil || byOffset[h.BaseOffset] != string(b) {
			t.Fatalf("Read returned a batch at %d that the model does not have", h.BaseOffset)
		}
	}
	if _, err := l.Term(l.Snapshot().Index); err != nil {
		t.Fatalf("term of the snapshot index: %v", err)
	}
	if l.Snapshot().Index > 0 {
		if _, err := l.Entries(l.Snapshot().Index, l.Snapshot().Index+1, -1); !errors.Is(err, ErrCompacted) {
			t.Fatalf("entries at the snapshot index: %v, want ErrCompacted", err)
		}
	}
}
