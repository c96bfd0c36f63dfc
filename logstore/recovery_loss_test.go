package logstore

import (
	"path"
	"testing"
)

// A log cut back below its snapshot point is restarted after the snapshot
// (restartAfterSnapshot), which discards its segments and writes a meta
// record saying the log starts after the snapshot. If that record's sync
// fails, Open fails before the node can record its vote fence, and the
// record's bytes may still reach the disk. The next Open must still report
// the loss: before the fix it saw a consistent log at the snapshot point,
// and the replica came back unfenced (sim seed 5 on h-23 e17261e: a
// controller replica voted for a candidate lacking an entry it had
// acknowledged, and a committed entry changed). The loss stays reported
// until the node says it has fenced (LossFenced).
func TestLossBelowSnapshotSurvivesAFailedOpen(t *testing.T) {
	fsys := newSim(31)
	l, _ := openLog(t, fsys, Options{})
	appendBatches(t, l, 10, 1, 1, 0)
	must(t, l.Sync())
	seg := path.Join("p0", segmentNames(t, fsys)[0])
	data, err := fsys.ReadFile(seg)
	must(t, err)
	tenth := int64(len(data))
	appendBatches(t, l, 20, 1, 2, 0)
	l.SetHardState(HardState{Term: 2, Commit: 30})
	must(t, l.Sync())
	must(t, l.SetSnapshot(SnapshotMeta{Index: 30, Term: 2, NextOffset: l.OffsetAfterIndex(30)}))
	must(t, l.Sync())
	appendBatches(t, l, 10, 1, 2, 0) // 31..40: durable, acknowledged, in no record
	must(t, l.Sync())
	must(t, l.Close())
	must(t, fsys.TruncateFile(seg, tenth))

	// The restart's meta record goes into the meta file not holding the
	// newest record; its sync fails (the write itself stays, unsynced).
	older := metaNames[0]
	if a, b := readSeq(t, fsys, "p0/meta.a"), readSeq(t, fsys, "p0/meta.b"); a > b {
		older = metaNames[1]
	}
	fsys.FailNext(OpSync, path.Join("p0", older), nil)
	if _, _, err := Open(fsys, "p0", Options{}); err == nil {
		t.Fatal("open with a failing meta sync succeeded")
	}

	l, rec := openLog(t, fsys, Options{})
	if !rec.Corrupt || !rec.HeldUnknown {
		t.Fatalf("after a failed open that restarted the log after its snapshot, the next open reported %+v (last index %d, commit %d): want the loss, of unknown extent",
			rec, l.LastIndex(), l.HardState().Commit)
	}
	// Still reported after a crash, until the node has fenced.
	must(t, l.Close())
	fsys.Crash()
	l, rec = openLog(t, fsys, Options{})
	if !rec.Corrupt || !rec.HeldUnknown {
		t.Fatalf("after a crash, the loss is no longer reported: %+v", rec)
	}
	must(t, l.LossFenced())
	must(t, l.Close())
	fsys.Crash()
	l, rec = openLog(t, fsys, Options{})
	if rec.Corrupt || rec.HeldUnknown || l.LastIndex() != 30 {
		t.Fatalf("after LossFenced, open reported %+v, last index %d: want a clean log at 30", rec, l.LastIndex())
	}
	must(t, l.Close())
}

func readSeq(t *testing.T, fsys *SimFS, name string) uint64 {
	t.Helper()
	b, err := fsys.ReadFile(name)
	must(t, err)
	m, err := decodeMetaFile(b)
	if err != nil {
		return 0
	}
	return m.seq
}
