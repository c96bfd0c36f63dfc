package logstore

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"
)

// TestCommitNeverAheadOfDurableEntries is issue 13's bug 1: a follower
// holds entries 36..40 of term 1 that were never committed; a term-2 leader
// replaces them and says commit=40; the follower truncates, appends the new
// entries and records the hard state, and the node crashes before the
// group commit finishes (before Run, or with one of Run's steps failing).
// Whatever the crash keeps, the recovered commit index must name neither an
// entry above the last index nor a stale (term 1) entry: the meta record
// may reach the disk only after the entries it covers.
func TestCommitNeverAheadOfDurableEntries(t *testing.T) {
	const seeds = 400
	failed := 0
	for seed := int64(1); seed <= seeds; seed++ {
		if err := commitOrderRun(t, seed); err != nil {
			failed++
			if failed <= 5 {
				t.Errorf("seed %d: %v", seed, err)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d seeds recovered a commit index ahead of the durable entries", failed, seeds)
	}
}

func commitOrderRun(t *testing.T, seed int64) error {
	fsys := newSim(seed)
	opts := Options{SegmentBytes: 2 << 10, IndexIntervalBytes: 256}
	l, _ := openLog(t, fsys, opts)
	ctl := func(index, term uint64, tag string) Entry {
		return Entry{Index: index, Term: term, Kind: 3, Data: []byte(fmt.Sprintf("%s-%d-%d", tag, index, term))}
	}
	for i := uint64(1); i <= 40; i++ {
		must(t, l.Append(ctl(i, 1, "old")))
	}
	l.SetHardState(HardState{Term: 1, Vote: 1, Commit: 35})
	must(t, l.Sync())
	// The term-2 leader's append: entries 36..40 replaced, commit 40.
	must(t, l.TruncateAfter(35))
	for i := uint64(36); i <= 40; i++ {
		must(t, l.Append(ctl(i, 2, "new")))
	}
	l.SetHardState(HardState{Term: 2, Vote: 0, Commit: 40})
	p := l.PrepareSync()
	if p == nil {
		return fmt.Errorf("nothing to sync")
	}
	switch seed % 4 {
	case 1: // crash before Run
	case 2: // the segment's fsync fails
		fsys.FailNext(OpSync, "", ErrInjected)
		_ = p.Run()
	case 3: // the directory's fsync fails
		fsys.FailNext(OpSyncDir, "", ErrInjected)
		_ = p.Run()
	case 0: // any of Run's fsyncs may fail
		fsys.SetFailProb(OpSync, 0.5)
		_ = p.Run()
		fsys.SetFailProb(OpSync, 0)
	}
	fsys.Crash()
	l2, _, err := Open(fsys, "p0", opts)
	if err != nil {
		return fmt.Errorf("reopen: %v", err)
	}
	defer l2.Close()
	hs := l2.HardState()
	if hs.Commit > l2.LastIndex() {
		return fmt.Errorf("recovered commit %d above the last index %d", hs.Commit, l2.LastIndex())
	}
	for i := uint64(36); i <= hs.Commit; i++ {
		if tm, err := l2.Term(i); err != nil || tm != 2 {
			return fmt.Errorf("recovered commit %d, entry %d has term %d (%v): a stale entry counted as committed", hs.Commit, i, tm, err)
		}
	}
	return nil
}

// TestTornFirstMetaRecord is issue 13's bug 5: a log's first sync (in Open)
// made its new segment durable, then the meta record's fsync failed and the
// machine crashed, tearing the record. No record was ever durable, so the
// log must reopen as a new one; it was refused for ever ("has segments but
// no valid meta file"), which stopped the broker on every restart.
func TestTornFirstMetaRecord(t *testing.T) {
	for _, mode := range []CrashMode{CrashTornLast, CrashRandom, CrashKeepAll, CrashLoseAll} {
		for seed := int64(1); seed <= 20; seed++ {
			fsys := newSim(seed)
			fsys.FailNext(OpSync, "p0/meta.a", ErrInjected)
			if l, _, err := Open(fsys, "p0", Options{}); err == nil {
				l.Close()
				t.Fatal("the injected meta sync failure did not happen")
			}
			fsys.CrashWith(mode)
			l, _, err := Open(fsys, "p0", Options{})
			if err != nil {
				t.Fatalf("mode %d seed %d: reopen after a torn first meta record: %v", mode, seed, err)
			}
			if l.HardState() != (HardState{}) || l.LastIndex() != 0 {
				t.Fatalf("mode %d seed %d: hard state %+v, last index %d", mode, seed, l.HardState(), l.LastIndex())
			}
			appendBatches(t, l, 3, 1, 1, 0)
			l.SetHardState(HardState{Term: 1, Vote: 1, Commit: 3})
			must(t, l.Close())
			l, _ = openLog(t, fsys, Options{})
			if l.HardState() != (HardState{Term: 1, Vote: 1, Commit: 3}) || l.LastIndex() != 3 {
				t.Fatalf("mode %d seed %d: after reuse: hard state %+v, last index %d", mode, seed, l.HardState(), l.LastIndex())
			}
			must(t, l.Close())
		}
	}
}

// A log with no valid meta record whose segments do not continue a log
// from index 1 cannot come from a first sync that failed: recovery refuses
// it and deletes nothing.
func TestNoMetaRecordKeepsUnexplainedSegments(t *testing.T) {
	fsys := newSim(3)
	l, _ := openLog(t, fsys, Options{SegmentBytes: 512})
	appendBatches(t, l, 40, 1, 1, 0)
	l.SetHardState(HardState{Term: 1, Commit: 40})
	must(t, l.Sync())
	must(t, l.SetSnapshot(SnapshotMeta{Index: 30, Term: 1, NextOffset: l.OffsetAfterIndex(30)}))
	_, err := l.CompactTo(30)
	must(t, err)
	must(t, l.Sync())
	must(t, l.Sync()) // the removals
	must(t, l.Close())
	before := segmentNames(t, fsys)
	for _, name := range metaNames {
		must(t, fsys.TruncateFile("p0/"+name, 0))
	}
	if _, _, err := Open(fsys, "p0", Options{SegmentBytes: 512}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with lost meta records and a log starting at %s: %v", before[0], err)
	}
	if after := segmentNames(t, fsys); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("segments %v became %v", before, after)
	}
}

// Each meta file holds its record twice: one flipped bit anywhere in
// either file loses nothing, whichever file holds the newest record.
func TestMetaRecordSurvivesABitFlip(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for trial := 0; trial < 300; trial++ {
		fsys := newSim(int64(trial))
		l, _ := openLog(t, fsys, Options{})
		n := 1 + rng.Intn(5)
		var want HardState
		for i := 0; i < n; i++ {
			appendBatches(t, l, 1, 1, uint64(i+1), 0)
			want = HardState{Term: uint64(i + 1), Vote: uint64(i % 3), Commit: l.LastIndex()}
			l.SetHardState(want)
			must(t, l.Sync())
		}
		must(t, l.Close())
		name := "p0/" + metaNames[rng.Intn(2)]
		data, err := fsys.ReadFile(name)
		must(t, err)
		off := rng.Int63n(int64(len(data)))
		must(t, fsys.FlipBit(name, off, uint(rng.Intn(8))))
		l, _ = openLog(t, fsys, Options{})
		if got := l.HardState(); got != want {
			t.Fatalf("trial %d: flipped byte %d of %s (%d bytes): hard state %+v, want %+v", trial, off, name, len(data), got, want)
		}
		must(t, l.Close())
	}
}

// A log that recovers shorter than the commit index its meta record holds
// (a file cut back by the disk) keeps that record through Open: it is the
// node's only evidence of the loss until the node has made its vote fence
// durable, and a crash right after Open must not erase it.
func TestOpenKeepsTheRecordedCommitAboveALostTail(t *testing.T) {
	fsys := newSim(11)
	l, _ := openLog(t, fsys, Options{})
	appendBatches(t, l, 40, 1, 1, 0)
	l.SetHardState(HardState{Term: 1, Vote: 1, Commit: 40})
	must(t, l.Close())
	seg := "p0/" + segmentNames(t, fsys)[0]
	must(t, fsys.TruncateFile(seg, fsys.CommittedPrefix("p0", segmentNames(t, fsys)[0])/2))
	for i := 0; i < 2; i++ {
		l, _ = openLog(t, fsys, Options{})
		if hs := l.HardState(); hs.Commit != 40 || l.LastIndex() >= 40 {
			t.Fatalf("open %d: recorded commit %d, last index %d", i, hs.Commit, l.LastIndex())
		}
		fsys.CrashWith(CrashKeepAll)
	}
	// Once the owner lowers the commit index, the record follows.
	l, _ = openLog(t, fsys, Options{})
	last := l.LastIndex()
	l.SetHardState(HardState{Term: 1, Vote: 1, Commit: last})
	must(t, l.Close())
	l, _ = openLog(t, fsys, Options{})
	if hs := l.HardState(); hs.Commit != last {
		t.Fatalf("lowered commit %d not recorded: %+v", last, hs)
	}
}
