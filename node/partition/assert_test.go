package partition

import (
	"testing"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/assert"
	"github.com/floe-broker/floe/node/records"
	"github.com/floe-broker/floe/node/replica"
)

// Applying a batch the log does not hold (a bug in whoever hands entries
// to Apply) would put the high watermark past the log's end: with
// assertions on it stops the test; off, it goes unchecked as before.
func TestHighWatermarkPastLogEndAsserts(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.lead()
	mustAppend(t, r, -1, 0, 0, 2)
	r.drive()
	next := r.rep.NextOffset()
	if hw := r.p.HighWatermark(); hw != next {
		t.Fatalf("high watermark %d, log's next offset %d", hw, next)
	}
	b, _ := batch(-1, 0, 0, 3)
	records.SetBaseOffset(b, next+10) // a batch the log never got
	stray := consensus.Entry{Index: r.rep.LastIndex() + 1, Term: r.p.Term(), Type: replica.EntryBatch, Data: b}
	if v := assert.Catch(func() { r.p.Apply(stray) }); v == nil {
		t.Fatalf("the high watermark went past the log's end (%d > %d) and no assertion fired", r.p.HighWatermark(), next)
	}

	defer assert.Set(assert.Set(false))
	if v := assert.Catch(func() { r.p.Apply(stray) }); v != nil {
		t.Fatalf("an assertion fired with assertions off: %v", v)
	}
}
