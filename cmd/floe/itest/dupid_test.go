package itest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestJoinWithDuplicateIDRefused is issue 23's "joining with a duplicate
// id": a second process started with --join and the id of a live
// registered broker is refused by the controller, logs why and exits
// non-zero, and the cluster is unchanged: the first broker keeps its
// address in the broker list and keeps serving.
func TestJoinWithDuplicateIDRefused(t *testing.T) {
	allowLonger(t, 5*time.Minute)
	bs := startCluster(t, 3)
	before := floe(t, "broker", "list", "--brokers", bs[0].KafkaAddr)
	if !strings.Contains(before, bs[1].KafkaAddr) {
		t.Fatalf("broker list lacks broker 2 (%s):\n%s", bs[1].KafkaAddr, before)
	}

	dup := StartBroker(t, WithBinary(floeBin), WithNodeID(2), WithRaftAddr(FreeAddr(t)),
		WithFlags("--join", bs[0].RaftAddr), NoWait())
	waitFor(t, 90*time.Second, "the duplicate broker 2 to exit", func() bool { return !dup.Running() })
	if dup.LastExitClean() {
		t.Fatalf("the duplicate exited 0, want non-zero; exits %v", dup.Exits())
	}
	if tail := dup.LogTail(); !strings.Contains(tail, "broker id 2 is registered by a live broker") {
		t.Fatalf("the duplicate's log lacks the refusal:\n%s", tail)
	}

	if code, why := readyz(bs[1]); code != 200 {
		t.Fatalf("broker 2 after the refused duplicate: /readyz %d %s", code, why)
	}
	after := floe(t, "broker", "list", "--brokers", bs[0].KafkaAddr)
	if after != before {
		t.Fatalf("a refused duplicate changed the broker list:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// Broker 2 still serves: a topic led by it takes a write and reads it back.
	createAssigned(t, bs[1].KafkaAddr, "dupid", [][]int32{{2, 1, 3}})
	cl := kgoClient(t, bs[1].KafkaAddr, kgo.SeedBrokers(seeds(bs)...), kgo.RequiredAcks(kgo.AllISRAcks()))
	res := cl.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Topic: "dupid", Value: []byte("after the duplicate")})
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce to the partition broker 2 leads: %v", err)
	}
}

// TestJoinNamingTheDuplicatedBrokerRefused: a second process with the id
// of live broker 2 and a --join naming broker 2 itself. Broker 2's
// transport once refused the connection (a sender with its own id) and
// the duplicate waited for an answer forever; now broker 2 refuses the
// join, and the duplicate logs why and exits non-zero, and broker 2 keeps
// its place in the broker list.
func TestJoinNamingTheDuplicatedBrokerRefused(t *testing.T) {
	allowLonger(t, 5*time.Minute)
	bs := startCluster(t, 3)
	before := floe(t, "broker", "list", "--brokers", bs[0].KafkaAddr)
	dup := StartBroker(t, WithBinary(floeBin), WithNodeID(2), WithRaftAddr(FreeAddr(t)),
		WithFlags("--join", bs[1].RaftAddr), NoWait())
	waitFor(t, 90*time.Second, "the duplicate broker 2 to exit", func() bool { return !dup.Running() })
	if dup.LastExitClean() {
		t.Fatalf("the duplicate exited 0, want non-zero; exits %v", dup.Exits())
	}
	if tail := dup.LogTail(); !strings.Contains(tail, "broker id 2 is registered by a live broker at "+bs[1].RaftAddr) {
		t.Fatalf("the duplicate's log lacks the refusal:\n%s", tail)
	}
	if code, why := readyz(bs[1]); code != 200 {
		t.Fatalf("broker 2 after the refused duplicate: /readyz %d %s", code, why)
	}
	if after := floe(t, "broker", "list", "--brokers", bs[0].KafkaAddr); after != before {
		t.Fatalf("a refused duplicate changed the broker list:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestReplaceJoinedBrokerAtOnce: a broker that joined with --join is
// killed, its data directory emptied, and started again at once with the
// same id and addresses, sooner than the controller leader stops hearing
// from the old process. Its first joins may be refused as a duplicate; it
// must still come back (it is told the peers with the refusal, answers the
// leader, and registers its new incarnation) rather than exit.
func TestReplaceJoinedBrokerAtOnce(t *testing.T) {
	allowLonger(t, 5*time.Minute)
	bs := startCluster(t, 3)
	j := StartBroker(t, WithBinary(floeBin), WithNodeID(4), WithRaftAddr(FreeAddr(t)),
		WithFlags("--join", bs[0].RaftAddr))
	waitFor(t, 60*time.Second, "broker 4 in the broker list", func() bool {
		out, err := exec.Command(floeBin, "broker", "list", "--brokers", bs[0].KafkaAddr).Output()
		return err == nil && strings.Contains(string(out), j.KafkaAddr)
	})
	j.Kill()
	if err := os.RemoveAll(j.DataDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(j.DataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	j.Restart()
	j.WaitReady() // ready: it follows a controller leader, and refusals no longer count
	if code, why := readyz(j); code != 200 {
		t.Fatalf("the replaced broker 4: /readyz %d %s", code, why)
	}
}
