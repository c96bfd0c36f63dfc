package itest

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterBalancerJoin is issue 23's scale-out check with real
// processes: 3 brokers carry 30 partitions at RF=3 under produce load, a
// 4th joins with --join and nothing else, and within a bounded wait the
// controller's balancer (on by default) has given it its share: every
// broker holds 22.5 ± 10% of the 90 replicas (21 to 24) and leads 7.5 ±
// 1.5 of the 30 partitions. Nothing acknowledged is lost. Before the join,
// decommissioning a broker whose replicas have nowhere to go is refused
// with a clear error and changes nothing.
func TestClusterBalancerJoin(t *testing.T) {
	bs := startCluster(t, 3)
	createReplicated(t, bs, "bal", 30, 3)
	log := newAckLog()
	w := startWriters(t, bs, "bal", log, "a")
	defer w.stop()

	// Bad input: three brokers in service for three replicas.
	out, err := exec.Command(floeBin, "broker", "decommission", "2", "--brokers", bs[0].KafkaAddr).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "cannot be decommissioned") {
		t.Fatalf("decommission with nowhere to move: err %v, output %s", err, out)
	}
	if list := floe(t, "broker", "list", "--brokers", bs[0].KafkaAddr); strings.Count(list, "127.0.0.1") != 3 {
		t.Fatalf("a refused decommission changed the broker list:\n%s", list)
	}

	joiner := StartBroker(t, WithBinary(floeBin), WithNodeID(4), WithRaftAddr(FreeAddr(t)),
		WithFlags("--join", bs[0].RaftAddr))
	all := append(bs[:3:3], joiner)
	adm := kadm.NewClient(kgoClient(t, bs[0].KafkaAddr, kgo.SeedBrokers(seeds(all)...)))
	sawMoves := false
	var replicas, leaders map[int32]int
	lastLog := time.Now()
	defer func() {
		if t.Failed() {
			for _, b := range all {
				t.Logf("broker log tail:\n%s", b.LogTail())
			}
		}
	}()
	waitFor(t, 180*time.Second, "broker 4 to take its share", func() bool {
		if time.Since(lastLog) > 15*time.Second {
			lastLog = time.Now()
			t.Logf("so far: replicas per broker %v, leaders %v", replicas, leaders)
		}
		if moves, err := adm.ListPartitionReassignments(ctxFor(t, 5*time.Second), nil); err == nil && len(moves["bal"]) > 0 {
			sawMoves = true
			return false
		}
		md, err := adm.Metadata(ctxFor(t, 5*time.Second), "bal")
		if err != nil {
			return false
		}
		replicas, leaders = map[int32]int{}, map[int32]int{}
		for _, p := range md.Topics["bal"].Partitions {
			for _, r := range p.Replicas {
				replicas[r]++
			}
			leaders[p.Leader]++
		}
		for id := int32(1); id <= 4; id++ {
			if replicas[id] < 21 || replicas[id] > 24 || leaders[id] < 6 || leaders[id] > 9 {
				return false
			}
		}
		return true
	})
	t.Logf("after the join: replicas per broker %v, leaders %v (moves seen in flight: %v)", replicas, leaders, sawMoves)
	var moves float64
	for _, b := range all {
		m := scrapeMetrics(t, b)
		moves += m[`floe_balancer_moves_total{kind="replica"}`]
	}
	if moves < 1 {
		t.Fatalf("balanced without floe_balancer_moves_total counting a replica move")
	}
	log.waitForMore(t, 30*time.Second, "writes after the moves", 50)
	w.stop()
	n := checkNoLoss(t, all, "bal", log)
	t.Logf("%d writes acknowledged across %v replica moves, none lost or duplicated", n, moves)
}
