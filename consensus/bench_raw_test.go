package consensus

import (
	"strconv"
	"testing"
)

// BenchmarkProposals3NodesDirect: committed proposals per second for one
// 3-node group, RawNodes alone: MemoryStorage, messages encoded, decoded
// and delivered in the same loop. This is the Raft core's own cost; see
// BenchmarkProposals3Nodes for the whole simulated stack.
func BenchmarkProposals3NodesDirect(b *testing.B) {
	for _, window := range []int{1, 64, 1024} {
		b.Run("window="+strconv.Itoa(window), func(b *testing.B) {
			benchProposalsDirect(b, window)
		})
	}
}

func benchProposalsDirect(b *testing.B, window int) {
	nodes := make([]*RawNode, 3)
	stores := make([]*MemoryStorage, 3)
	for i := range nodes {
		nodes[i], stores[i] = newTestRawNode(b, uint64(i+1), 1, 2, 3)
	}
	var inbox [][]byte
	var inboxTo []int
	handle := func(i int) {
		rn := nodes[i]
		if !rn.HasReady() {
			return
		}
		rd := persistAndAdvance(b, rn, stores[i])
		for _, m := range append(rd.Messages, rd.MessagesAfterPersist...) {
			inbox = append(inbox, m.Marshal())
			inboxTo = append(inboxTo, int(m.To-1))
		}
	}
	deliver := func() {
		for len(inbox) > 0 {
			msgs, tos := inbox, inboxTo
			inbox, inboxTo = nil, nil
			for k, buf := range msgs {
				m, err := UnmarshalMessage(buf)
				if err != nil {
					b.Fatal(err)
				}
				_ = nodes[tos[k]].Step(m)
			}
			for i := range nodes {
				handle(i)
			}
		}
	}
	nodes[0].Campaign()
	for i := 0; i < 3; i++ {
		handle(0)
		deliver()
	}
	if nodes[0].Status().RaftState != StateLeader {
		b.Fatal("no leader")
	}
	data := make([]byte, 100)
	base := nodes[0].Status().Commit
	proposed, committed := 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	for committed < b.N {
		for proposed-committed < window && proposed < b.N {
			if _, _, err := nodes[0].Propose(EntryNormal, data); err != nil {
				b.Fatal(err)
			}
			proposed++
		}
		for i := range nodes {
			handle(i)
		}
		deliver()
		committed = int(nodes[0].raft.log.committed - base)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "proposals/s")
}
