package sim

import (
	"fmt"
	"math/rand"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
)

// Producer-id expiry (Kafka's producer.id.expiration.ms, issue 13 bug 7;
// node/partition/producers.go). In some seeds a topic of its own gets a
// short expiry and one idempotent producer writes to it, now and then
// idle for longer than the expiry. Kafka (2.5+, ProducerAppendInfo
// .checkSequence) forgets a producer whose last write is that old by the
// log's time (the largest batch timestamp) and then accepts its next
// batch at any sequence; a producer written to more recently is
// remembered, and a batch that skips sequences is refused
// OUT_OF_ORDER_SEQUENCE_NUMBER. The producer probes both sides with a
// batch whose sequence skips ahead:
//
//   - early (its batch timestamp within the expiry of its last
//     acknowledged batch's): the producer is certainly remembered, under
//     any expiry setting at least this one, so the probe must be refused
//     OUT_OF_ORDER_SEQUENCE_NUMBER;
//   - late (its timestamp the expiry past the acknowledgement of its last
//     batch, so past the log's time then), sent to a broker whose replica
//     has applied the topic's expiry (node.ReplicaView.ProducerExpiryMs;
//     a leader's table then has it too): the producer is certainly
//     forgotten, so the probe must be accepted.
//
// Only this producer writes the topic and every timestamp is the world's
// time at sending, so the log's time when a probe is checked is the
// probe's own timestamp. Any answer that is not a definite success or
// refusal (a lost response, a timeout) may leave the batch written, so
// the producer then starts over with a new producer id. A refusal for
// leadership (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
// LEADER_NOT_AVAILABLE) is not definite either: see inDoubt.
const expTopic = "simexpire"

// ExpiryOptions is the producer-id expiry workload.
type ExpiryOptions struct {
	On bool
	Ms int64 // the topic's producer.id.expiration.ms
}

func (o ExpiryOptions) String() string {
	return fmt.Sprintf("producer expiry: topic %s producer.id.expiration.ms=%d", expTopic, o.Ms)
}

// chooseExpiry draws the workload from its own generator: on in about a
// third of the seeds.
func chooseExpiry(seed int64) ExpiryOptions {
	rng := rand.New(rand.NewSource(seed ^ 0xe4b1))
	if rng.Intn(3) != 0 {
		return ExpiryOptions{}
	}
	return ExpiryOptions{On: true, Ms: 100 + rng.Int63n(900)}
}

// expWorkload is the expiry producer's state.
type expWorkload struct {
	r      *run
	o      ExpiryOptions
	rng    *rand.Rand
	leader netx.NodeID // 0: unknown
	pid    int64       // -1: none yet
	epoch  int16
	seq    int32 // the next sequence
	// lastTsMs is the timestamp of the last acknowledged batch of pid,
	// lastAckMs the world's time when it was acknowledged (-1: none).
	lastTsMs, lastAckMs int64
	// resendTsMs (-1: none) and resendValue are a plain write in doubt
	// (inDoubt): the next write resends it as it was.
	resendTsMs  int64
	resendValue string
	plan        int // what the next step does (planWrite, ...)
	n           int
	early, late int // probes answered as expected
	undecided   int // probes put off or sent as plain writes (write says why)
}

func (r *run) startExpiry() {
	if !r.o.Expiry.On {
		return
	}
	w := &expWorkload{r: r, o: r.o.Expiry, rng: rand.New(rand.NewSource(r.o.Seed ^ 0xe4b2)), pid: -1, resendTsMs: -1}
	r.exp = w
	r.active++
	r.createTopic(expTopic, [][2]string{{"producer.id.expiration.ms", fmt.Sprint(w.o.Ms)}}, w.step)
}

// createTopic creates a one-partition topic with configs, retrying until
// it exists, then calls done (or, once the run stops, ends the client).
func (r *run) createTopic(topic string, configs [][2]string, done func()) {
	var try func()
	try = func() {
		if r.stopping {
			r.active--
			return
		}
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = 7, 5000
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = topic, 1, int16(min(3, r.o.Nodes))
		for _, c := range configs {
			cc := kmsg.NewCreateTopicsRequestTopicConfig()
			cc.Name, cc.Value = c[0], kmsg.StringPtr(c[1])
			t.Configs = append(t.Configs, cc)
		}
		req.Topics = append(req.Topics, t)
		r.kn.call(r.meta.anyNode(), req, 6*time.Second, func(resp kmsg.Response, err error) {
			if err == nil {
				if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code == 0 || code == kerr.TopicAlreadyExists.Code {
					done()
					return
				}
			}
			r.w.After(100*time.Millisecond, try)
		})
	}
	try()
}

func (w *expWorkload) after(d time.Duration) {
	w.r.w.After(d, w.step)
}

func (w *expWorkload) think() time.Duration {
	return time.Duration(w.rng.Int63n(int64(w.r.o.ThinkMax) + 1))
}

func (w *expWorkload) nowMs() int64 { return w.r.w.Clock().Now().UnixMilli() }

// Plans for the producer's next step.
const (
	planWrite = iota // a plain write
	planEarly        // an early probe
	planLate         // a late probe
)

// step is the producer's loop: a producer id first, then writes and
// probes, each after a pause. After an acknowledged batch it may plan an
// early probe late in the expiry window (where an expiry too eager
// shows) or a late one just past it (where one too lazy shows).
func (w *expWorkload) step() {
	r := w.r
	if r.stopping {
		r.active--
		return
	}
	if w.pid < 0 {
		w.initPID()
		return
	}
	plan, expiry := w.plan, w.o.Ms
	w.plan = planWrite
	switch {
	case plan == planEarly:
		w.write(w.seq+1+int32(w.rng.Intn(5)), -1)
		return
	case plan == planLate:
		w.write(w.seq+1+int32(w.rng.Intn(5)), 1)
		return
	case w.lastAckMs < 0 || w.resendTsMs >= 0:
		// No acknowledged batch to time a probe from, or one in doubt
		// to settle first.
	case w.rng.Intn(4) == 0:
		w.plan = planEarly
		at := w.lastTsMs + expiry/2 + w.rng.Int63n(max(1, expiry/2-1))
		w.after(time.Duration(max(0, at-w.nowMs())) * time.Millisecond)
		return
	case w.rng.Intn(3) == 0:
		w.plan = planLate
		w.after(time.Duration(max(0, w.lastAckMs+expiry+1-w.nowMs())+w.rng.Int63n(200)) * time.Millisecond)
		return
	}
	w.write(w.seq, 0)
}

func (w *expWorkload) initPID() {
	r := w.r
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.ProducerID, req.ProducerEpoch = -1, -1
	req.TransactionTimeoutMillis = 60000
	r.kn.call(r.meta.anyNode(), req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			if ir := resp.(*kmsg.InitProducerIDResponse); ir.ErrorCode == 0 && ir.ProducerID >= 0 {
				w.pid, w.epoch, w.seq, w.lastTsMs, w.lastAckMs = ir.ProducerID, ir.ProducerEpoch, 0, -1, -1
				w.resendTsMs = -1
			}
		}
		w.after(w.r.backoff())
	})
}

// withLeader calls then with the partition's believed leader, asking for
// metadata first when it is not known (0 if still unknown).
func (w *expWorkload) withLeader(then func(netx.NodeID)) {
	if w.leader != 0 {
		then(w.leader)
		return
	}
	w.r.askLeader(expTopic, func(lead netx.NodeID) {
		if lead != 0 {
			w.leader = lead
		}
		then(w.leader)
	})
}

// expiryApplied reports whether node id is up with a replica that has
// applied the topic's expiry (only this topic sets one).
func (w *expWorkload) expiryApplied(id netx.NodeID) bool {
	rc := w.r.inv.broker(id)
	if rc == nil {
		return false
	}
	for _, v := range rc.Inspect(false) {
		if v.ProducerExpiryMs == w.o.Ms {
			return true
		}
	}
	return false
}

// write sends one batch at sequence seq: probe 0 is a plain write, -1 an
// early probe (must be refused as out of order), 1 a late one (must be
// accepted).
func (w *expWorkload) write(seq int32, probe int) {
	r := w.r
	w.withLeader(func(leader netx.NodeID) {
		if leader == 0 {
			w.after(r.backoff())
			return
		}
		ts := w.nowMs()
		if probe > 0 && !w.expiryApplied(leader) {
			// The leader's table may not have the expiry yet (or the
			// node leads no more): the right answer cannot be told.
			// Later, with fresh metadata.
			w.undecided++
			w.leader, w.plan = 0, planLate
			w.after(r.backoff())
			return
		}
		if probe < 0 && ts >= w.lastTsMs+w.o.Ms {
			// The early window closed while metadata was asked for.
			probe, seq = 0, w.seq
			w.undecided++
		}
		w.n++
		values := []string{fmt.Sprintf("e%d", w.n)}
		if probe == 0 && w.resendTsMs >= 0 {
			// A Kafka client's retry: the same batch, timestamp and all.
			ts, values[0] = w.resendTsMs, w.resendValue
		}
		stamp := producerStamp{pid: w.pid, epoch: w.epoch, seq: seq}
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks = 9, -1
		req.TimeoutMillis = int32((r.o.RequestTimeout * 8 / 10).Milliseconds())
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = expTopic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = encodeBatch(values, ts, stamp)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r.kn.call(leader, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
			code := int16(kerr.UnknownServerError.Code)
			if err == nil {
				for _, t := range resp.(*kmsg.ProduceResponse).Topics {
					for _, p := range t.Partitions {
						code = p.ErrorCode
					}
				}
			}
			w.answered(stamp, ts, values[0], probe, err, code)
			w.after(w.think())
		})
	})
}

// inDoubt reports whether an answer refused a batch for leadership, which
// may yet be written. The product answers NOT_LEADER_OR_FOLLOWER (or
// UNKNOWN_TOPIC_OR_PARTITION when the replica leaves the node) both before
// appending (a stale leader) and after: a leader that proposed the batch
// and then lost its term fails the waiting request, while the entry may
// already be on a quorum and be committed by the next leader. Kafka does
// the same: an acks=all produce appended to the leader's log and parked
// in purgatory is completed with NOT_LEADER_OR_FOLLOWER when leadership
// moves, though a follower that fetched the batch may become leader and
// keep it. That is why the idempotent producer retries such a batch with
// the same sequence: the broker then answers it as a duplicate, or writes
// it if it was lost. Such a batch moves the log's time (its timestamp is
// the newest), so a probe timed from the batch before it is judged
// against the wrong last write (seed 910053: a batch refused
// NOT_LEADER_OR_FOLLOWER was committed, and the late probe 246 ms after it,
// with an expiry of 311 ms, was rightly refused). The producer therefore
// resends a plain write in doubt, unchanged, before anything else; a probe
// in doubt (its sequence skips) starts over with a new producer id. The
// resend cannot find the producer expired: nothing newer than its
// timestamp can be in the log, so it is answered as a duplicate or
// written in order, and either way the producer's last write is at ts.
func inDoubt(code int16) bool {
	return code == kerr.NotLeaderForPartition.Code || code == kerr.UnknownTopicOrPartition.Code || code == kerr.LeaderNotAvailable.Code
}

// answered judges one write's answer and moves the producer on.
func (w *expWorkload) answered(stamp producerStamp, ts int64, value string, probe int, err error, code int16) {
	r := w.r
	if stamp.pid != w.pid {
		return
	}
	switch {
	case err == nil && code == 0:
		if probe < 0 {
			r.inv.fail("producer-expired-early", "producer %d on %s: a batch skipping to sequence %d (expected %d) was accepted %d ms after its last acknowledged batch, within producer.id.expiration.ms=%d",
				stamp.pid, expTopic, stamp.seq, w.seq, ts-w.lastTsMs, w.o.Ms)
		}
		if probe > 0 {
			w.late++
			r.cover(covExpiredAccepted)
		}
		// A resent batch answered as a duplicate keeps its first
		// application's time, which is ts too: it is sent as it was.
		w.seq, w.lastTsMs, w.lastAckMs = stamp.seq+1, ts, w.nowMs()
		w.resendTsMs = -1
	case err == nil && code == kerr.OutOfOrderSequenceNumber.Code && probe < 0:
		w.early++
		r.cover(covKeptRefused)
	case err == nil && code == kerr.OutOfOrderSequenceNumber.Code && probe > 0:
		r.inv.fail("producer-not-expired", "producer %d on %s: a batch at sequence %d (after %d), %d ms after its last batch was acknowledged with producer.id.expiration.ms=%d, was refused as out of order: an expired producer may start at any sequence",
			stamp.pid, expTopic, stamp.seq, w.seq-1, ts-w.lastAckMs, w.o.Ms)
		w.pid = -1
	case err == errConnRefused:
		w.leader = 0 // refused before writing: the producer is as it was
	case err == nil && inDoubt(code) && probe == 0:
		w.leader = 0
		w.resendTsMs, w.resendValue = ts, value
	default:
		// The batch may be written or not: start over.
		w.leader, w.pid = 0, -1
	}
}

func (r *run) finishExpiry() {
	if w := r.exp; w != nil {
		r.w.Tracef("producer expiry: %d batches, %d early probes refused, %d late probes accepted, %d probes put off or sent as plain writes",
			w.n, w.early, w.late, w.undecided)
	}
}
