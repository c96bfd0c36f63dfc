package partition

import (
	"bytes"
	"testing"

	"github.com/floe-broker/floe/node/records"
)

// dayMs is Kafka's default producer.id.expiration.ms.
const dayMs = int64(24 * 3600 * 1000)

// batchAt builds a batch of n records whose timestamps are all tsMs; pid < 0
// means no producer.
func batchAt(pid int64, epoch int16, seq int32, n int, tsMs int64) ([]byte, records.Header) {
	return buildBatch(pid, epoch, seq, n, tsMs, 0)
}

// appendAt appends a batch stamped tsMs on the rig's leader.
func (r *rig) appendAt(pid int64, epoch int16, seq int32, n int, tsMs int64) (AppendResult, error) {
	b, h := batchAt(pid, epoch, seq, n, tsMs)
	return r.p.Append(b, h, r.now)
}

func mustAppendAt(t *testing.T, r *rig, pid int64, epoch int16, seq int32, n int, tsMs int64) AppendResult {
	t.Helper()
	res, err := r.appendAt(pid, epoch, seq, n, tsMs)
	if err != nil {
		t.Fatalf("append pid %d epoch %d seq %d at %d: %v", pid, epoch, seq, tsMs, err)
	}
	return res
}

// Issue 13, bug 7: producer ids never expired, so every idempotent client
// instance that ever wrote to a partition stayed in its table (and in every
// checkpoint) for ever. With Kafka's default producer.id.expiration.ms (one
// day), a producer whose last batch is a day older than the log's time is
// forgotten; the log's time is the largest batch timestamp applied, so every
// replica forgets it at the same entry.
func TestProducerIDsExpireByLogTime(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.lead()
	t0 := int64(1_700_000_000_000)
	const producers = 50
	for pid := int64(0); pid < producers; pid++ {
		mustAppendAt(t, r, pid, 0, 0, 2, t0)
	}
	r.drive()
	if n := r.p.applied.Len(); n != producers {
		t.Fatalf("%d producers before any expiry, want %d", n, producers)
	}
	// Producer 7 writes again within the day; traffic without a producer
	// id moves the log's time on to a day after the others' last batch.
	mustAppendAt(t, r, 7, 0, 2, 1, t0+dayMs-1)
	mustAppendAt(t, r, -1, 0, 0, 1, t0+dayMs)
	r.drive()
	if n := r.p.applied.Len(); n != 1 {
		t.Fatalf("%d producers a day after the last batch of all but one, want 1 (producer 7)", n)
	}
	if _, ok := r.p.applied.Get(7); !ok {
		t.Fatalf("producer 7, active within the day, expired")
	}
	// Producer 7 still gets duplicates answered with the original offset.
	dup := mustAppendAt(t, r, 7, 0, 2, 1, t0+dayMs)
	if !dup.Duplicate {
		t.Fatalf("retry of producer 7's last batch: %+v, want a duplicate", dup)
	}

	// An expired producer that comes back where it left off (sequence 2) is
	// accepted, as Kafka 2.5+ does for a producer it has no state of
	// (ProducerAppendInfo: "accept writes with any sequence number").
	back := mustAppendAt(t, r, 3, 0, 2, 1, t0+dayMs+1)
	if back.Duplicate {
		t.Fatalf("expired producer's next batch answered as a duplicate: %+v", back)
	}
	mustAppendAt(t, r, 3, 0, 3, 1, t0+dayMs+2) // and its history starts again there
	r.drive()
	if n := r.p.applied.Len(); n != 2 {
		t.Fatalf("%d producers, want 2 (7 and 3)", n)
	}

	// A restart rebuilds the same table from the log.
	cp := r.p.Checkpoint()
	r.restart()
	r.lead() // commits (and so applies) the whole log again
	if !bytes.Equal(r.p.Checkpoint(), cp) {
		t.Fatalf("restart changed the producer table: %d producers", r.p.applied.Len())
	}
}
