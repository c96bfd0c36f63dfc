package logstore

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/floe-broker/floe/node/records"
)

// compactionFixture is a log whose batches set keys k0..k7 again and again
// (some to tombstones), spread over several sealed segments, and the model
// of what compaction must keep.
type compactionFixture struct {
	entries []Entry
	// latest[key] = (offset, value) of the key's last record in the sealed
	// segments; value nil for a tombstone.
	latest    map[string]keyedValue
	lastClean uint64 // last index of the sealed segments
	all       map[int64]keyedValue
}

type keyedValue struct {
	offset int64
	key    string
	value  []byte
	ts     int64
}

const (
	oldTs = 1_000      // tombstones this old are past delete.retention.ms
	newTs = 10_000_000 // and these are not
)

func buildCompactionLog(t *testing.T, fsys *SimFS, codec records.Codec) (*Log, *compactionFixture, Options) {
	t.Helper()
	opts := Options{SegmentBytes: 1500, IndexIntervalBytes: 256}
	l, _ := openLog(t, fsys, opts)
	fx := &compactionFixture{latest: map[string]keyedValue{}, all: map[int64]keyedValue{}}
	term := uint64(1)
	for i := 0; i < 60; i++ {
		if i%17 == 16 { // control entries take no offset and must survive
			e := Entry{Index: l.LastIndex() + 1, Term: term, Kind: 7, Data: []byte("noop")}
			must(t, l.Append(e))
			fx.entries = append(fx.entries, e)
			term++
			continue
		}
		var recs []testRec
		n := 1 + i%4
		for r := 0; r < n; r++ {
			key := fmt.Sprintf("k%d", (i*3+r)%8)
			value := []byte(fmt.Sprintf("v%d.%d", i, r))
			if (i+r)%11 == 0 {
				value = nil // tombstone
			}
			recs = append(recs, testRec{key: []byte(key), value: value})
		}
		ts := int64(oldTs)
		if i >= 45 {
			ts = newTs
		}
		base := l.NextOffset()
		e := Entry{Index: l.LastIndex() + 1, Term: term, Kind: KindBatch, Data: makeBatch(t, base, ts, codec, recs)}
		must(t, l.Append(e))
		fx.entries = append(fx.entries, e)
		for r, rec := range recs {
			fx.all[base+int64(r)] = keyedValue{offset: base + int64(r), key: string(rec.key), value: rec.value, ts: ts}
		}
	}
	must(t, l.Sync())
	if len(l.segs) < 4 {
		t.Fatalf("fixture has %d segments", len(l.segs))
	}
	fx.lastClean = l.segs[len(l.segs)-2].last
	for off := int64(0); off < l.segs[len(l.segs)-2].nextOffset; off++ {
		if kv, ok := fx.all[off]; ok {
			fx.latest[kv.key] = kv
		}
	}
	return l, fx, opts
}

func runCleaner(t *testing.T, l *Log, now time.Time, step int) int {
	t.Helper()
	cfg := CleanConfig{DeleteRetentionMs: 1_000_000, BytesPerStepMax: step}
	for steps := 1; ; steps++ {
		done, err := l.CleanStep(now, cfg, l.LastIndex()+1)
		must(t, err)
		if done {
			return steps
		}
		if steps > 10000 {
			t.Fatal("cleaner does not finish")
		}
	}
}

type cleanState int

const (
	notCleaned cleanState = iota
	maybeCleaned
	fullyCleaned
)

// checkCompacted checks what compaction must keep (identity of every entry,
// offsets, timestamps, every record's content) and, per state, which records
// must or must not remain.
func checkCompacted(t *testing.T, l *Log, fx *compactionFixture, state cleanState) {
	t.Helper()
	got := allEntries(t, l)
	if len(got) != len(fx.entries) {
		t.Fatalf("%d entries, want %d", len(got), len(fx.entries))
	}
	seen := map[int64]bool{}
	for k, e := range got {
		want := fx.entries[k]
		if e.Index != want.Index || e.Term != want.Term || e.Kind != want.Kind {
			t.Fatalf("entry %d changed identity", want.Index)
		}
		if e.Kind != KindBatch {
			if string(e.Data) != string(want.Data) {
				t.Fatalf("control entry %d changed", e.Index)
			}
			continue
		}
		gh, err := records.Verify(e.Data)
		if err != nil {
			t.Fatalf("entry %d after compaction: %v", e.Index, err)
		}
		wh, _ := records.ParseBatch(want.Data)
		if gh.BaseOffset != wh.BaseOffset || gh.LastOffsetDelta != wh.LastOffsetDelta || gh.MaxTimestamp != wh.MaxTimestamp {
			t.Fatalf("entry %d: batch offsets or timestamp changed", e.Index)
		}
		must(t, records.Records(e.Data, func(r records.Record) error {
			off := gh.BaseOffset + int64(r.OffsetDelta)
			orig, ok := fx.all[off]
			if !ok || orig.key != string(r.Key) || string(orig.value) != string(r.Value) || (orig.value == nil) != (r.Value == nil) {
				t.Fatalf("record at %d is not the one produced there", off)
			}
			seen[off] = true
			return nil
		}))
	}
	activeBase := l.segs[len(l.segs)-1].baseOffset
	for off, kv := range fx.all {
		latest := fx.latest[kv.key].offset == off
		oldTombstone := kv.value == nil && kv.ts < newTs
		mustStay := off >= activeBase || state == notCleaned || (latest && !oldTombstone)
		mustGo := state == fullyCleaned && off < activeBase && (!latest || oldTombstone)
		switch {
		case mustStay && !seen[off]:
			t.Fatalf("record %s at %d vanished (state %d)", kv.key, off, state)
		case mustGo && seen[off]:
			t.Fatalf("record %s at %d survived compaction", kv.key, off)
		}
	}
	// The Kafka view reads end to end.
	readAllBatches(t, l)
}

func TestCompactionKeepsLatestPerKey(t *testing.T) {
	for codec, name := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(name, func(t *testing.T) {
			fsys := newSim(20)
			l, fx, opts := buildCompactionLog(t, fsys, records.Codec(codec))
			sizeBefore := l.Stats().SizeBytes
			runCleaner(t, l, time.UnixMilli(oldTs+2_000_000), 1<<20)
			checkCompacted(t, l, fx, fullyCleaned)
			st := l.Stats()
			if st.Cleaner.Passes != 1 || st.Cleaner.RecordsRemoved == 0 || st.SizeBytes >= sizeBefore {
				t.Fatalf("cleaner stats %+v, size %d -> %d", st.Cleaner, sizeBefore, st.SizeBytes)
			}
			// A second pass has nothing new to do; reopening keeps it all.
			if done, err := l.CleanStep(time.UnixMilli(oldTs+2_000_000), CleanConfig{}, l.LastIndex()+1); !done || err != nil {
				t.Fatalf("second pass: done %v err %v", done, err)
			}
			must(t, l.Close())
			l, rec := openLog(t, fsys, opts)
			if rec.Reason != "" || rec.IndexesRebuilt != 0 {
				t.Fatalf("reopen after compaction: %+v", rec)
			}
			checkCompacted(t, l, fx, fullyCleaned)
		})
	}
}

func TestCompactionCrashAtEveryStep(t *testing.T) {
	const step = 700 // bytes per step: several steps per segment
	now := time.UnixMilli(oldTs + 2_000_000)
	fsys := newSim(21)
	l, _, _ := buildCompactionLog(t, fsys, records.CodecNone)
	total := runCleaner(t, l, now, step)
	if total < 10 {
		t.Fatalf("only %d steps: make them smaller", total)
	}
	crash := func(t *testing.T, fsys *SimFS, mode CrashMode, fx *compactionFixture, opts Options) {
		fsys.CrashWith(mode)
		l, rec := openLog(t, fsys, opts)
		if rec.Corrupt || rec.EntriesCut != 0 {
			t.Fatalf("recovery after a cleaner crash cut entries: %+v", rec)
		}
		checkCompacted(t, l, fx, maybeCleaned)
		runCleaner(t, l, now, 1<<20)
		checkCompacted(t, l, fx, fullyCleaned)
	}
	for k := 0; k <= total; k++ {
		for _, mode := range []CrashMode{CrashLoseAll, CrashKeepAll, CrashRandom} {
			fsys := newSim(int64(100 + k))
			l, fx, opts := buildCompactionLog(t, fsys, records.CodecNone)
			cfg := CleanConfig{DeleteRetentionMs: 1_000_000, BytesPerStepMax: step}
			for i := 0; i < k; i++ {
				_, err := l.CleanStep(now, cfg, l.LastIndex()+1)
				must(t, err)
			}
			crash(t, fsys, mode, fx, opts)
		}
	}
	// Crashes inside a segment swap: after the new segment is renamed in but
	// before its index is, and before the directory sync.
	for _, fault := range []struct {
		op   Op
		name string
	}{{OpRename, ""}, {OpRename, "idx"}, {OpSyncDir, ""}} {
		for _, mode := range []CrashMode{CrashLoseAll, CrashKeepAll} {
			fsys := newSim(22)
			l, fx, opts := buildCompactionLog(t, fsys, records.CodecNone)
			name := ""
			if fault.name == "idx" {
				name = "p0/" + indexName(l.segs[0].name) + ".tmp"
			}
			fsys.FailNext(fault.op, name, nil)
			var err error
			for i := 0; i < 1000 && err == nil; i++ {
				_, err = l.CleanStep(now, CleanConfig{DeleteRetentionMs: 1_000_000, BytesPerStepMax: step}, l.LastIndex()+1)
			}
			if !errors.Is(err, ErrInjected) && !errors.Is(err, ErrFailed) {
				t.Fatalf("fault %v %q: cleaner returned %v", fault.op, fault.name, err)
			}
			crash(t, fsys, mode, fx, opts)
		}
	}
}

func TestCompactionRestartsWhenTheLogChanges(t *testing.T) {
	fsys := newSim(23)
	l, fx, _ := buildCompactionLog(t, fsys, records.CodecNone)
	cfg := CleanConfig{DeleteRetentionMs: 1_000_000, BytesPerStepMax: 500}
	now := time.UnixMilli(oldTs + 2_000_000)
	for i := 0; i < 5; i++ {
		_, err := l.CleanStep(now, cfg, l.LastIndex()+1)
		must(t, err)
	}
	// A truncation in the middle of a pass: the pass restarts.
	last := l.LastIndex()
	must(t, l.TruncateAfter(last-1))
	fx.entries = fx.entries[:len(fx.entries)-1]
	runCleaner(t, l, now, 500)
	if l.Stats().Cleaner.PassesAborted != 1 {
		t.Fatalf("aborted passes: %d", l.Stats().Cleaner.PassesAborted)
	}
	got := allEntries(t, l)
	if len(got) != len(fx.entries) {
		t.Fatalf("%d entries, want %d", len(got), len(fx.entries))
	}
}
