package node

import (
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/assert"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkRestartOpen1000, 5000 and 10000 restart (crash and boot) a
// one-broker simulated cluster holding a topic of that many partitions
// and run it until every partition has a leader again: the wall time of
// the reactor's start-up path (reconcile opening the replicas, their
// logs' recovery, the first elections) on the simulator's in-memory disk.
// The metrics are per restart: sim-ms is the simulated time it took,
// visits the partitions reconcile's walks visited, walks the walks,
// group-visits the groups the reactor's process passes visited (the
// count that was quadratic in the partitions). Assertions are off, as in
// production: with them on, every pass checks every group
// (node/workset.go checkWorkSet). docs/benchmarks.md has the figures.
func BenchmarkRestartOpen1000(b *testing.B)  { benchmarkRestartOpen(b, 1000) }
func BenchmarkRestartOpen5000(b *testing.B)  { benchmarkRestartOpen(b, 5000) }
func BenchmarkRestartOpen10000(b *testing.B) { benchmarkRestartOpen(b, 10000) }

func benchmarkRestartOpen(b *testing.B, partitions int32) {
	defer assert.Set(assert.Set(false))
	c := newCluster(b, 1, 21)
	c.waitReady()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "many", partitions, 1
	req.Topics = append(req.Topics, rt)
	resp := c.request(1, req).(*kmsg.CreateTopicsResponse)
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && err != kerr.RequestTimedOut {
		b.Fatalf("create: %v", err)
	}
	waitAllLed(b, c, partitions)
	var simTime time.Duration
	var visits, walks, groupVisits uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.nodes[1].boot()
		start := c.clk.Monotonic()
		before, _ := c.nodes[1].r.Stats()
		waitAllLed(b, c, partitions)
		simTime += c.clk.Monotonic() - start
		st, _ := c.nodes[1].r.Stats()
		visits += st.ReconcileVisits
		walks += st.ReconcileWalks
		groupVisits += st.ProcessVisits - before.ProcessVisits
	}
	b.ReportMetric(float64(simTime.Milliseconds())/float64(b.N), "sim-ms/op")
	b.ReportMetric(float64(visits)/float64(b.N), "visits/op")
	b.ReportMetric(float64(walks)/float64(b.N), "walks/op")
	b.ReportMetric(float64(groupVisits)/float64(b.N), "group-visits/op")
}

// waitAllLed runs until node 1 has every partition of topic "many" open
// with a known leader. It checks the partitions from the first one
// without a leader on, so that the check itself stays linear.
func waitAllLed(b *testing.B, c *cluster, partitions int32) {
	b.Helper()
	next := int32(0)
	led := func() bool {
		r := c.nodes[1].r
		for ; next < partitions; next++ {
			p, ok := r.byName[topicPartition{"many", next}]
			if !ok || p.Leader() == 0 {
				return false
			}
		}
		return true
	}
	if !c.runUntil(time.Duration(partitions)*time.Second, led) {
		b.Fatalf("%d of %d partitions led", next, partitions)
	}
}
