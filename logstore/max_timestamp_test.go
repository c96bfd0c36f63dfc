package logstore

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/floe-broker/floe/node/records"
)

// TestMaxTimestampProperty checks MaxTimestamp against a naive model: every
// record's (offset, timestamp) in a list, scanned for the largest timestamp
// (the first of equals) within [start offset, limit). Batches have random
// timestamps, out of order within and across batches, in small segments,
// with every codec, a start offset raised into the middle of a batch, and
// limits anywhere (as the high watermark below an uncommitted tail).
func TestMaxTimestampProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		l, _ := openLog(rt, newSim(rapid.Int64().Draw(rt, "fsSeed")), Options{
			SegmentBytes:       int64(rapid.IntRange(300, 3000).Draw(rt, "segmentBytes")),
			IndexIntervalBytes: rapid.IntRange(64, 1024).Draw(rt, "indexInterval"),
		})
		type rec struct{ offset, ts int64 }
		var model []rec
		for b := range rapid.IntRange(0, 40).Draw(rt, "batches") {
			n := rapid.IntRange(1, 6).Draw(rt, "records")
			base := rapid.Int64Range(0, 60).Draw(rt, "baseTs") // narrow, so ties are common
			recs := make([]testRec, n)
			for i := range recs {
				recs[i] = testRec{key: []byte("k"), value: []byte(fmt.Sprint(b, i)), tsDelta: rapid.Int64Range(0, 20).Draw(rt, "delta")}
				model = append(model, rec{l.NextOffset() + int64(i), base + recs[i].tsDelta})
			}
			codec := records.Codec(rapid.IntRange(0, 4).Draw(rt, "codec"))
			e := Entry{Index: l.LastIndex() + 1, Term: 1, Kind: KindBatch, Data: makeBatch(rt, l.NextOffset(), base, codec, recs)}
			if err := l.Append(e); err != nil {
				rt.Fatalf("append: %v", err)
			}
		}
		next := l.NextOffset()
		start := rapid.Int64Range(0, next).Draw(rt, "start")
		if err := l.SetStartOffset(start); err != nil {
			rt.Fatalf("start offset %d: %v", start, err)
		}
		limit := rapid.Int64Range(0, next).Draw(rt, "limit")
		wantOff, wantTS, wantOK := int64(0), int64(-1), false
		for _, r := range model {
			if r.offset >= l.StartOffset() && r.offset < limit && (!wantOK || r.ts > wantTS) {
				wantOff, wantTS, wantOK = r.offset, r.ts, true
			}
		}
		off, ts, ok, err := l.MaxTimestamp(limit)
		if err != nil {
			rt.Fatalf("MaxTimestamp(%d): %v", limit, err)
		}
		if ok != wantOK || (ok && (off != wantOff || ts != wantTS)) {
			rt.Fatalf("MaxTimestamp(%d) with start %d = %d@%d %v; want %d@%d %v", limit, l.StartOffset(), off, ts, ok, wantOff, wantTS, wantOK)
		}
	})
}
