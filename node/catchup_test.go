package node

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// askNow sends req to node id and returns its answer if it came at once
// (nil if the answer waits for the clock).
func askNow(c *cluster, id int32, req kmsg.Request) kmsg.Response {
	var resp kmsg.Response
	c.nodes[id].r.HandleRequest(Client{ClientID: "test"}, req, func(r kmsg.Response) { resp = r })
	return resp
}

func metadataReq(topic string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	return req
}

// Issue 13, bug 8: a restarted broker whose metadata has not caught up
// with the controller must not deny a topic created while it was down:
// clients give up on UNKNOWN_TOPIC_OR_PARTITION (franz-go after four
// answers). Its answers are retriable (Metadata LEADER_NOT_AVAILABLE,
// Produce NOT_LEADER_OR_FOLLOWER) until it knows the topic, and it is not
// ready meanwhile. The old readiness (its own commit index applied) was
// satisfied before the leader had sent it the entries it lacked.
func TestRestartedBrokerNeverDeniesAnExistingTopic(t *testing.T) {
	c := newCluster(t, 3, 31)
	c.waitReady()
	c.nodes[3].crash()
	createTopic(t, c, 1, "late", 2, 3, nil)
	waitLeaders(t, c, "late", 2)
	c.nodes[1].crash()
	c.nodes[2].crash()
	c.nodes[3].boot()

	// check asks node 3 about "late" and reports whether it knows it.
	// (Right after the start, Metadata waits for the catch-up, up to 5 s:
	// an answer that comes later is checked when it comes.)
	check := func(phase string) bool {
		t.Helper()
		code := int16(-1)
		c.nodes[3].r.HandleRequest(Client{ClientID: "test"}, metadataReq("late"), func(r kmsg.Response) {
			code = r.(*kmsg.MetadataResponse).Topics[0].ErrorCode
			if code != 0 && code != kerr.LeaderNotAvailable.Code {
				t.Fatalf("%s: Metadata for an existing topic answered %v", phase, kerr.ErrorForCode(code))
			}
		})
		if resp := askNow(c, 3, produceReq("late", 1, -1, batchOf("x"))); resp != nil {
			if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code == kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("%s: Produce to an existing topic answered %v", phase, kerr.ErrorForCode(code))
			}
		}
		known := code == 0
		if ready, _ := c.nodes[3].r.Serving(); ready && !known {
			t.Fatalf("%s: ready without knowing topic late", phase)
		}
		return known
	}
	// Alone, node 3 has no controller quorum: its metadata is stale.
	for i := 0; i < 500; i++ {
		if check("alone") {
			t.Fatalf("node 3 knows a topic created while it was down, with no controller to learn it from")
		}
		c.runFor(2 * time.Millisecond)
	}
	// Node 1 returns: a controller leader, then catch-up, step by step.
	c.nodes[1].boot()
	caughtUp := false
	for i := 0; i < 200000 && !caughtUp; i++ {
		caughtUp = check("catching up")
		c.runFor(100 * time.Microsecond)
	}
	if !caughtUp {
		t.Fatalf("node 3 never learned topic late")
	}
	// Ready once every local replica has a leader (node 2 is still down:
	// "late" has a quorum of 1 and 3).
	if !c.runUntil(20*time.Second, func() bool { ok, _ := c.nodes[3].r.Serving(); return ok }) {
		_, why := c.nodes[3].r.Serving()
		t.Fatalf("node 3 not ready after catching up: %s", why)
	}
}

// Issue 13, bug 8: /readyz (Reactor.Serving) said ready while a local
// replica had no leader, so that partition answered
// NOT_LEADER_OR_FOLLOWER. Ready now means every local replica knows its
// leader: here a partition on brokers 1 and 2 only, with 2 down, can elect
// none, and broker 1 says so; broker 3, which holds no replica of it, is
// ready.
func TestReadyNeedsALeaderForEveryLocalReplica(t *testing.T) {
	c := newCluster(t, 3, 32)
	c.waitReady()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "pair", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{1, 2}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	if code := c.request(1, req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create pair: %v", kerr.ErrorForCode(code))
	}
	waitLeaders(t, c, "pair", 1)
	c.nodes[2].crash()
	// (Broker 2 may have led the controller: wait for a new one too.)
	var why string
	if !c.runUntil(20*time.Second, func() bool {
		var ok bool
		ok, why = c.nodes[1].r.Serving()
		return !ok && strings.Contains(why, "pair-0")
	}) {
		t.Fatalf("broker 1 not unready for pair-0, which cannot elect a leader (last reason %q)", why)
	}
	if !c.runUntil(20*time.Second, func() bool { ok, _ := c.nodes[3].r.Serving(); return ok }) {
		_, why := c.nodes[3].r.Serving()
		t.Fatalf("broker 3 (no replica of pair) not ready: %s", why)
	}
	if ok, why := c.nodes[1].r.Serving(); ok || !strings.Contains(why, "pair-0") {
		t.Fatalf("broker 1 ready %v (%q) while pair-0 has no leader", ok, why)
	}
	// Broker 2 returns: pair-0 elects, broker 1 is ready again.
	c.nodes[2].boot()
	if !c.runUntil(20*time.Second, func() bool { ok, _ := c.nodes[1].r.Serving(); return ok }) {
		_, why := c.nodes[1].r.Serving()
		t.Fatalf("broker 1 not ready once pair-0 can elect: %s", why)
	}
}

// TestRestartedBrokerListsEveryBroker: a broker restarted after another
// joined lists every broker in its first Metadata and DescribeCluster
// answers. Its controller replica opens with what its own log holds (no
// broker 4), and its answers used to list that partial set until the
// leader's entries arrived; a client bootstrapping from it took three
// brokers for the cluster. The answers now wait for the metadata catch-up.
// With no controller quorum to catch up from, they still come (the hold
// is bounded) with what the broker has.
func TestRestartedBrokerListsEveryBroker(t *testing.T) {
	c := newCluster(t, 3, 41)
	c.waitReady()
	c.nodes[3].crash()
	c.addNode(4)
	c.waitReady()
	c.nodes[3].boot()

	// The first requests, made at once on the new incarnation.
	var md *kmsg.MetadataResponse
	var dc *kmsg.DescribeClusterResponse
	c.nodes[3].r.HandleRequest(Client{ClientID: "test"}, kmsg.NewPtrMetadataRequest(),
		func(r kmsg.Response) { md, _ = r.(*kmsg.MetadataResponse) })
	dreq := kmsg.NewPtrDescribeClusterRequest()
	dreq.Version, dreq.EndpointType = 1, endpointTypeBrokers
	c.nodes[3].r.HandleRequest(Client{ClientID: "test"}, dreq,
		func(r kmsg.Response) { dc, _ = r.(*kmsg.DescribeClusterResponse) })
	if !c.runUntil(30*time.Second, func() bool { return md != nil && dc != nil }) {
		t.Fatal("the restarted broker did not answer Metadata and DescribeCluster")
	}
	if len(md.Brokers) != 4 || len(dc.Brokers) != 4 {
		t.Fatalf("the restarted broker lists %d brokers in Metadata and %d in DescribeCluster, want 4 (of 4)",
			len(md.Brokers), len(dc.Brokers))
	}

	// Alone (no controller quorum), a restarted broker still answers.
	for _, id := range []int32{1, 2, 4} {
		c.nodes[id].crash()
	}
	c.nodes[3].crash()
	c.nodes[3].boot()
	if _, ok := c.request(3, kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); !ok {
		t.Fatal("the lone restarted broker did not answer Metadata")
	}
}
