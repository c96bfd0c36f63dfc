package logstore

import "testing"

// A log whose first sync made its segment durable but failed on the meta
// record (then the machine crashed) must reopen with the synced segment and
// without the hard state that never became durable. (The case the
// simulator found — segments beside two meta files that never held a
// record, refused for ever — is recovered by open(); its regression is the
// simulator's seed.)
func TestReopenAfterFailedFirstSync(t *testing.T) {
	fsys := newSim(7)
	l, _ := openLog(t, fsys, Options{})
	appendBatches(t, l, 5, 3, 1, 1000)
	l.SetHardState(HardState{Term: 1})
	p := l.PrepareSync()
	if p == nil {
		t.Fatal("nothing to sync")
	}
	fsys.FailNext(OpSync, "p0/meta.a", ErrInjected)
	fsys.FailNext(OpSync, "p0/meta.b", ErrInjected)
	err := p.Run()
	l.FinishSync(p, err)
	if err == nil {
		t.Fatal("the injected meta sync failure did not happen")
	}
	// The OS may write a directory out on its own: make the new files'
	// names durable, though the meta files' contents are not.
	if err := fsys.SyncDir("p0"); err != nil {
		t.Fatal(err)
	}
	fsys.CrashWith(CrashLoseAll)
	l2, rec, err := Open(fsys, "p0", Options{})
	if err != nil {
		t.Fatalf("reopen after a failed first sync: %v", err)
	}
	if l2.HardState() != (HardState{}) {
		t.Fatalf("hard state %+v came back from a meta record that was never durable", l2.HardState())
	}
	if l2.LastIndex() != 5 {
		t.Fatalf("recovered %d entries, the synced segment held 5 (recovery %+v)", l2.LastIndex(), rec)
	}
}
