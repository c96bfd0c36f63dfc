package partition

import (
	"reflect"
	"testing"

	"github.com/floe-broker/floe/node/records"
)

// ActiveProducers reports committed state only: epoch, last sequence, the
// open transaction's first offset, which a marker clears, and the
// coordinator epoch of the last marker.
func TestActiveProducers(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.lead()
	// Batches stamped with the rig's clock, as the markers are: the log's
	// time then does not jump past producer.id.expiration.ms.
	nowMs := r.now.UnixMilli()
	mustAppendAt(t, r, 9, 2, 0, 3, nowMs) // idempotent, offsets 0-2, sequences 0-2
	b := records.Build(records.BuildOptions{BaseTimestamp: nowMs, Transactional: true,
		Producer: &records.Producer{ID: 7, Epoch: 1}}, []records.Record{{Value: []byte("a")}, {Value: []byte("b")}})
	h, err := records.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.p.Append(b, h, r.now); err != nil { // offsets 3-4
		t.Fatal(err)
	}
	if got := r.p.ActiveProducers(); len(got) != 0 {
		t.Fatalf("before anything committed: %+v", got)
	}
	r.drive()
	got := r.p.ActiveProducers()
	for i := range got {
		if got[i].LastMs <= 0 {
			t.Fatalf("producer %d without a time: %+v", got[i].ID, got[i])
		}
		got[i].LastMs = 0
	}
	want := []ActiveProducer{
		{ID: 7, Epoch: 1, LastSeq: 1, TxnStartOffset: 3, CoordEpoch: -1},
		{ID: 9, Epoch: 2, LastSeq: 2, TxnStartOffset: -1, CoordEpoch: -1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("open transaction: %+v, want %+v", got, want)
	}
	if _, err := r.p.AppendMarker(7, 1, true, 6, r.now); err != nil {
		t.Fatal(err)
	}
	r.drive()
	got = r.p.ActiveProducers()
	// The marker's coordinator epoch is reported: an admin's abort needs it.
	if len(got) != 2 || got[0].ID != 7 || got[0].TxnStartOffset != -1 || got[0].LastSeq != 1 || got[0].CoordEpoch != 6 || got[1].ID != 9 {
		t.Fatalf("after the commit marker: %+v", got)
	}
}
