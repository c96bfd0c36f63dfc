package sim

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/sim/world"
)

// fatalStub is a node instance that exits, once, with err after a delay:
// only its first incarnation does (the test counts boots).
type fatalStub struct{}

func (fatalStub) Handle(netx.NodeID, []byte) {}
func (fatalStub) Stop()                      {}

// TestHealRestartsInjectedFatalExit: a node that fatally exits after the
// heal of a fault injected before it (seed 1403697: a failed fsync round
// reported behind an older pipelined round that completed after the heal)
// is restarted; one that exits of anything else is left down, for the run
// to report.
func TestHealRestartsInjectedFatalExit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		wantUp    bool
		wantBoots int
	}{
		{"injected", fmt.Errorf("fsync: sync x.log: %w", logstore.ErrInjected), true, 2},
		{"not-injected", errors.New("fsync: something else"), false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var boots int
			w := world.New(world.Config{Seed: 1, Nodes: 1}, func(env world.Env) world.Instance {
				boots++
				if boots == 1 {
					env.Sched.After(10*time.Millisecond, func() { env.Fatal(tc.err) })
				}
				return fatalStub{}
			})
			n := &nemesis{w: w}
			n.superviseAfterHeal() // the heal, before the exit
			w.RunFor(time.Second)
			if got := w.Up(1); got != tc.wantUp {
				t.Fatalf("node up=%v a second after its fatal exit (%v), want %v", got, tc.err, tc.wantUp)
			}
			if boots != tc.wantBoots {
				t.Fatalf("node booted %d times, want %d", boots, tc.wantBoots)
			}
		})
	}
}
