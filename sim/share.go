package sim

// The share-group workload (KIP-932 queues, issue 18): a producer writes
// to the topic simshare while competing consumers of one share group join
// (ShareGroupHeartbeat), acquire records (ShareFetch) and acknowledge each
// one as accepted, released or rejected (ShareAcknowledge, or piggybacked
// on the next ShareFetch), leave some unacknowledged until their lock
// expires, and now and then crash (a new member id, the old one's records
// held until its lock or session runs out), all under the seed's faults,
// which move the group's coordinator (crashes, pauses, partitions, leader
// transfers). After the heal the consumers accept everything until every
// record below the final high watermark is finished.
//
// The checkers read only what clients were told (an acquisition is the
// pair offset and delivery count a ShareFetch answered; an
// acknowledgement counts once its answer said no error):
//
//   - double-delivery: one offset handed out twice with the same delivery
//     count (each acquisition is durable before it is answered and bumps
//     the count, so a repeat means an acquisition was lost in a failover);
//   - redelivered-accepted / redelivered-rejected: an offset accepted or
//     rejected at delivery count c is handed out again with a count above
//     c (a finished record came back);
//   - redelivered-finished: an acknowledgement of an offset succeeded
//     though the offset had been handed out again, with a higher count,
//     to another member: a member acknowledged a record it no longer
//     held. An acknowledgement names a member and offsets, never a
//     delivery count (Kafka's SharePartition checks only that the member
//     holds the record's current acquisition), so one that a member sends
//     for an earlier delivery, after the same member was handed the
//     record again, is rightly applied to the delivery it holds now
//     (ackOutcome);
//   - delivery-limit: a delivery count above share.delivery.count.limit;
//   - skipped: after the liveness phase an offset below the final high
//     watermark was never finished: not accepted or rejected (or possibly
//     so, when the answer was lost), and never delivered up to the limit
//     (after which it is archived).
//
// Which broker serves: the sim's consumers send ShareFetch and
// ShareAcknowledge to the group's coordinator (or another broker, which
// forwards them), which serves every partition: from its own replica, or
// from the partition's leader when it holds none (node/share_read.go).
// The workload runs in 3-node clusters and, since h-share, in 5-node ones
// (replication factor 3: the coordinator may hold no replica of a
// partition), and with the broker-join fault (a replica moved onto the
// joined broker).

import (
	"fmt"
	"math/rand"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/records"
)

const (
	shareTopic      = "simshare"
	shareGroup      = "sq"
	shareParts      = 2
	shareHeartbeat  = 250 * time.Millisecond
	shareFetchWait  = 100 // ms
	shareCrashProb  = 0.02
	shareAckPiggy   = 0.5 // chance acks ride on the next ShareFetch
	shareAcceptProb = 0.7
	shareReleaseP   = 0.12
	shareRejectP    = 0.1 // the rest are left to their lock's expiry
	// shareSlowAckP is the chance, per step with acknowledgements to
	// send, that a consumer stalls for 1.5 locks first: its records are
	// then redelivered to others, and its late acknowledgements must be
	// refused (a member acknowledging records another member acquired).
	shareSlowAckP = 0.05
	// With ShareOptions.LateAcks: the chance of a stall (heartbeating
	// on, shareConsumer.stall), and, per batch of acknowledgements to
	// send, the chance that a consumer takes a quarter to three quarters
	// of a lock first (a slow application within its lock): records stay
	// held by one member that long, so another member's late
	// acknowledgement of them may arrive meanwhile.
	shareLateSlowP = 0.3
	shareHoldP     = 0.3
)

// ShareOptions shape the share-group workload (zero Consumers: off).
type ShareOptions struct {
	Consumers     int
	DeliveryLimit int16
	Lock          time.Duration
	// LagCoordinator (focused tests', share_lag_test.go) cuts the
	// group's coordinator off from the controller's leader, both ways,
	// before the dead-letter topic and the retry backoff are set, until
	// the nemesis heals: the coordinator rejects, archives and releases
	// records while its metadata lacks the configs every client was told
	// of (the metadata barrier's cases, node/metabarrier.go and
	// node/share_backoff.go).
	LagCoordinator bool
	// LateAcks (focused test's, share_ack_test.go) makes stalls likelier
	// and keeps the stalled members heartbeating, and has consumers hold
	// records for part of their lock before acknowledging: late
	// acknowledgements then reach the coordinator while another member
	// holds their records, which the drawn seeds rarely do (their
	// stalled members mostly lose their session or coordinator first).
	LateAcks bool
}

// brokerShares is the brokers' share-group configuration for o.
func (o ShareOptions) brokerShares() node.ShareConfig {
	if o.Consumers == 0 {
		return node.ShareConfig{}
	}
	return node.ShareConfig{AutoOffsetReset: "earliest", Lock: o.Lock, DeliveryLimit: o.DeliveryLimit,
		SessionTimeout: 2 * o.Lock, HeartbeatInterval: shareHeartbeat}
}

// shareRec is what clients were told about one offset.
type shareRec struct {
	given    map[int16]bool // delivery counts it was handed out with
	maxCount int16
	accepted int16 // the count an acknowledged accept was made at (0: none)
	rejected int16
	maybe    bool // an accept or reject whose answer was lost
	// rejectTried: a client sent a reject for it (whatever the answer).
	rejectTried bool
	// seenAt is when the fetch that handed it out with maxCount was sent;
	// holder is the member it went to, holderReq that fetch's request
	// number (shareWork.reqs).
	seenAt    time.Duration
	holder    string
	holderReq int
	// releasedCount is the highest delivery count a release of it was
	// answered without error at, releasedAt when that release was sent
	// (share_backoff.go).
	releasedCount int16
	releasedAt    time.Duration
}

type shareWork struct {
	r       *run
	rng     *rand.Rand
	ready   bool
	topicID [16]byte
	leaders map[int32]netx.NodeID
	recs    [shareParts]map[int64]*shareRec
	final   map[int32]int64 // the final high watermarks, after the heal
	seq     int
	limit   int16
	// lost are the times up to which fetches whose answer was lost or
	// partly failed may have acquired records no client saw (a delivery
	// that counts toward the limit): a partly failed one's answer, a lost
	// one's send plus shareServeReach (a fetch waits for records, and the
	// broker may serve it after its client timed out: one sent before a
	// record was last handed out may acquire it again after).
	//
	// lost is kept sorted (lostFetch inserts in order) so that lostSince
	// counts by binary search: finishShare asks at every event whether
	// every offset is finished, and a scan of the list per offset made
	// that 5-9% of a long seed's time.
	lost []time.Duration
	// lostBy is, per member, its own fetches among those (answer time and
	// request number): the member may hold records it was never seen to
	// get.
	lostBy map[string][]lostFetch
	// reqs numbers the consumers' ShareFetch and ShareAcknowledge
	// requests: a member's later request has a higher number.
	reqs     int
	finished bool
	// unfinishedHint: the offset allFinished last found unfinished
	// (below final, which is fixed before allFinished is first asked).
	unfinishedHint offsetHint
	// dlq: the group has a dead-letter topic (share_dlq.go); values are
	// the produced records' values by offset, to check the copies.
	dlq bool
	// dlqAbsent: the last dead-letter read found no such topic (readDLQ).
	dlqAbsent bool
	values    [shareParts]map[int64]string
	// copyOff: the group sets errors.deadletterqueue.copy.record.enable
	// false, so its dead letters are headers only (shareDLQCopyOff).
	copyOff bool
	// slow draws the consumers' slow acknowledgements, hold their holds
	// within the lock (their own generators).
	slow, hold *rand.Rand
	// backoff is the group's redelivery backoff (share_backoff.go);
	// releasedNow, movedAt and move (its own generator) drive the
	// coordinator moves of backoff seeds.
	backoff     shareBackoff
	releasedNow bool
	movedAt     time.Duration
	move        *rand.Rand
	stats       struct {
		fetched, accepted, released, rejected, redelivered, crashes, slow, slowRefused, backoffChecked, moves int
	}
}

func (w *shareWork) rec(part int32, off int64) *shareRec {
	if w.recs[part] == nil {
		w.recs[part] = map[int64]*shareRec{}
	}
	sr := w.recs[part][off]
	if sr == nil {
		sr = &shareRec{given: map[int16]bool{}}
		w.recs[part][off] = sr
	}
	return sr
}

func (w *shareWork) bad(kind, msg string) {
	w.r.violation("checker", fmt.Sprintf("share %s invalid: %s", kind, msg))
}

// startShare starts the workload if the options ask for it.
func (r *run) startShare() {
	if r.o.Share.Consumers <= 0 {
		return
	}
	w := &shareWork{r: r, rng: rand.New(rand.NewSource(r.o.Seed ^ 0x5a4e)), leaders: map[int32]netx.NodeID{},
		final: map[int32]int64{}, lostBy: map[string][]lostFetch{}, limit: r.o.Share.DeliveryLimit, dlq: shareDLQOn(r.o.Seed), copyOff: shareDLQCopyOff(r.o.Seed),
		slow: rand.New(rand.NewSource(r.o.Seed ^ 0x510e)), hold: rand.New(rand.NewSource(r.o.Seed ^ 0x401d)), backoff: chooseShareBackoff(r.o.Seed),
		move: rand.New(rand.NewSource(r.o.Seed ^ 0x30fe))}
	r.share = w
	begin := func() {
		w.ready = true
		w.produce()
		for i := 0; i < r.o.Share.Consumers; i++ {
			c := &shareConsumer{w: w, id: i}
			c.restart()
			c.step()
		}
	}
	w.createTopic(func() {
		switch {
		case (w.dlq || w.backoff.Initial > 0) && r.o.Share.LagCoordinator:
			w.cutCoordinator(func() { w.setGroupConfigs(begin) })
		case w.dlq || w.backoff.Initial > 0:
			w.setGroupConfigs(begin)
		default:
			begin()
		}
	})
}

// cutCoordinator cuts the group's coordinator off from the controller's
// leader (as the clients last saw them), unless they are one broker, and
// calls done.
func (w *shareWork) cutCoordinator(done func()) {
	r := w.r
	r.meta.refresh(func() {
		r.meta.findCoordinator(shareGroup, func(c netx.NodeID) {
			if ctl := r.meta.controller; c != 0 && ctl != 0 && c != ctl {
				r.w.Cut(c, ctl)
				r.w.Cut(ctl, c)
				r.cover(covShareCoordCut)
			}
			done()
		})
	})
}

// covShareAckLaterDelivery counts acknowledgements a member sent for one
// delivery that were applied to a later one it was handed (ackOutcome;
// counted, not required).
const covShareAckLaterDelivery = "share acknowledgement applied to the member's later delivery"

// covShareLateAckOthers counts late acknowledgements answered after their
// record was handed out again to another member (the case of mutation
// share-ack-any-member; counted, not required: the focused test
// TestShareLateAckOfAnotherMembersRecord needs it).
const covShareLateAckOthers = "share late acknowledgement of a record handed to another member"

// covShareAckUnseenDelivery counts acknowledgements sent for one delivery
// that succeeded after a later delivery to another member, the sender
// having had a fetch in doubt since: it may hold a delivery nobody saw
// (ackOutcome; counted, not required).
const covShareAckUnseenDelivery = "share acknowledgement possibly applied to an unseen delivery"

// covShareCoordCut counts runs whose share coordinator was cut off from
// the controller's leader (LagCoordinator; not required: focused test).
const covShareCoordCut = "share coordinator cut off from the controller"

func (w *shareWork) createTopic(done func()) {
	r := w.r
	var try func()
	try = func() {
		if r.stopping {
			return
		}
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = 7, 5000
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = shareTopic, shareParts, int16(min(3, r.o.Nodes))
		req.Topics = append(req.Topics, t)
		r.kn.call(r.meta.anyNode(), req, 2*time.Second, func(resp kmsg.Response, err error) {
			if err == nil {
				if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code == 0 || code == kerr.TopicAlreadyExists.Code {
					w.metadata(func() {
						if w.topicID == ([16]byte{}) {
							r.w.After(100*time.Millisecond, try)
							return
						}
						done()
					})
					return
				}
			}
			r.w.After(100*time.Millisecond, try)
		})
	}
	try()
}

// metadata refreshes the topic's id and leaders.
func (w *shareWork) metadata(done func()) {
	r := w.r
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(shareTopic)
	req.Topics = append(req.Topics, rt)
	r.kn.call(r.meta.anyNode(), req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			for _, t := range resp.(*kmsg.MetadataResponse).Topics {
				if t.Topic == nil || *t.Topic != shareTopic || t.ErrorCode != 0 {
					continue
				}
				w.topicID = t.TopicID
				for _, p := range t.Partitions {
					if p.Leader > 0 && p.ErrorCode == 0 {
						w.leaders[p.Partition] = netx.NodeID(p.Leader)
					}
				}
			}
		}
		done()
	})
}

// produce writes 1-3 records to a random partition, acks=all, until the
// heal; a failed write is not retried (offsets, not values, are checked).
func (w *shareWork) produce() {
	r := w.r
	if r.stopping {
		return
	}
	part := int32(w.rng.Intn(shareParts))
	leader, ok := w.leaders[part]
	if !ok {
		w.metadata(func() { r.w.After(r.backoff(), w.produce) })
		return
	}
	n := 1 + w.rng.Intn(3)
	recs := make([]records.Record, n)
	for i := range recs {
		w.seq++
		recs[i] = records.Record{Value: []byte(fmt.Sprintf("q%d", w.seq))}
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks = 9, -1
	req.TimeoutMillis = int32((r.o.RequestTimeout * 8 / 10).Milliseconds())
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = shareTopic
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: part,
		Records: records.Build(records.BuildOptions{BaseTimestamp: r.w.Clock().Now().UnixMilli()}, recs)}}
	req.Topics = append(req.Topics, rt)
	r.kn.call(leader, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err != nil || resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 0 {
			delete(w.leaders, part)
		} else {
			w.noteProduced(part, resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].BaseOffset, recs)
		}
		r.w.After(r.think()+5*time.Millisecond, w.produce)
	})
}

// held is a record a consumer acquired and has not acknowledged.
type held struct {
	part  int32
	off   int64
	count int16
	ack   int8 // the acknowledgement it will get: 1 accept, 2 release, 3 reject
	slow  bool // sent after a stall past its lock
}

// shareConsumer is one member of the group, one request at a time.
type shareConsumer struct {
	w           *shareWork
	id          int
	inc         int // incarnation: a crash starts a new one
	member      string
	epoch       int32 // member epoch; 0: not joined
	session     int32 // next share session epoch; 0: open a new one
	coord       netx.NodeID
	viaLeader   bool        // this incarnation fetches through partition 0's leader, as Kafka clients do
	sessTo      netx.NodeID // the broker the share session is with
	lastBeat    time.Duration
	pending     []held // acknowledgements to send
	held        bool   // the pending acknowledgements were held back once (shareHoldP)
	assignment  bool
	consecutive int // fetches in a row that returned nothing, in the drain
}

// restart begins a new incarnation: a new member id, nothing held.
func (c *shareConsumer) restart() {
	c.inc++
	c.member = fmt.Sprintf("m%d-%d", c.id, c.inc)
	c.epoch, c.session, c.pending, c.assignment, c.held = 0, 0, nil, false, false
	c.viaLeader = c.w.rng.Float64() < 0.5
}

// target is the broker share requests go to: the coordinator, or the
// leader of partition 0 (which forwards them to the coordinator); a new
// target means a new share session.
func (c *shareConsumer) target() netx.NodeID {
	to := c.coord
	if l, ok := c.w.leaders[0]; ok && c.viaLeader {
		to = l
	}
	if to != c.sessTo {
		c.sessTo, c.session = to, 0
	}
	return to
}

func (c *shareConsumer) then(d time.Duration) { c.w.r.w.After(d, c.step) }

// step does the consumer's next request.
func (c *shareConsumer) step() {
	w, r := c.w, c.w.r
	if w.finished || r.halted {
		return
	}
	if !r.stopping && w.rng.Float64() < shareCrashProb {
		w.stats.crashes++
		r.w.Tracef("share: consumer %d crashes (member %s)", c.id, c.member)
		c.restart()
	}
	slowP := shareSlowAckP
	if r.o.Share.LateAcks {
		slowP = shareLateSlowP
	}
	if len(c.pending) > 0 && !r.stopping && w.slow.Float64() < slowP {
		w.stats.slow++
		for i := range c.pending {
			c.pending[i].slow = true
		}
		r.w.Tracef("share: consumer %d (member %s) stalls with %d acknowledgements to send", c.id, c.member, len(c.pending))
		if !r.o.Share.LateAcks {
			c.then(r.o.Share.Lock * 3 / 2)
			return
		}
		c.stall(r.now() + r.o.Share.Lock*3/2)
		return
	}
	if r.o.Share.LateAcks && len(c.pending) > 0 && !r.stopping && !c.held {
		c.held = true
		if w.hold.Float64() < shareHoldP {
			c.stall(r.now() + time.Duration(float64(r.o.Share.Lock)*(0.25+0.5*w.hold.Float64())))
			return
		}
	}
	switch {
	case c.coord == 0:
		r.meta.findCoordinator(shareGroup, func(id netx.NodeID) {
			c.coord = id
			c.then(r.backoff())
		})
	case c.epoch == 0 || !c.assignment || r.now()-c.lastBeat >= shareHeartbeat:
		c.heartbeat()
	case len(c.pending) > 0 && c.session != 0 && w.rng.Float64() >= shareAckPiggy:
		c.acknowledge()
	default:
		c.fetch()
	}
}

// stall holds the consumer's next step until until (ShareOptions.LateAcks),
// as an application slow to process its records would, while its client
// goes on heartbeating (Kafka's share consumer heartbeats from its own
// thread): the member stays in the group, so its late acknowledgements
// reach the coordinator while its records, their locks run out, may be
// held by other members. (Without the heartbeats the member's session,
// two locks, has mostly run out by then, or its coordinator moved, and
// the late acknowledgements are dropped with the member.)
func (c *shareConsumer) stall(until time.Duration) {
	w, r := c.w, c.w.r
	if w.finished || r.halted {
		return
	}
	now := r.now()
	if now >= until {
		c.step()
		return
	}
	wait := until - now
	if c.coord == 0 {
		r.meta.findCoordinator(shareGroup, func(id netx.NodeID) {
			c.coord = id
			r.w.After(min(r.backoff(), wait), func() { c.stall(until) })
		})
		return
	}
	if c.epoch != 0 {
		due := c.lastBeat + shareHeartbeat
		if due <= now {
			c.heartbeatThen(func() { c.stall(until) })
			return
		}
		wait = min(wait, due-now)
	}
	r.w.After(wait, func() { c.stall(until) })
}

// lost handles a failed call: the coordinator may have moved.
func (c *shareConsumer) lost(code int16) {
	c.forget(code)
	c.then(c.w.r.backoff())
}

// forget drops what a failed call with code makes stale.
func (c *shareConsumer) forget(code int16) {
	switch code {
	case kerr.UnknownMemberID.Code, kerr.FencedMemberEpoch.Code:
		c.epoch, c.session, c.pending, c.assignment, c.held = 0, 0, nil, false, false
	case kerr.ShareSessionNotFound.Code, kerr.InvalidShareSessionEpoch.Code:
		c.session = 0
	default:
		c.coord, c.session = 0, 0
		delete(c.w.leaders, 0)
		if c.viaLeader {
			c.w.metadata(func() {})
		}
	}
}

func (c *shareConsumer) heartbeat() { c.heartbeatThen(nil) }

// heartbeatThen sends a heartbeat; after its answer next runs, or with
// next nil the consumer's next step.
func (c *shareConsumer) heartbeatThen(next func()) {
	r := c.w.r
	failed := func(code int16) {
		if next == nil {
			c.lost(code)
			return
		}
		c.forget(code)
		next()
	}
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version, req.GroupID, req.MemberID, req.MemberEpoch = 1, shareGroup, c.member, c.epoch
	if c.epoch == 0 {
		req.SubscribedTopicNames = []string{shareTopic}
	}
	r.kn.call(c.coord, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err != nil {
			failed(-1)
			return
		}
		hr := resp.(*kmsg.ShareGroupHeartbeatResponse)
		if hr.ErrorCode != 0 {
			failed(hr.ErrorCode)
			return
		}
		c.epoch, c.lastBeat = hr.MemberEpoch, r.now()
		if hr.Assignment != nil {
			c.assignment = len(hr.Assignment.TopicPartitions) > 0
		}
		if next != nil {
			next()
			return
		}
		c.then(r.think())
	})
}

func (c *shareConsumer) fetch() {
	w, r := c.w, c.w.r
	to := c.target()
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(shareGroup), kmsg.StringPtr(c.member), c.session
	req.MaxWaitMillis, req.MaxBytes, req.MaxRecords, req.BatchSize = shareFetchWait, 1<<20, int32(1+w.rng.Intn(6)), 6
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = w.topicID
	sent := c.pending
	if c.session == 0 {
		sent = nil // a new session carries no acknowledgements
	}
	for part := int32(0); part < shareParts; part++ {
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = part
		for _, h := range sent {
			if h.part == part {
				b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
				b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = h.off, h.off, []int8{h.ack}
				rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
			}
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	c.pending = c.pending[len(sent):]
	c.held = c.held && len(c.pending) > 0
	sentAt, reqNo := r.now(), w.nextReq()
	r.kn.call(to, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err != nil {
			w.lostFetch(c.member, reqNo, sentAt+shareServeReach) // the broker may serve it after the client gave up
			c.acked(sent, -1, sentAt, reqNo)
			c.lost(-1)
			return
		}
		fr := resp.(*kmsg.ShareFetchResponse)
		if fr.ErrorCode == kerr.RequestTimedOut.Code {
			w.lostFetch(c.member, reqNo, 0) // a forward that got no answer
		}
		if fr.ErrorCode != 0 {
			c.acked(sent, fr.ErrorCode, sentAt, reqNo) // nothing was applied
			c.lost(fr.ErrorCode)
			return
		}
		c.session++
		if to != c.coord {
			r.cover("share fetch forwarded to the coordinator")
		}
		got := 0
		partFailed := false
		codes := map[int32]int16{}
		for _, t := range fr.Topics {
			for _, p := range t.Partitions {
				codes[p.Partition] = p.AcknowledgeErrorCode
				if p.ErrorCode != 0 && !partFailed {
					// A failed state write clears the records it acquired,
					// but the write may still commit.
					partFailed = true
					w.lostFetch(c.member, reqNo, 0)
				}
				if p.ErrorCode != 0 && p.AcknowledgeErrorCode == 0 {
					// Skipped (the partition failed before its acks), or
					// applied and written before acquiring failed: unknown.
					codes[p.Partition] = -1
				}
				got += c.acquired(p.Partition, p.AcquiredRecords, sentAt, reqNo)
			}
		}
		c.ackedParts(sent, codes, sentAt, reqNo)
		w.maybeMoveCoordinator(c.coord)
		c.idle(got)
	})
}

// idle paces the next step: at once after records, a little later after
// an empty fetch (which already waited on the broker).
func (c *shareConsumer) idle(got int) {
	if got > 0 {
		c.then(c.w.r.think())
		return
	}
	c.then(c.w.r.think() + 10*time.Millisecond)
}

func (c *shareConsumer) acknowledge() {
	r := c.w.r
	to := c.target()
	if c.session == 0 {
		c.fetch() // the target moved: a new session, acks ride on its first fetch after that
		return
	}
	sent := c.pending
	c.pending, c.held = nil, false
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(shareGroup), kmsg.StringPtr(c.member), c.session
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = c.w.topicID
	for part := int32(0); part < shareParts; part++ {
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		rp.Partition = part
		for _, h := range sent {
			if h.part == part {
				b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
				b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = h.off, h.off, []int8{h.ack}
				rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
			}
		}
		if len(rp.AcknowledgementBatches) > 0 {
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
	req.Topics = append(req.Topics, rt)
	sentAt, reqNo := r.now(), c.w.nextReq()
	r.kn.call(to, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err != nil {
			c.acked(sent, -1, sentAt, reqNo)
			c.lost(-1)
			return
		}
		ar := resp.(*kmsg.ShareAcknowledgeResponse)
		if ar.ErrorCode != 0 {
			c.acked(sent, ar.ErrorCode, sentAt, reqNo)
			c.lost(ar.ErrorCode)
			return
		}
		c.session++
		codes := map[int32]int16{}
		for _, t := range ar.Topics {
			for _, p := range t.Partitions {
				codes[p.Partition] = p.ErrorCode
			}
		}
		c.ackedParts(sent, codes, sentAt, reqNo)
		c.w.maybeMoveCoordinator(c.coord)
		c.then(r.think())
	})
}

// acked records the outcome of acknowledgements: code 0 applied, -1 lost
// (unknown), INVALID_RECORD_STATE, INVALID_REQUEST and top-level errors
// not applied, except REQUEST_TIMED_OUT (a forward that got no answer);
// anything else (a failed write) unknown.
func (c *shareConsumer) acked(sent []held, code int16, sentAt time.Duration, reqNo int) {
	for _, h := range sent {
		c.w.ackOutcome(h, c.member, reqNo, code, true, sentAt)
	}
}

// ackedParts records per-partition outcomes; a partition the answer does
// not name has an unknown outcome.
func (c *shareConsumer) ackedParts(sent []held, codes map[int32]int16, sentAt time.Duration, reqNo int) {
	for _, h := range sent {
		code, ok := codes[h.part]
		if !ok {
			code = -1
		}
		c.w.ackOutcome(h, c.member, reqNo, code, false, sentAt)
	}
}

// nextReq numbers a consumer's request (shareWork.reqs).
func (w *shareWork) nextReq() int {
	w.reqs++
	return w.reqs
}

// lostFetch is a fetch whose answer was lost or partly failed: it may
// have acquired records no client saw, at any time up to at.
type lostFetch struct {
	at  time.Duration
	req int
}

// shareServeReach bounds how long after a ShareFetch was sent the broker
// may still acquire records for it: the coordinator's first remote read
// (shareReadTimeout, node/share_read.go, a second), the wait (shareFetchWait)
// and a last recheck's remote read (another second), plus a second for the
// request's way there (a forward, a paused broker). A fetch whose answer
// never came is not over when the client gives up (its request timeout,
// shorter than that): --all-faults seed 3006559's coordinator, its remote
// read of the other partition unanswered for a second, acquired two
// records for a fetch 1.1s after the fetch was sent, 0.64s after its
// client had timed out and 0.35s after the records were handed out
// (count 1) to the same member, whose lock on them then ran out at the
// delivery limit: archived, and dead-lettered, at count 2.
const shareServeReach = 2*nodeShareReadTimeout + shareFetchWait*time.Millisecond + time.Second

// nodeShareReadTimeout is node's shareReadTimeout (node/share_read.go,
// unexported), the model's copy: raise it with node's.
const nodeShareReadTimeout = time.Second

// lostFetch notes that member's fetch numbered reqNo got no answer or a
// partly failed one, now; it may have acquired records until now or until
// (a fetch whose answer never came: sent plus shareServeReach), whichever
// is later.
func (w *shareWork) lostFetch(member string, reqNo int, until time.Duration) {
	at := max(w.r.now(), until)
	i, _ := slices.BinarySearch(w.lost, at)
	w.lost = slices.Insert(w.lost, i, at)
	w.lostBy[member] = append(w.lostBy[member], lostFetch{at: at, req: reqNo})
}

// mayHoldUnseen reports whether member may hold sr's offset in a delivery
// above the last one clients saw, when its request reqNo arrives: one of
// its earlier fetches got no answer (or a partly failed one) at or after
// that delivery's fetch was sent (w.lost's model: a fetch acquires at any
// time up to its answer).
func (w *shareWork) mayHoldUnseen(sr *shareRec, member string, reqNo int) bool {
	for _, l := range w.lostBy[member] {
		if l.req < reqNo && l.at >= sr.seenAt {
			return true
		}
	}
	return false
}

// ackOutcome records the outcome of one acknowledgement by member, sent
// at sentAt in the consumers' request number reqNo.
//
// An acknowledgement that succeeds applies to the acquisition member
// holds when it arrives, whatever delivery member meant: the request
// names offsets, not delivery counts, and the share partition checks
// only that member holds each offset's current acquisition with a valid
// lock (Kafka's SharePartition does the same). So when an acknowledgement
// sent for delivery h.count succeeds after the offset was handed out
// again with a higher count:
//   - to member itself, in a request answered before this one was sent:
//     it applied to that delivery (seed 978810 --all-faults: a consumer
//     stalled past its lock, was handed the record again, and then sent
//     its acknowledgement of the first delivery);
//   - to member, as far as clients know, through a fetch of member whose
//     answer was lost since: which delivery it applied to is unknown;
//   - otherwise a member acknowledged a record another member holds
//     (redelivered-finished).
//
// Piggybacked acknowledgements are applied before the same ShareFetch
// acquires anything, so a record that fetch hands out does not count as
// held when they arrive (its request number is not below reqNo).
func (w *shareWork) ackOutcome(h held, member string, reqNo int, code int16, topLevel bool, sentAt time.Duration) {
	sr := w.rec(h.part, h.off)
	if h.ack == 3 {
		sr.rejectTried = true
	}
	if h.slow && code == kerr.InvalidRecordState.Code {
		w.stats.slowRefused++
		w.r.cover("share late acknowledgement refused")
	}
	if h.slow && sr.maxCount > h.count && sr.holder != member {
		w.r.cover(covShareLateAckOthers)
	}
	switch {
	case code == 0:
		count, unseen := h.count, false
		if sr.maxCount > h.count {
			switch {
			case w.mayHoldUnseen(sr, member, reqNo):
				unseen = true // applied to a delivery nobody saw member get, maybe
				w.r.cover(covShareAckUnseenDelivery)
			case sr.holder == member && sr.holderReq < reqNo:
				count = sr.maxCount // applied to the delivery member holds now
				w.r.cover(covShareAckLaterDelivery)
			}
		}
		switch h.ack {
		case 1:
			w.stats.accepted++
			if unseen {
				sr.maybe = true
				return
			}
			if sr.accepted != 0 && sr.accepted != count {
				w.bad("double-accept", fmt.Sprintf("%s/%d offset %d accepted at delivery %d and at %d", shareTopic, h.part, h.off, sr.accepted, count))
			}
			sr.accepted = count
		case 3:
			w.stats.rejected++
			if unseen {
				sr.maybe = true
				return
			}
			sr.rejected = count
		default:
			w.stats.released++
			w.noteRelease(sr, count, sentAt) // unseen: a lower count than applied, a shorter least delay
			return
		}
		if sr.maxCount > count {
			w.bad("redelivered-finished", fmt.Sprintf("%s/%d offset %d: an acknowledgement (type %d) at delivery %d by %s succeeded after it was handed out again with count %d to %s",
				shareTopic, h.part, h.off, h.ack, h.count, member, sr.maxCount, sr.holder))
		}
	case topLevel && code > 0 && code != kerr.RequestTimedOut.Code, code == kerr.InvalidRecordState.Code, code == kerr.InvalidRequest.Code:
		// Not applied.
	default:
		if h.ack != 2 {
			sr.maybe = true
		}
	}
}

// acquired checks and keeps the records a fetch handed out; it returns
// how many.
func (c *shareConsumer) acquired(part int32, rs []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, sentAt time.Duration, reqNo int) int {
	w, r := c.w, c.w.r
	n := 0
	for _, a := range rs {
		for off := a.FirstOffset; off <= a.LastOffset; off++ {
			n++
			w.handedOut(part, off, a.DeliveryCount, c.member, reqNo, sentAt)
			h := held{part: part, off: off, count: a.DeliveryCount, ack: 1}
			if !r.stopping {
				switch x := w.rng.Float64(); {
				case x < shareAcceptProb:
				case x < shareAcceptProb+shareReleaseP:
					h.ack = 2
				case x < shareAcceptProb+shareReleaseP+shareRejectP:
					h.ack = 3
				default:
					continue // left to its lock's expiry
				}
			}
			c.pending = append(c.pending, h)
		}
	}
	return n
}

// handedOut checks one acquisition, by member in the fetch numbered reqNo
// and sent at sentAt, against what clients were told before.
func (w *shareWork) handedOut(part int32, off int64, count int16, member string, reqNo int, sentAt time.Duration) {
	w.stats.fetched++
	sr := w.rec(part, off)
	where := fmt.Sprintf("%s/%d offset %d", shareTopic, part, off)
	if count < 1 || count > w.limit {
		w.bad("delivery-limit", fmt.Sprintf("%s handed out with delivery count %d (limit %d)", where, count, w.limit))
	}
	if sr.given[count] {
		w.bad("double-delivery", fmt.Sprintf("%s handed out twice with delivery count %d", where, count))
	}
	if sr.accepted != 0 && count > sr.accepted {
		w.bad("redelivered-accepted", fmt.Sprintf("%s accepted at delivery %d, handed out again with count %d", where, sr.accepted, count))
	}
	if sr.rejected != 0 && count > sr.rejected {
		w.bad("redelivered-rejected", fmt.Sprintf("%s rejected at delivery %d, handed out again with count %d", where, sr.rejected, count))
	}
	if count > 1 {
		w.stats.redelivered++
		w.r.cover("share record redelivered")
	}
	w.checkBackoff(sr, where, count, w.r.now())
	sr.given[count] = true
	if count > sr.maxCount {
		sr.maxCount, sr.seenAt, sr.holder, sr.holderReq = count, sentAt, member, reqNo
	}
}

// done reports whether an offset is finished as far as clients know, or
// may be: enough fetches whose answers were lost since it was last seen
// could have delivered it unseen up to the limit (it is then archived,
// rightly).
func (w *shareWork) done(part int32, off int64) bool {
	sr := w.recs[part][off]
	if sr == nil {
		sr = &shareRec{}
	}
	if sr.accepted != 0 || sr.rejected != 0 || sr.maybe || sr.maxCount >= w.limit {
		return true
	}
	return w.lostSince(sr.seenAt) >= int(w.limit-sr.maxCount)
}

// lostSince counts the lost fetches (w.lost) at or after t.
func (w *shareWork) lostSince(t time.Duration) int {
	i, _ := slices.BinarySearch(w.lost, t) // the first at or after t
	return len(w.lost) - i
}

// unfinished counts the offsets below the final high watermarks that are
// not finished, and returns the first.
func (w *shareWork) unfinished() (int, string) {
	n, first := 0, ""
	for part := int32(0); part < shareParts; part++ {
		for off := int64(0); off < w.final[part]; off++ {
			if !w.done(part, off) {
				if n == 0 {
					lost, sr := 0, w.recs[part][off]
					if sr != nil {
						lost = w.lostSince(sr.seenAt)
					}
					first = fmt.Sprintf("(%d fetches lost since it was last handed out) %s/%d offset %d (%+v)",
						lost, shareTopic, part, off, sr)
				}
				n++
			}
		}
	}
	return n, first
}

// allFinished reports whether every offset below the final high
// watermarks is finished (unfinished's count is 0). finishShare asks after
// every event, and while one is not, asking again first whether the one
// found last time still is not answers at once, where a scan of tens of
// thousands of offsets would come to the same answer; only when that one
// is finished does it scan again.
func (w *shareWork) allFinished() bool {
	if h := w.unfinishedHint; h.set && !w.done(h.part, h.off) {
		return false
	}
	for part := int32(0); part < shareParts; part++ {
		for off := int64(0); off < w.final[part]; off++ {
			if !w.done(part, off) {
				w.unfinishedHint = offsetHint{part: part, off: off, set: true}
				return false
			}
		}
	}
	w.unfinishedHint = offsetHint{}
	return true
}

// offsetHint names a share-group offset allFinished found unfinished.
type offsetHint struct {
	part int32
	off  int64
	set  bool
}

// finishShare, after the heal: reads the final high watermarks, lets the
// consumers (accepting everything now) finish every record below them,
// and checks that none was skipped.
func (r *run) finishShare() {
	w := r.share
	if w == nil || !w.ready {
		return
	}
	deadline := r.now() + r.o.LivenessMax
	for part := int32(0); part < shareParts; part++ {
		got := false
		for !got && r.now() < deadline && !r.halted {
			w.highWatermark(part, func(hw int64) {
				w.final[part], got = hw, true
			})
			r.runUntil(func() bool { return got }, time.Second)
		}
	}
	r.runUntil(w.allFinished, deadline-r.now())
	w.finished = true
	n, first := w.unfinished()
	if n > 0 && !r.halted {
		w.bad("skipped", fmt.Sprintf("%d offsets below the final high watermarks %v never finished within %v of the heal; first %s",
			n, w.final, r.o.LivenessMax, first))
	}
	if w.dlq && !r.halted {
		w.checkDLQ()
	}
	s := w.stats
	r.note(fmt.Sprintf("share: %d handed out (%d redelivered), %d accepted, %d released, %d rejected, %d consumer crashes, %d slow acks (%d refused); final %v; dead-letter topic %v; backoff %+v (%d redeliveries after a release checked, %d coordinator moves)",
		s.fetched, s.redelivered, s.accepted, s.released, s.rejected, s.crashes, s.slow, s.slowRefused, w.final, w.dlq, w.backoff, s.backoffChecked, s.moves))
	if s.accepted > 0 {
		r.cover("share record accepted")
	}
}

// highWatermark asks the partition's leader for its high watermark; done
// is not called on failure.
func (w *shareWork) highWatermark(part int32, done func(int64)) {
	r := w.r
	leader, ok := w.leaders[part]
	if !ok {
		w.metadata(func() {})
		return
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID = 4, -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = shareTopic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = part, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r.kn.call(leader, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			lr := resp.(*kmsg.ListOffsetsResponse)
			if len(lr.Topics) == 1 && len(lr.Topics[0].Partitions) == 1 && lr.Topics[0].Partitions[0].ErrorCode == 0 {
				done(lr.Topics[0].Partitions[0].Offset)
				return
			}
		}
		delete(w.leaders, part)
	})
}
