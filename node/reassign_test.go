package node

import (
	"slices"

	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func reassign(t *testing.T, c *cluster, via int32, topic string, partition int32, replicas []int32) {
	t.Helper()
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = partition, replicas
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := c.request(via, req).(*kmsg.AlterPartitionAssignmentsResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("reassign: %v", kerr.ErrorForCode(code))
	}
}

// createOnReplicas creates topic, one partition placed on replicas (an
// explicit assignment, so the test knows which broker a move adds and
// which it drops), through broker via, and waits for its leader.
func createOnReplicas(t *testing.T, c *cluster, via int32, topic string, replicas []int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	if code := c.request(via, req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	waitLeaders(t, c, topic, 1)
}

func TestReassignUnderTraffic(t *testing.T) {
	c := newCluster(t, 4, 21)
	c.waitReady()
	createOnReplicas(t, c, 1, "mv", []int32{1, 2, 3})

	var acked []string
	produceSome := func(n int, tag string) {
		for i := 0; i < n; i++ {
			v := fmt.Sprintf("%s-%d", tag, i)
			for attempt := 0; attempt < 50; attempt++ {
				lead := leaderOf(c, "mv", 0)
				if lead == 0 {
					c.runFor(20 * time.Millisecond)
					continue
				}
				if sp := produce(c, lead, "mv", 0, -1, batchOf(v)); sp.ErrorCode == 0 {
					acked = append(acked, v)
					break
				}
				c.runFor(20 * time.Millisecond)
			}
		}
	}
	produceSome(20, "before")
	reassign(t, c, 4, "mv", 0, []int32{2, 3, 4})
	// Traffic keeps flowing while the group changes membership.
	done := func() bool {
		p := c.nodes[1].r.Metadata().Topics["mv"].Partitions[0]
		return p.Target == nil && fmt.Sprint(p.Replicas) == "[2 3 4]"
	}
	for round := 0; round < 200 && !done(); round++ {
		produceSome(1, fmt.Sprintf("during%d", round))
		c.runFor(50 * time.Millisecond)
	}
	if !done() {
		t.Fatalf("reassignment did not finish: %+v", c.nodes[1].r.Metadata().Topics["mv"].Partitions[0])
	}
	t.Logf("moved at %v simulated with %d records acknowledged", c.clk.Monotonic(), len(acked))
	produceSome(10, "after")
	c.runFor(500 * time.Millisecond)
	if _, ok := c.nodes[1].r.byName[topicPartition{"mv", 0}]; ok {
		t.Fatalf("node 1 still holds a replica after being moved off")
	}
	lead := leaderOf(c, "mv", 0)
	if lead == 1 || lead == 0 {
		t.Fatalf("leader %d after the move", lead)
	}
	got, _ := fetchAll(t, c, lead, "mv", 0)
	if fmt.Sprint(got) != fmt.Sprint(acked) {
		t.Fatalf("after reassignment read %d records, acknowledged %d\nread %v\nwant %v", len(got), len(acked), got, acked)
	}
	// Node 4 has every record itself.
	p4 := c.nodes[4].r.byName[topicPartition{"mv", 0}]
	if p4 == nil || p4.HighWatermark() != int64(len(acked)) {
		t.Fatalf("node 4 replica: %v", p4 != nil)
	}
}

func TestJoinThenMoveOntoNewBroker(t *testing.T) {
	c := newCluster(t, 3, 22)
	c.waitReady()
	createTopic(t, c, 1, "grow", 1, 3, nil)
	waitLeaders(t, c, "grow", 1)
	for i := 0; i < 5; i++ {
		if sp := produce(c, leaderOf(c, "grow", 0), "grow", 0, -1, batchOf(fmt.Sprint(i))); sp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
		}
	}
	c.addNode(4)
	c.waitReady() // waits for node 4 to be registered everywhere
	if conf := c.nodes[1].r.ctl.rep.Conf(); !slices.Contains(conf.Learners, 4) {
		t.Fatalf("node 4 is not a controller learner: %+v", conf)
	}
	reassign(t, c, 4, "grow", 0, []int32{1, 2, 4})
	if !c.runUntil(20*time.Second, func() bool {
		p := c.nodes[4].r.Metadata().Topics["grow"].Partitions[0]
		return p.Target == nil && fmt.Sprint(p.Replicas) == "[1 2 4]"
	}) {
		t.Fatalf("move onto the new broker did not finish")
	}
	p4 := c.nodes[4].r.byName[topicPartition{"grow", 0}]
	if p4 == nil || p4.HighWatermark() != 5 {
		t.Fatalf("node 4 replica missing or behind")
	}
}
