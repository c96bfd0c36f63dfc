package itest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Issue 23's scale test with real processes: three brokers carry 100
// partitions at RF=3 under produce load; a 4th and a 5th join and, with
// no operator command, each broker comes to hold 60 ± 10% of the 300
// replicas and a fair share of the leaders (20 ± 5); then broker 2 is
// decommissioned and, once it holds nothing, stopped; the four left hold
// 75 ± 10% each. A final read
// checks every acknowledged write. FLOE_ITEST_LONG=1 runs it (several
// minutes on a loaded 2-core machine; make test runs the 30-partition
// TestClusterBalancerJoin instead).
func TestClusterScaleOutAndIn(t *testing.T) {
	if os.Getenv("FLOE_ITEST_LONG") == "" {
		t.Skip("100 partitions on 5 processes: set FLOE_ITEST_LONG=1")
	}
	const topic, partitions = "scale", 100
	bs := startCluster(t, 3)
	createReplicated(t, bs, topic, partitions, 3)
	log := newAckLog()
	w := startWriters(t, bs, topic, log, "a", "b")
	defer w.stop()
	all := append([]*Broker(nil), bs...)
	defer func() {
		if t.Failed() {
			for _, b := range all {
				t.Logf("broker %d log tail:\n%s", b.NodeID, b.LogTail())
			}
		}
	}()
	for _, id := range []int{4, 5} {
		all = append(all, StartBroker(t, WithBinary(floeBin), WithNodeID(id), WithRaftAddr(FreeAddr(t)),
			WithFlags("--join", bs[0].RaftAddr)))
	}
	adm := kadm.NewClient(kgoClient(t, bs[0].KafkaAddr, kgo.SeedBrokers(seeds(all)...)))
	began := time.Now()
	waitBalanced(t, adm, topic, []int32{1, 2, 3, 4, 5}, 54, 66, 15, 25)
	t.Logf("5 brokers balanced %v after the joins", time.Since(began).Round(time.Second))

	out, err := exec.Command(floeBin, "broker", "decommission", "2", "--brokers", bs[0].KafkaAddr).CombinedOutput()
	if err != nil {
		t.Fatalf("decommission broker 2: %v\n%s", err, out)
	}
	began = time.Now()
	waitBalanced(t, adm, topic, []int32{1, 3, 4, 5}, 67, 83, 19, 31) // broker 2 holds none of the 300
	t.Logf("broker 2 drained and 4 brokers balanced %v after the decommission", time.Since(began).Round(time.Second))
	// A controller voter (--peers) stays listed while it is one; the
	// others leave the broker list once empty.
	t.Logf("floe broker list:\n%s", floe(t, "broker", "list", "--brokers", bs[0].KafkaAddr))
	bs[1].Stop()
	rest := []*Broker{bs[0], bs[2], all[3], all[4]}
	log.waitForMore(t, 60*time.Second, "writes after broker 2 stopped", 50)
	w.stop()
	n := checkNoLossWithin(t, rest, topic, log, 3*time.Minute)
	t.Logf("%d writes acknowledged through the joins, moves and the decommission, none lost or duplicated", n)
}

// waitBalanced waits until each of ids holds between lo and hi replicas of
// topic and between leadLo and leadHi leaderships, no other broker holds
// any, and no reassignment is in flight.
func waitBalanced(t *testing.T, adm *kadm.Client, topic string, ids []int32, lo, hi, leadLo, leadHi int) {
	t.Helper()
	var replicas, leaders map[int32]int
	lastLog := time.Now()
	waitFor(t, 10*time.Minute, fmt.Sprintf("brokers %v to hold %d-%d replicas and %d-%d leaders each", ids, lo, hi, leadLo, leadHi), func() bool {
		if time.Since(lastLog) > 20*time.Second {
			lastLog = time.Now()
			t.Logf("so far: replicas per broker %v, leaders %v", replicas, leaders)
		}
		if moves, err := adm.ListPartitionReassignments(ctxFor(t, 5*time.Second), nil); err != nil || len(moves[topic]) > 0 {
			return false
		}
		md, err := adm.Metadata(ctxFor(t, 5*time.Second), topic)
		if err != nil {
			return false
		}
		replicas, leaders = map[int32]int{}, map[int32]int{}
		for _, p := range md.Topics[topic].Partitions {
			for _, r := range p.Replicas {
				replicas[r]++
			}
			leaders[p.Leader]++
		}
		total := 0
		for _, id := range ids {
			if replicas[id] < lo || replicas[id] > hi || leaders[id] < leadLo || leaders[id] > leadHi {
				return false
			}
			total += replicas[id]
		}
		return total == 300
	})
	t.Logf("replicas per broker %v, leaders %v", replicas, leaders)
}
