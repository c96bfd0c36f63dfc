package consensus_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/floe-broker/floe/consensus"
)

// BenchmarkProposals3Nodes: committed proposals per second (wall clock) for
// one 3-node group on the simulator with zero network latency: RawNodes,
// the test WAL on SimFS, the message codec and SimNetwork, everything but
// the safety checks. Up to `window` proposals are outstanding at a time,
// so Readies batch them.
//
//	go test ./consensus -run XXX -bench Proposals3Nodes
func BenchmarkProposals3Nodes(b *testing.B) {
	for _, window := range []int{1, 64, 1024} {
		b.Run("window="+strconv.Itoa(window), func(b *testing.B) {
			benchProposals(b, window)
		})
	}
}

func benchProposals(b *testing.B, window int) {
	c := newCluster(1, false)
	c.opts = options{
		nodes: 3, tick: 10 * time.Millisecond, fsyncMax: time.Nanosecond,
		maxSizePerMsg: 1 << 20, maxInflight: 256,
		faultPhase: time.Hour, livePhaseMax: time.Hour,
	}
	c.noCheck = true
	c.boot()
	var leader *node
	for leader == nil {
		c.sim.Step()
		leader = c.leader()
	}
	data := make([]byte, 100)
	proposed, committed := 0, uint64(0)
	base := leader.rn.Status().Commit
	b.ReportAllocs()
	b.ResetTimer()
	for int(committed) < b.N {
		for proposed-int(committed) < window && proposed < b.N {
			if _, _, err := leader.rn.Propose(consensus.EntryNormal, data); err != nil {
				b.Fatal(err)
			}
			proposed++
		}
		leader.stepDone()
		// Run until the pipeline drains a little.
		for i := 0; i < 64 && c.sim.Step(); i++ {
		}
		committed = leader.rn.Status().Commit - base
		if c.err != nil || !leader.up || leader.rn.Status().RaftState != consensus.StateLeader {
			b.Fatalf("leader lost: %v", c.err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "proposals/s")
}
