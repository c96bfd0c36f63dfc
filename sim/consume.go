package sim

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/jepsen/history"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/group"
)

// offsetsTopic is where committed offsets live: a group's coordinator
// leads its partition group.PartitionFor(name, N), N being
// BrokerConfig.OffsetsPartitions (coordinatorPartition).
const offsetsTopic = "__consumer_offsets"

// coordinatorPartition is the partition of __consumer_offsets whose leader
// coordinates consumer group name (node/coordinators.go).
func (r *run) coordinatorPartition(name string) int32 {
	n := r.o.Broker.OffsetsPartitions
	if n <= 0 {
		n = node.DefaultOffsetsTopicPartitions // what a zero leaves in place
	}
	return group.PartitionFor(name, n)
}

// coordinatorProbe is the deposed-leader probe (known.go) of a request
// for consumer group name sent to its coordinator id: it looks at the
// group's own partition of __consumer_offsets. (It looked at partition 0
// whatever the partition count: in --all-faults seed 1055909, with two
// partitions, n1 answered g0's OffsetFetch as the rightful leader of
// partition 1 and was counted deposed because it was also a cut-off
// leader of partition 0, which it served nothing from; and a coordinator
// deposed on partition 1 would have gone unseen.)
func (r *run) coordinatorProbe(id netx.NodeID, name string) func() bool {
	return r.deposedProbe(id, offsetsTopic, r.coordinatorPartition(name))
}

// consumer is a client consuming every partition of the topic for a group
// without joining it (simple, generation -1 commits, as a standalone
// consumer does): it reads the group's committed offsets (OffsetFetch),
// announces its assignment, polls the partitions in turn from its
// positions, commits its positions every few polls (OffsetCommit), and now
// and then starts over as a new process from the committed offsets. After
// healing it drains: it polls until every partition is read to the final
// high watermark and then commits once more.
type consumer struct {
	r     *run
	group string
	proc  int64
	coord netx.NodeID
	pos   map[int32]int64
	polls int
	turn  int32
	// drained: the drain phase's final commit succeeded.
	drained bool
}

// start runs the consumer until its drain is done. Consumers do not stop
// with the producers: they go on through healing into the drain.
func (c *consumer) start() { c.restart() }

// restart begins again as a new process: find the coordinator, read the
// committed offsets, assign.
func (c *consumer) restart() {
	c.proc = c.r.newProc()
	c.coord = 0
	c.r.w.After(c.r.think(), c.fetchCommitted)
}

// withCoordinator runs fn once the group's coordinator is known.
func (c *consumer) withCoordinator(fn func()) {
	if c.coord != 0 {
		fn()
		return
	}
	c.r.meta.findCoordinator(c.group, func(id netx.NodeID) {
		if id == 0 {
			c.r.w.After(c.r.backoff(), func() { c.withCoordinator(fn) })
			return
		}
		c.coord = id
		fn()
	})
}

func (c *consumer) allOffsets(off func(int32) int64) []history.Offset {
	out := make([]history.Offset, c.r.o.Partitions)
	for p := range out {
		out[p] = history.Offset{Topic: c.r.topic, Partition: int32(p), Offset: off(int32(p))}
	}
	return out
}

// fetchCommitted is an OffsetFetch operation; on success the consumer
// assigns itself every partition and starts polling.
func (c *consumer) fetchCommitted() {
	c.withCoordinator(func() {
		r := c.r
		inv := r.rec.Invoke(history.Op{Process: c.proc, F: history.FetchOffset, Group: c.group,
			Offsets: c.allOffsets(func(int32) int64 { return history.NoOffset })})
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 7
		req.Group = c.group
		req.RequireStable = r.rng.Intn(2) == 0
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic = r.topic
		for p := int32(0); p < r.o.Partitions; p++ {
			t.Partitions = append(t.Partitions, p)
		}
		req.Topics = append(req.Topics, t)
		probe := r.coordinatorProbe(c.coord, c.group)
		r.kn.callAt(c.coord, req, r.o.RequestTimeout, probe, func(resp kmsg.Response, err error, deposed bool) {
			got, code := map[int32]int64{}, int16(0)
			if err == nil {
				fr := resp.(*kmsg.OffsetFetchResponse)
				code = fr.ErrorCode
				for _, rt := range fr.Topics {
					for _, rp := range rt.Partitions {
						if rp.ErrorCode != 0 && code == 0 {
							code = rp.ErrorCode
						}
						if rt.Topic == r.topic {
							got[rp.Partition] = rp.Offset
						}
					}
				}
				if code == 0 && len(got) != int(r.o.Partitions) {
					code = kerr.UnknownServerError.Code
				}
			}
			if err != nil || code != 0 {
				c.failed(inv, err, code)
				return
			}
			offs := c.allOffsets(func(p int32) int64 { return max(got[p], history.NoOffset) })
			r.rec.Complete(inv, history.OK, history.Op{Group: c.group, Offsets: offs, Node: int32(c.coord), Note: deposedHow(deposed)})
			c.pos = map[int32]int64{}
			for p, off := range got {
				c.pos[p] = max(off, 0)
			}
			var tps []history.TP
			for p := int32(0); p < r.o.Partitions; p++ {
				tps = append(tps, history.TP{Topic: r.topic, Partition: p})
			}
			r.rec.Add(history.Op{Process: c.proc, Type: history.OK, F: history.Assign, Assigned: tps})
			c.nextPoll()
		})
	})
}

// failed completes a group operation that did not succeed and starts the
// consumer over.
func (c *consumer) failed(inv history.Op, err error, code int16) {
	typ, why := history.Fail, errName(code)
	if code == kerr.RequestTimedOut.Code {
		typ = history.Info // the write may have happened (node: offset-commit-timeout)
	}
	if err != nil {
		why = err.Error()
		if err == errClientTimeout {
			typ = history.Info
		}
	}
	c.r.rec.Complete(inv, typ, history.Op{Group: c.group, Error: why, Node: int32(c.coord)})
	c.r.w.After(c.r.backoff(), c.restart)
}

func (c *consumer) nextPoll() {
	r := c.r
	if c.drained {
		return
	}
	if !r.draining && r.rng.Intn(50) == 0 {
		c.restart() // a rebalance: resume from the committed offsets
		return
	}
	if r.draining && c.caughtUp() {
		c.commit(true)
		return
	}
	c.polls++
	if c.polls%5 == 0 {
		c.commit(false)
		return
	}
	r.w.After(r.think(), c.poll)
}

// caughtUp reports whether every position reached its final high watermark.
func (c *consumer) caughtUp() bool {
	for p := int32(0); p < c.r.o.Partitions; p++ {
		if c.pos[p] < c.r.finalHWM[p] {
			return false
		}
	}
	return true
}

// poll fetches the next partition in turn from its position: one Poll
// operation.
func (c *consumer) poll() {
	r := c.r
	part := c.turn
	c.turn = (c.turn + 1) % r.o.Partitions
	if r.draining && c.pos[part] >= r.finalHWM[part] {
		c.nextPoll()
		return
	}
	inv := r.rec.Invoke(history.Op{Process: c.proc, F: history.Poll})
	r.stats.Polls++
	r.fetchOnce(part, c.pos[part], int32(r.rng.Intn(50)), func(res fetched) {
		switch {
		case res.ok():
			r.rec.Complete(inv, history.OK, history.Op{Records: res.records, Node: int32(res.from), Note: deposedHow(res.deposed)})
			if n := len(res.records); n > 0 {
				c.pos[part] = res.records[n-1].Offset + 1
			}
			r.sawOffset(part, res.hwm)
		case res.code == kerr.OffsetOutOfRange.Code:
			r.rec.Complete(inv, history.Fail, history.Op{Error: res.why(), Node: int32(res.from)})
			r.note(fmt.Sprintf("consumer %s: offset %d out of range on %s/%d at n%d", c.group, c.pos[part], r.topic, part, res.from))
			c.restart()
			return
		case res.err == errClientTimeout:
			r.rec.Complete(inv, history.Info, history.Op{Error: res.why(), Node: int32(res.from)})
			c.restart()
			return
		default:
			r.rec.Complete(inv, history.Fail, history.Op{Error: res.why(), Node: int32(res.from)})
		}
		c.nextPoll()
	})
}

// commit commits the positions (an OffsetCommit operation). final marks
// the drain's last commit, which ends the consumer when it succeeds.
func (c *consumer) commit(final bool) {
	c.withCoordinator(func() {
		r := c.r
		offs := c.allOffsets(func(p int32) int64 { return c.pos[p] })
		inv := r.rec.Invoke(history.Op{Process: c.proc, F: history.Commit, Group: c.group, Offsets: offs})
		r.stats.Commits++
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 8
		req.Group = c.group
		req.Generation = -1
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = r.topic
		for _, o := range offs {
			p := kmsg.NewOffsetCommitRequestTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch = o.Partition, o.Offset, -1
			t.Partitions = append(t.Partitions, p)
		}
		req.Topics = append(req.Topics, t)
		probe := r.coordinatorProbe(c.coord, c.group) // samples the coordinator's epoch
		r.kn.callAt(c.coord, req, r.o.RequestTimeout, probe, func(resp kmsg.Response, err error, _ bool) {
			code := int16(0)
			if err == nil {
				for _, rt := range resp.(*kmsg.OffsetCommitResponse).Topics {
					for _, rp := range rt.Partitions {
						if rp.ErrorCode != 0 && code == 0 {
							code = rp.ErrorCode
						}
					}
				}
			}
			if err != nil || code != 0 {
				c.failed(inv, err, code)
				return
			}
			r.rec.Complete(inv, history.OK, history.Op{Group: c.group, Offsets: offs, Node: int32(c.coord)})
			if final {
				c.drained = true
				r.drainedConsumers++
			}
			c.nextPoll()
		})
	})
}
