package logstore

import (
	"fmt"
	"testing"
)

// TestLyingSegmentsLoseOnlyWhatRecoverySees: with SetLyingSegments every
// segment sync lies and the meta record (commit index) does not. A crash
// then either keeps what the lie claimed (the simulator refused the loss,
// or it could not show) or leaves a log that ends below its recorded
// commit, which recovery reports (docs/architecture.md, "Damage to stored
// data"). Never a log that silently lost entries it called synced while
// still reaching its recorded commit.
func TestLyingSegmentsLoseOnlyWhatRecoverySees(t *testing.T) {
	lost, kept := 0, 0
	for seed := int64(1); seed <= 80; seed++ {
		l2, allowed, err := lyingRun(t, seed)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		hs, last := l2.HardState(), l2.LastIndex()
		switch {
		case last == 60:
			kept++
			for i := uint64(1); i <= 60; i++ {
				if tm, err := l2.Term(i); err != nil || tm != 1 {
					t.Fatalf("seed %d: entry %d kept with term %d (%v)", seed, i, tm, err)
				}
			}
		case !allowed:
			t.Fatalf("seed %d: the log lost entries (last %d of 60) though the loss was refused", seed, last)
		case last >= hs.Commit:
			t.Fatalf("seed %d: the log lost entries it called synced (last %d of 60) but reaches its recorded commit %d: a silent loss", seed, last, hs.Commit)
		default:
			lost++
		}
		must(t, l2.Close())
	}
	if lost == 0 || kept == 0 {
		t.Fatalf("lost %d, kept %d of 80 runs: want both", lost, kept)
	}
}

// lyingRun writes entries 1..40 honestly (commit 30), then 41..60 with a
// recorded commit of 50 or 40 while every segment sync lies, crashes, and
// reopens. allowed says whether the loss was allowed to stand.
func lyingRun(t *testing.T, seed int64) (*Log, bool, error) {
	fsys := newSim(seed)
	l, _ := openLog(t, fsys, Options{})
	appendBatches(t, l, 40, 1, 1, 0)
	l.SetHardState(HardState{Term: 1, Vote: 1, Commit: 30})
	must(t, l.Sync())
	allowed, asked := seed%3 != 0, 0
	fsys.SetLyingSegments(1, func(name string) bool {
		asked++
		return allowed
	})
	for i := uint64(41); i <= 60; i++ {
		must(t, l.Append(Entry{Index: i, Term: 1, Kind: 3, Data: []byte(fmt.Sprintf("e%d", i))}))
	}
	l.SetHardState(HardState{Term: 1, Vote: 1, Commit: 40 + 10*uint64(seed%2)})
	must(t, l.Sync())
	if fsys.Lies() == 0 {
		return nil, false, fmt.Errorf("no sync lied")
	}
	fsys.CrashWith([]CrashMode{CrashRandom, CrashLoseAll}[seed%2])
	if asked > 1 {
		return nil, false, fmt.Errorf("asked %d times for one file", asked)
	}
	l2, _, err := Open(fsys, "p0", Options{})
	return l2, allowed && asked == 1, err
}
