package node

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkSimulatedAckLatency measures the protocol's own acks=all
// latency, in simulated time, for a 3-node RF=3 partition under a steady
// stream of produce requests: fsync takes 300µs and a network hop
// 100-500µs, CPU is free. It counts the fsync rounds and round trips an
// acknowledgement waits for, with none of a shared machine's noise; the
// real figures are in docs/benchmarks.md.
func BenchmarkSimulatedAckLatency(b *testing.B) {
	for _, gap := range []time.Duration{100 * time.Microsecond, time.Millisecond} {
		b.Run(fmt.Sprintf("every=%v", gap), func(b *testing.B) {
			c := newCluster(b, 3, 31)
			c.waitReady()
			createTopicB(b, c, "lat", 1, 3)
			lead := int32(0)
			c.runUntil(10*time.Second, func() bool { lead = leaderOf(c, "lat", 0); return lead != 0 })
			var lats []time.Duration
			n := 2000
			for i := 0; i < n; i++ {
				sent := c.clk.Monotonic()
				req := kmsg.NewPtrProduceRequest()
				req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = "lat"
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Records = batchOf(fmt.Sprint(i))
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				c.nodes[lead].r.HandleRequest(Client{}, req, func(kmsg.Response) { lats = append(lats, c.clk.Monotonic()-sent) })
				c.runFor(gap)
			}
			c.runFor(time.Second)
			sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
			if len(lats) != n {
				b.Fatalf("%d of %d answered", len(lats), n)
			}
			b.ReportMetric(float64(lats[n/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lats[n*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(lats[n-1].Microseconds()), "max-µs")
		})
	}
}

func createTopicB(b *testing.B, c *cluster, name string, partitions int32, rf int16) {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	req.Topics = append(req.Topics, rt)
	if code := c.request(1, req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		b.Fatalf("create: %d", code)
	}
}
