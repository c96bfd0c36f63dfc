package sim

import (
	"fmt"
	"math/rand"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
)

// Topic churn (issue 15, "more of the product under test"): in about a
// third of the seeds a topic, simchurn, is created, written, grown
// (CreatePartitions, up to 3 partitions), deleted and created again, over
// and over while the nemesis runs. Each creation is an incarnation; every
// value written names its incarnation, and a value counts for one only if
// its produce was acknowledged after that incarnation's creation was and
// before its deletion was asked (the workload waits for its produces
// before deleting).
//
// After the heal, once every broker's Metadata names the same topic id
// (the last incarnation), checked:
//
//   - topic-old-incarnation-data: no value acknowledged in an earlier
//     incarnation is read from the last one (a re-created topic starts
//     empty);
//   - topic-partitions-shrank: the last incarnation has at least as many
//     partitions as its acknowledged growth gave it.
//
// Reads during the run are not checked: Fetch goes by name (v11), and a
// broker that has not yet applied a deletion may still serve the old
// incarnation, as a Kafka broker without topic ids would.

const churnTopic = "simchurn"

// chooseTopics draws the churn workload from its own generator.
func chooseTopics(seed int64) bool {
	return rand.New(rand.NewSource(seed^0x70b1c)).Intn(3) == 0
}

type churn struct {
	r   *run
	rng *rand.Rand
	// inc is the current incarnation (0: none created yet), id its topic
	// id.
	inc        int
	id         [16]byte
	partitions int32
	n          int
	// ackedIn: value -> the incarnation it was acknowledged in.
	ackedIn  map[string]int
	inflight int
	ops      int // produces left before this incarnation is deleted
	created  int
	grown    int
}

func (r *run) startChurn() {
	if !r.o.Topics {
		return
	}
	c := &churn{r: r, rng: rand.New(rand.NewSource(r.o.Seed ^ 0x70b1d)), ackedIn: map[string]int{}}
	r.churn = c
	r.active++
	c.create()
}

func (c *churn) later(f func()) {
	c.r.w.After(10*time.Millisecond+time.Duration(c.rng.Int63n(int64(40*time.Millisecond))), f)
}

func (c *churn) stop() bool {
	if c.r.stopping {
		c.r.active--
		return true
	}
	return false
}

func (c *churn) create() {
	if c.stop() {
		return
	}
	r := c.r
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 5000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = churnTopic, 1, int16(min(3, r.o.Nodes))
	req.Topics = append(req.Topics, t)
	r.kn.call(r.meta.anyNode(), req, 6*time.Second, func(resp kmsg.Response, err error) {
		if err == nil {
			rt := resp.(*kmsg.CreateTopicsResponse).Topics[0]
			switch rt.ErrorCode {
			case 0:
				c.inc++
				c.id, c.partitions, c.ops = rt.TopicID, 1, 5+c.rng.Intn(20)
				c.created++
				r.cover("topic re-created")
				c.work()
				return
			case kerr.TopicAlreadyExists.Code:
				c.remove() // an earlier creation whose answer was lost
				return
			}
		}
		c.later(c.create)
	})
}

// work produces (and now and then grows the topic) until ops runs out,
// then deletes the incarnation once no produce is in flight.
func (c *churn) work() {
	if c.r.stopping {
		if c.inflight == 0 {
			c.r.active--
		}
		return
	}
	if c.ops <= 0 {
		if c.inflight == 0 {
			c.remove()
		}
		return
	}
	c.ops--
	if c.partitions < 3 && c.rng.Intn(8) == 0 {
		c.grow()
		return
	}
	c.produce(int32(c.rng.Intn(int(c.partitions))))
}

func (c *churn) grow() {
	r := c.r
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version, req.TimeoutMillis = 3, 5000
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = churnTopic, c.partitions+1
	req.Topics = append(req.Topics, rt)
	inc := c.inc
	r.kn.call(r.meta.anyNode(), req, 6*time.Second, func(resp kmsg.Response, err error) {
		if err == nil && c.inc == inc {
			if rs := resp.(*kmsg.CreatePartitionsResponse).Topics; len(rs) == 1 && rs[0].ErrorCode == 0 {
				c.partitions++
				c.grown++
				r.cover("partitions added to a topic")
			}
		}
		c.later(c.work)
	})
}

// produce writes one fresh value to part, through a broker's Metadata
// answer for the leader.
func (c *churn) produce(part int32) {
	r := c.r
	c.n++
	value := fmt.Sprintf("c%d-%d", c.inc, c.n)
	inc := c.inc
	c.inflight++
	finish := func() {
		c.inflight--
		c.later(c.work)
	}
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.Version, mreq.AllowAutoTopicCreation = 12, false
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(churnTopic)
	mreq.Topics = append(mreq.Topics, mt)
	r.kn.call(r.meta.anyNode(), mreq, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		leader := netx.NodeID(0)
		if err == nil {
			for _, t := range resp.(*kmsg.MetadataResponse).Topics {
				for _, p := range t.Partitions {
					if t.Topic != nil && *t.Topic == churnTopic && t.TopicID == c.id && p.Partition == part && p.ErrorCode == 0 && p.Leader > 0 {
						leader = netx.NodeID(p.Leader)
					}
				}
			}
		}
		if leader == 0 {
			finish()
			return
		}
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks = 9, -1
		req.TimeoutMillis = int32((r.o.RequestTimeout * 8 / 10).Milliseconds())
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = churnTopic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = part
		rp.Records = encodeBatch([]string{value}, r.w.Clock().Now().UnixMilli(), producerStamp{pid: -1})
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r.kn.call(leader, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
			if err == nil {
				for _, t := range resp.(*kmsg.ProduceResponse).Topics {
					for _, p := range t.Partitions {
						if p.ErrorCode == 0 {
							c.ackedIn[value] = inc
						}
					}
				}
			}
			finish()
		})
	})
}

// remove deletes the topic (by name), then creates it again.
func (c *churn) remove() {
	if c.stop() {
		return
	}
	r := c.r
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version, req.TimeoutMillis = 6, 5000
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = kmsg.StringPtr(churnTopic)
	req.Topics = append(req.Topics, rt)
	r.kn.call(r.meta.anyNode(), req, 6*time.Second, func(resp kmsg.Response, err error) {
		if err == nil {
			if rs := resp.(*kmsg.DeleteTopicsResponse).Topics; len(rs) == 1 &&
				(rs[0].ErrorCode == 0 || rs[0].ErrorCode == kerr.UnknownTopicOrPartition.Code) {
				c.later(c.create)
				return
			}
		}
		c.later(c.remove)
	})
}

// finishChurn, after the heal: waits until every broker names one topic
// id for the topic (or none has it), then reads every partition of the
// last incarnation in full and checks it.
func (r *run) finishChurn() {
	c := r.churn
	if c == nil || c.created == 0 {
		return
	}
	deadline := r.now() + r.o.LivenessMax
	var id [16]byte
	var parts int32
	present := false
	agreed := false
	for !agreed && r.now() < deadline && !r.halted {
		agreed, present, id, parts = c.agree()
		if !agreed {
			r.runFor(200 * time.Millisecond)
		}
	}
	if !agreed {
		r.violation("liveness", fmt.Sprintf("brokers did not agree on topic %s within %v of the heal", churnTopic, r.o.LivenessMax))
		return
	}
	if !present {
		return // the last deletion went through
	}
	if id == c.id && parts < c.partitions {
		r.inv.fail("topic-partitions-shrank", "%s incarnation %d has %d partitions after growth to %d was acknowledged", churnTopic, c.inc, parts, c.partitions)
	}
	last := c.inc
	if id != c.id {
		last = -1 // created by a request whose answer was lost: newer than every known one
	}
	for part := int32(0); part < parts; part++ {
		// As the liveness phase does for the workload topic: a write
		// first (a leader serves reads once an entry of its term is
		// applied, and none may have come since the heal).
		if !c.writeOnce(part, deadline) {
			r.violation("liveness", fmt.Sprintf("%s/%d took no acks=all write within %v of the heal", churnTopic, part, r.o.LivenessMax))
			return
		}
		vals, ok := c.readAll(part, deadline)
		if !ok {
			for _, id := range r.w.IDs() {
				if b, isB := r.w.Instance(id).(*Broker); isB && b != nil && b.R != nil {
					for _, line := range b.R.DescribeReplicas(churnTopic) {
						r.w.Tracef("churn: replica n%d %s", id, line)
					}
				}
			}
			r.violation("liveness", fmt.Sprintf("%s/%d was not read in full within %v of the heal", churnTopic, part, r.o.LivenessMax))
			return
		}
		for _, v := range vals {
			if in, acked := c.ackedIn[v]; acked && in != last {
				r.inv.fail("topic-old-incarnation-data", "%s/%d of the last incarnation holds %q, acknowledged in incarnation %d", churnTopic, part, v, in)
			}
		}
	}
	r.w.Tracef("churn: %d incarnations, %d partitions added, %d values acknowledged", c.created, c.grown, len(c.ackedIn))
}

// agree asks every broker for the topic's metadata: agreed when all
// answer alike (present or not, same id and partition count).
func (c *churn) agree() (agreed, present bool, id [16]byte, parts int32) {
	r := c.r
	type view struct {
		present bool
		id      [16]byte
		parts   int32
	}
	var views []view
	answered := 0
	for _, n := range r.w.IDs() {
		req := kmsg.NewPtrMetadataRequest()
		req.Version, req.AllowAutoTopicCreation = 12, false
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(churnTopic)
		req.Topics = append(req.Topics, mt)
		r.kn.call(n, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
			answered++
			if err != nil {
				return
			}
			for _, t := range resp.(*kmsg.MetadataResponse).Topics {
				if t.Topic != nil && *t.Topic == churnTopic {
					v := view{present: t.ErrorCode == 0, id: t.TopicID, parts: int32(len(t.Partitions))}
					if !v.present {
						v = view{}
					}
					views = append(views, v)
				}
			}
		})
	}
	r.runUntil(func() bool { return answered == len(r.w.IDs()) }, 2*r.o.RequestTimeout)
	if len(views) != len(r.w.IDs()) {
		return false, false, id, 0
	}
	for _, v := range views[1:] {
		if v != views[0] {
			return false, false, id, 0
		}
	}
	return true, views[0].present, views[0].id, views[0].parts
}

// writeOnce produces one value to part until it is acknowledged; the
// value is not one the checks count.
func (c *churn) writeOnce(part int32, deadline time.Duration) bool {
	r := c.r
	for r.now() < deadline && !r.halted {
		leader, acked, done := c.leaderOf(part), false, false
		if leader != 0 {
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks = 9, -1
			req.TimeoutMillis = int32((r.o.RequestTimeout * 8 / 10).Milliseconds())
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = churnTopic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = part
			rp.Records = encodeBatch([]string{"final"}, r.w.Clock().Now().UnixMilli(), producerStamp{pid: -1})
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			r.kn.call(leader, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
				done = true
				if err == nil {
					for _, t := range resp.(*kmsg.ProduceResponse).Topics {
						for _, p := range t.Partitions {
							acked = p.ErrorCode == 0
							if !acked {
								r.w.Tracef("churn final write %s/%d to n%d: %s", churnTopic, part, leader, errName(p.ErrorCode))
							}
						}
					}
				}
			})
			r.runUntil(func() bool { return done }, 2*r.o.RequestTimeout)
		}
		if acked {
			return true
		}
		r.runFor(50 * time.Millisecond)
	}
	return false
}

// leaderOf asks a broker for part's leader (0: none known).
func (c *churn) leaderOf(part int32) netx.NodeID {
	r := c.r
	leader, done := netx.NodeID(0), false
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.Version, mreq.AllowAutoTopicCreation = 12, false
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(churnTopic)
	mreq.Topics = append(mreq.Topics, mt)
	r.kn.call(r.meta.anyNode(), mreq, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		done = true
		if err != nil {
			return
		}
		for _, t := range resp.(*kmsg.MetadataResponse).Topics {
			for _, p := range t.Partitions {
				if t.Topic != nil && *t.Topic == churnTopic && p.Partition == part && p.ErrorCode == 0 && p.Leader > 0 {
					leader = netx.NodeID(p.Leader)
				}
			}
		}
	})
	r.runUntil(func() bool { return done }, 2*r.o.RequestTimeout)
	return leader
}

// readAll reads part of the topic from offset 0 to its high watermark.
func (c *churn) readAll(part int32, deadline time.Duration) ([]string, bool) {
	r := c.r
	var out []string
	var from int64
	for r.now() < deadline && !r.halted {
		leader := netx.NodeID(0)
		var done, reached bool
		mreq := kmsg.NewPtrMetadataRequest()
		mreq.Version, mreq.AllowAutoTopicCreation = 12, false
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(churnTopic)
		mreq.Topics = append(mreq.Topics, mt)
		r.kn.call(r.meta.anyNode(), mreq, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
			if err == nil {
				for _, t := range resp.(*kmsg.MetadataResponse).Topics {
					for _, p := range t.Partitions {
						if t.Topic != nil && *t.Topic == churnTopic && p.Partition == part && p.ErrorCode == 0 && p.Leader > 0 {
							leader = netx.NodeID(p.Leader)
						}
					}
				}
			}
			if leader == 0 {
				r.w.Tracef("churn final read %s/%d: no leader known (%v)", churnTopic, part, err)
				done = true
				return
			}
			req := kmsg.NewPtrFetchRequest()
			req.Version, req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = 11, -1, 1<<20, 0
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = churnTopic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = part, from, 1<<20, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			r.kn.call(leader, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
				done = true
				if err != nil {
					r.w.Tracef("churn final read %s/%d from n%d: %v", churnTopic, part, leader, err)
					return
				}
				if code := resp.(*kmsg.FetchResponse).ErrorCode; code != 0 {
					r.w.Tracef("churn final read %s/%d from n%d: %s", churnTopic, part, leader, errName(code))
				}
				for _, t := range resp.(*kmsg.FetchResponse).Topics {
					for _, p := range t.Partitions {
						if p.ErrorCode != 0 {
							r.w.Tracef("churn final read %s/%d from n%d: %s", churnTopic, part, leader, errName(p.ErrorCode))
							return
						}
						recs, derr := decodeBatches(p.RecordBatches)
						if derr != nil {
							r.violation(decodeErrKind(derr), fmt.Sprintf("n%d served %s/%d from offset %d: %v", leader, churnTopic, part, from, derr))
							return
						}
						for _, rec := range recs {
							if rec.offset >= from {
								out = append(out, rec.value)
								from = rec.offset + 1
							}
						}
						reached = from >= p.HighWatermark
					}
				}
			})
		})
		r.runUntil(func() bool { return done }, 3*r.o.RequestTimeout)
		if reached {
			return out, true
		}
		r.runFor(50 * time.Millisecond)
	}
	return out, false
}
