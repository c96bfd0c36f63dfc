package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Issue 22: a new partition's first leader is its preferred replica, it is
// in place when CreateTopics answers, and it stays there without a fault.

type seenBy struct {
	tp     topicPartition
	broker int32
}

// leaderWatch samples every broker's Metadata view of every partition of
// the watched topics at a fixed simulated interval and records each
// partition's first leader and any later change.
type leaderWatch struct {
	c       *cluster
	topics  []string
	first   map[topicPartition]int32
	seen    map[seenBy]int32 // the leader each broker named last
	changes []string
	stopped bool
}

func watchLeaders(c *cluster, every time.Duration) *leaderWatch {
	w := &leaderWatch{c: c, first: map[topicPartition]int32{}, seen: map[seenBy]int32{}}
	var sample func()
	sample = func() {
		if w.stopped {
			return
		}
		w.sample()
		c.clk.After(every, sample)
	}
	c.clk.After(every, sample)
	return w
}

func (w *leaderWatch) sample() {
	for _, id := range []int32{1, 2, 3} {
		n := w.c.nodes[id]
		if n == nil || n.r == nil {
			continue
		}
		st := n.r.Metadata()
		for _, name := range w.topics {
			t := st.Topics[name]
			if t == nil {
				continue
			}
			for i := range t.Partitions {
				p := &t.Partitions[i]
				lead, _ := n.r.partitionLeader(p)
				if lead < 0 {
					continue
				}
				tp := topicPartition{name, p.Index}
				if _, ok := w.first[tp]; !ok {
					w.first[tp] = lead
					if lead != p.Replicas[0] {
						w.changes = append(w.changes, fmt.Sprintf("%s-%d: first leader %d (seen by %d) is not the preferred replica %d",
							name, p.Index, lead, id, p.Replicas[0]))
					}
				}
				key := seenBy{tp, id}
				if prev, ok := w.seen[key]; ok && prev != lead {
					w.changes = append(w.changes, fmt.Sprintf("%s-%d: broker %d names leader %d after %d at %v",
						name, p.Index, id, lead, prev, w.c.clk.Monotonic()))
				}
				if first := w.first[tp]; first != lead {
					w.changes = append(w.changes, fmt.Sprintf("%s-%d: broker %d names leader %d, the first was %d",
						name, p.Index, id, lead, first))
				}
				w.seen[key] = lead
			}
		}
	}
}

func createReq(timeoutMs int32, names ...string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, timeoutMs
	for _, name := range names {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 6, 3
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// listNow asks a partition's leader (as the answering broker names it) for
// the partition's end offset, without letting simulated time pass.
func listNow(c *cluster, id int32, topic string, partition int32) (int16, int32) {
	var lead int32 = -1
	st := c.nodes[id].r.Metadata()
	if t := st.Topics[topic]; t != nil && int(partition) < len(t.Partitions) {
		lead, _ = c.nodes[id].r.partitionLeader(&t.Partitions[partition])
	}
	if lead < 0 {
		return kerr.LeaderNotAvailable.Code, lead
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 4
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	var code int16 = -1
	c.nodes[lead].r.HandleRequest(Client{ClientID: "test"}, req, func(r kmsg.Response) {
		code = r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode
	})
	return code, lead
}

func TestNewPartitionsGetPreferredLeaderOnce(t *testing.T) {
	c := newCluster(t, 3, 22)
	c.waitReady()
	w := watchLeaders(c, 20*time.Millisecond)
	// An auto-created topic takes the same path.
	w.topics = append(w.topics, "auto")
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.Version, mreq.AllowAutoTopicCreation = 9, true
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("auto")
	mreq.Topics = append(mreq.Topics, mt)
	c.request(2, mreq)
	for i := 0; i < 12; i++ {
		name := fmt.Sprintf("t%d", i)
		w.topics = append(w.topics, name)
		via := int32(i%3 + 1)
		resp := c.request(via, createReq(30000, name)).(*kmsg.CreateTopicsResponse)
		if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		// The answer comes once every partition has its leader: the
		// answering broker names it, and it serves at once.
		for p := int32(0); p < 6; p++ {
			if code, lead := listNow(c, via, name, p); code != 0 {
				t.Errorf("%s-%d right after CreateTopics via %d: leader %d answers ListOffsets with %v",
					name, p, via, lead, kerr.ErrorForCode(code))
			}
		}
	}
	// New partitions of an existing topic: CreatePartitions waits for
	// their leaders the same way.
	w.topics = append(w.topics, "grown")
	if resp := c.request(1, createReq(30000, "grown")).(*kmsg.CreateTopicsResponse); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create grown: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	preq := createPartitionsReq("grown", 12)
	preq.TimeoutMillis = 30000
	if resp := c.request(3, preq).(*kmsg.CreatePartitionsResponse); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("grow: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	for p := int32(6); p < 12; p++ {
		if code, lead := listNow(c, 3, "grown", p); code != 0 {
			t.Errorf("grown-%d right after CreatePartitions: leader %d answers ListOffsets with %v", p, lead, kerr.ErrorForCode(code))
		}
	}
	c.runFor(5 * time.Second)
	w.stopped = true
	for _, ch := range w.changes {
		t.Error(ch)
	}
	autoPartitions := len(c.nodes[1].r.Metadata().Topics["auto"].Partitions)
	if want := 12*6 + autoPartitions + 12; len(w.first) != want {
		t.Fatalf("saw leaders of %d partitions, want %d", len(w.first), want)
	}
}

// A preferred replica that is down when its partition is created does not
// hold the partition hostage: the next replica in the placement leads after
// a short wait, and once the preferred one is back, balancing hands
// leadership back to it.
func TestPreferredReplicaDownAtCreation(t *testing.T) {
	c := newCluster(t, 3, 23)
	c.waitReady()
	c.nodes[3].crash()
	resp := c.request(1, createReq(30000, "down")).(*kmsg.CreateTopicsResponse)
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create with broker 3 down: %v", err)
	}
	st := c.nodes[1].r.Metadata()
	var pinned []int32 // partitions whose preferred replica is broker 3
	for _, p := range st.Topics["down"].Partitions {
		if p.Leader < 0 {
			t.Fatalf("down-%d has no leader when CreateTopics answered", p.Index)
		}
		if p.Replicas[0] == 3 {
			pinned = append(pinned, p.Index)
			// The placement's order is the campaign order: the second
			// replica leads when the first is down.
			if p.Leader != p.Replicas[1] {
				t.Errorf("down-%d (replicas %v): leader %d, want the second replica", p.Index, p.Replicas, p.Leader)
			}
		}
	}
	if len(pinned) == 0 {
		t.Fatalf("placement gave broker 3 no preferred replica: %+v", st.Topics["down"].Partitions)
	}
	c.nodes[3].boot()
	ok := c.runUntil(30*time.Second, func() bool {
		for _, idx := range pinned {
			lp := c.nodes[3].r.byName[topicPartition{"down", idx}]
			if lp == nil || !c.nodes[3].r.leaseHeld(lp) {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("leadership of %v did not return to the preferred broker 3", pinned)
	}
}

// With a timeout of 0, CreateTopics answers once the creation is applied,
// without waiting for leaders (Kafka's behaviour); a positive timeout that
// passes before the leaders are in place answers REQUEST_TIMED_OUT.
func TestCreateTopicsLeaderWaitTimeout(t *testing.T) {
	c := newCluster(t, 3, 24)
	c.waitReady()
	resp := c.request(1, createReq(0, "now")).(*kmsg.CreateTopicsResponse)
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create with timeout 0: %v", err)
	}
	// One broker down and a 1 ms timeout: the topic is created, but its
	// leaders cannot all be in place in time.
	// Asked of the controller's leader, which decides at once (a forward
	// alone may take longer than 1 ms); another broker goes down.
	ctl := int32(c.nodes[1].r.controllerLeader())
	down := int32(3)
	if ctl == 3 {
		down = 2
	}
	c.nodes[down].crash()
	resp = c.request(ctl, createReq(1, "late")).(*kmsg.CreateTopicsResponse)
	if code := resp.Topics[0].ErrorCode; code != kerr.RequestTimedOut.Code {
		t.Fatalf("create with a 1 ms timeout: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
	}
	if resp.Topics[0].ErrorMessage == nil {
		t.Fatalf("REQUEST_TIMED_OUT without a message")
	}
	// The creation is committed even so: applied soon after the answer
	// (the answer may leave before the controller applied it).
	if !c.stepUntil(5*time.Second, func() bool { return c.nodes[ctl].r.Metadata().Topics["late"] != nil }) {
		t.Fatalf("the timed-out creation is never applied (controller leader %d)", ctl)
	}
}
