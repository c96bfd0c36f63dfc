package node

// Produce (key 0), versions 0-12; v0-2 are advertised only so librdkafka
// detects codec support, and are answered UNSUPPORTED_VERSION (as Kafka 4
// does): they predate the v2 batch format Floe stores.
//
// Each partition's records must be exactly one v2 batch (v3+ rule). It is
// validated whole (magic, lengths, CRC, codec, record framing, size against
// max.message.bytes, keys on compacted topics) before anything is written;
// a bad batch gets CORRUPT_MESSAGE, INVALID_RECORD or MESSAGE_TOO_LARGE and
// the log is untouched. The leader assigns offsets and proposes the batch to
// the partition's Raft group.
//
// acks=0: no response at all. acks=1: answered once the leader has
// appended (not yet replicated nor fsynced: documented as weaker). acks=-1:
// answered once the batch is committed — fsynced on a quorum — and applied
// on the leader, or REQUEST_TIMED_OUT after the request's timeout (the
// write may still happen: retry with idempotence). min.insync.replicas is
// checked against the voters the leader heard from recently
// (NOT_ENOUGH_REPLICAS). Idempotent batches follow docs/kafka-notes.md: a
// duplicate is answered with its original offset once that is committed.
// Transactional batches (docs/transactions.md) need the request's
// transactional id; the first one of a transaction on a partition must
// follow AddPartitionsToTxn (checked with the coordinator, on
// whichever broker it is on: INVALID_TXN_STATE otherwise; txn_verify.go),
// and a producer with a
// transaction open on the partition may not write outside it
// (INVALID_TXN_STATE).
//
// Authorization: WRITE on each topic (TOPIC_AUTHORIZATION_FAILED on its
// partitions) and, for a transactional producer, WRITE on its
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every
// partition). Idempotent producers need nothing more here (KIP-679: the
// check is InitProducerId's).

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/partition"
	"github.com/floe-broker/floe/node/records"
)

// produceTimeoutDefault applies when a client sends no timeout.
const produceTimeoutDefault = 30 * time.Second

// producing is one Produce request waiting for its partitions.
type producing struct {
	resp      *kmsg.ProduceResponse
	respond   func(kmsg.Response)
	remaining int
	done      bool
	stopTimer func() // cancels the timeout timer, once armed
	listener  string // the client's listener, for leader hints' addresses
	// The response of the common request, one topic with one partition,
	// lives here, so that it costs no allocation of its own (issue 21).
	oneTopic [1]kmsg.ProduceResponseTopic
	onePart  [1]kmsg.ProduceResponseTopicPartition
}

func (pr *producing) finish() {
	if pr.done {
		return
	}
	pr.done = true
	if pr.stopTimer != nil {
		pr.stopTimer()
	}
	pr.respond(pr.resp)
}

func serveProduce(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	az := r.authorize(c, req)
	txnDenied := req.TransactionID != nil && !az.txnID(*req.TransactionID, kmsg.ACLOperationWrite)
	denied := deniedTopics(az, req.Topics, func(t kmsg.ProduceRequestTopic) string { return t.Topic }, kmsg.ACLOperationWrite)
	// remaining starts at one for the loop below, so a partition whose
	// commit is already known (a duplicate of an applied batch) cannot
	// complete the request before the other partitions are appended.
	pr := &producing{resp: resp, respond: respond, remaining: 1, listener: c.Listener}
	now := r.env.Clock.Now()
	if len(req.Topics) == 1 {
		resp.Topics = pr.oneTopic[:0]
	}
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		if len(req.Topics) == 1 && len(rt.Partitions) == 1 {
			st.Partitions = pr.onePart[:0]
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	for ti, rt := range req.Topics {
		for pi, rp := range rt.Partitions {
			sp := &resp.Topics[ti].Partitions[pi]
			switch {
			case txnDenied:
				sp.ErrorCode = errTxnAuth.Code
				continue
			case denied[rt.Topic]:
				sp.ErrorCode = errTopicAuth.Code
				continue
			}
			pre, ok := c.Prepared.batch(ti, pi)
			r.produceOne(req, rt.Topic, rp.Records, sp, pr, now, pre, ok, c.Trace)
		}
	}
	pr.remaining--
	if req.Acks == 0 {
		pr.done = true
		respond(nil)
		return
	}
	if pr.remaining == 0 {
		pr.finish()
		return
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = produceTimeoutDefault
	}
	// On the reactor's deadline queue, so it answers before the request's
	// deadline (deadline.go) due at the same instant.
	id := r.after(timeout, func() {
		if pr.done {
			return
		}
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				sp := &resp.Topics[ti].Partitions[pi]
				if sp.BaseOffset == pendingOffset {
					sp.BaseOffset = -1
					sp.ErrorCode = kerr.RequestTimedOut.Code
				}
			}
		}
		pr.finish()
	})
	pr.stopTimer = func() { r.cancelTimer(id) }
}

// hintLeader tells a client that sent a produce to a former leader where
// the partition's leader is now (KIP-951, v10+): the leader and its epoch in
// the partition's answer, its address in the response, so the client moves
// at once instead of waiting for its next metadata refresh.
func (r *Reactor) hintLeader(resp *kmsg.ProduceResponse, listener, topic string, sp *kmsg.ProduceResponseTopicPartition) {
	if resp.Version < 10 {
		return
	}
	id, epoch, ok := r.leaderHint(topic, sp.Partition)
	if !ok || uint64(id) == r.self {
		return
	}
	b, ok := r.ctl.state.Brokers[id]
	if !ok {
		return
	}
	host, port, ok := b.Address(listener)
	if !ok {
		return
	}
	sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = id, epoch
	for _, rb := range resp.Brokers {
		if rb.NodeID == id {
			return
		}
	}
	rb := kmsg.NewProduceResponseBroker()
	rb.NodeID, rb.Host, rb.Port = b.ID, host, port
	if b.Rack != "" {
		rb.Rack = kmsg.StringPtr(b.Rack)
	}
	resp.Brokers = append(resp.Brokers, rb)
}

// leaderHint returns the leader and epoch of a partition as this broker
// knows them.
func (r *Reactor) leaderHint(topic string, partition int32) (int32, int32, bool) {
	t, ok := r.ctl.state.Topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return 0, 0, false
	}
	id, epoch := r.partitionLeader(&t.Partitions[partition])
	return id, epoch, id > 0 && epoch >= 0
}

// failPartition sets sp's error. A function, not a closure over sp: the
// callbacks that use it escape, and a closure would cost every produced
// partition one more allocation.
func failPartition(sp *kmsg.ProduceResponseTopicPartition, err error) {
	sp.ErrorCode, sp.ErrorMessage = errParts(err)
}

// pendingOffset marks a partition whose commit is still awaited.
const pendingOffset = -2

func (r *Reactor) produceOne(req *kmsg.ProduceRequest, topic string, data []byte, sp *kmsg.ProduceResponseTopicPartition,
	pr *producing, now time.Time, pre preparedBatch, prepared bool, tr *Trace) {
	if req.Version < 3 {
		failPartition(sp, kerr.UnsupportedVersion)
		return
	}
	p, ok := r.byName[topicPartition{topic, sp.Partition}]
	if !ok {
		failPartition(sp, r.missingPartition(topic, sp.Partition))
		return
	}
	if t := r.ctl.state.Topics[topic]; t != nil && t.Internal {
		// Internal topics hold the brokers' own state (group offsets) in
		// their own record format; a client write would corrupt it.
		failPartition(sp, withMessage(kerr.TopicAuthorizationFailed, "internal topics are written by the brokers only"))
		return
	}
	if !p.IsLeader() || r.buggify(bugProduceNotLeader) {
		failPartition(sp, kerr.NotLeaderForPartition)
		r.hintLeader(pr.resp, pr.listener, topic, sp)
		return
	}
	stage := -1
	if tr != nil {
		stage = tr.begin(StageValidate, topic, sp.Partition, r.env.Clock.Now())
	}
	h, err := r.checkProduce(data, p, pre, prepared)
	if tr != nil {
		tr.end(stage, r.env.Clock.Now())
	}
	if err != nil {
		failPartition(sp, err)
		return
	}
	// A transactional batch that opens its transaction here may wait for
	// the coordinator's word (txn_verify.go); the request waits with it.
	sp.BaseOffset = pendingOffset
	pr.remaining++
	r.verifyTxnProduce(req.TransactionID, p, h, req.Version >= 12, func(err error) {
		if pr.done && req.Acks != 0 {
			return // answered already (timed out): nothing is appended
		}
		sp.BaseOffset = -1
		if err != nil {
			failPartition(sp, err)
		} else {
			r.appendOne(req, topic, data, sp, pr, now, p, h, tr)
			r.queueProcess() // a verified append may run outside the request's turn
		}
		if pr.remaining--; pr.remaining == 0 {
			pr.finish()
		}
	})
}

// appendOne appends a validated batch to p, the partition's leader.
func (r *Reactor) appendOne(req *kmsg.ProduceRequest, topic string, data []byte, sp *kmsg.ProduceResponseTopicPartition,
	pr *producing, now time.Time, p *partition.Partition, h records.Header, tr *Trace) {
	if req.Acks == -1 && (p.Cfg.MinInsyncReplicas > 1 && len(r.activeVoters(p.Replica())) < p.Cfg.MinInsyncReplicas ||
		r.buggify(bugProduceNotEnoughReplicas)) {
		failPartition(sp, kerr.NotEnoughReplicas)
		return
	}
	stage := -1
	if tr != nil {
		stage = tr.begin(StageAppend, topic, sp.Partition, r.env.Clock.Now())
	}
	res, err := p.Append(data, h, now)
	if tr != nil {
		tr.end(stage, r.env.Clock.Now())
	}
	if errors.Is(err, kerr.OutOfOrderSequenceNumber) && !r.leaseHeld(p) {
		// OUT_OF_ORDER_SEQUENCE_NUMBER says what the producer table does
		// not hold, and a leader without its lease may have been deposed
		// without knowing it: another leader may have written the batches
		// before this one (a paused leader replaying a produce it held,
		// long sim seed 3800056). Only a leader no other can have replaced
		// may refuse; this one answers retriably, as reads do (lease.go).
		err = kerr.NotLeaderForPartition
	}
	if err != nil {
		failPartition(sp, err)
		if errors.Is(err, kerr.NotLeaderForPartition) {
			r.hintLeader(pr.resp, pr.listener, topic, sp)
		}
		return
	}
	sp.LogStartOffset = p.StartOffset()
	if p.Cfg.LogAppendTime {
		sp.LogAppendTime = now.UnixMilli()
	}
	if !res.Duplicate {
		r.stats.BytesIn += int64(len(data))
		r.stats.RecordsIn += int64(h.RecordCount)
		p.Traffic.BytesIn += int64(len(data))
		p.Traffic.RecordsIn += int64(h.RecordCount)
	}
	if req.Acks != -1 && !res.Duplicate {
		sp.BaseOffset = res.BaseOffset
		return
	}
	sp.BaseOffset = pendingOffset
	pr.remaining++
	base := res.BaseOffset
	if tr != nil {
		stage = r.traceCommitWait(tr, topic, sp.Partition, !res.Duplicate)
	}
	p.WaitCommit(res.Index, res.Term, base, func(err error) {
		if pr.done {
			return
		}
		if tr != nil {
			tr.end(stage, r.env.Clock.Now())
		}
		if err == nil && r.buggify(bugProduceLostAnswer) {
			err = kerr.RequestTimedOut // BUGGIFY: a lost answer (buggify.go)
		}
		if err != nil {
			sp.BaseOffset = -1
			failPartition(sp, err)
		} else {
			sp.BaseOffset = base
		}
		pr.remaining--
		if pr.remaining == 0 {
			pr.finish()
		}
	})
}

// checkProduce runs the checks a batch must pass before its transaction is
// verified (txn_verify.go): well-formed and accepted by the topic. Enough
// replicas for acks=all is checked at the append (appendOne), which a
// verification may delay.
func (r *Reactor) checkProduce(data []byte, p *partition.Partition, pre preparedBatch, prepared bool) (records.Header, error) {
	h, err := validateProduce(data, p.Cfg, pre, prepared)
	if err != nil {
		r.stats.BadBatches++
		return h, err
	}
	return h, nil
}

// traceCommitWait opens a traced produce's quorum-wait stage and returns
// its index; written (a new entry, not a duplicate's wait) also queues an
// fsync stage for the next round of fsyncs (trace.go).
func (r *Reactor) traceCommitWait(tr *Trace, topic string, partition int32, written bool) int {
	now := r.env.Clock.Now()
	if written {
		i := tr.begin(StageFsync, topic, partition, time.Time{})
		r.traceSync.waiting = append(r.traceSync.waiting, traceSync{tr, i})
	}
	return tr.begin(StageQuorum, topic, partition, now)
}

// validateProduce checks that data is exactly one well-formed batch that
// the topic accepts. A batch the runtime already checked (prepared) only
// needs the checks that depend on the topic's configuration.
func validateProduce(data []byte, cfg partition.Config, pre preparedBatch, prepared bool) (records.Header, error) {
	opts := records.ValidateOptions{MaxMessageBytes: cfg.MaxMessageBytes, RequireKeys: cfg.Compact}
	s, err := pre.summary, pre.err
	if !prepared || cfg.Compact {
		s, err = checkBatch(data, opts)
	} else if err == nil && cfg.MaxMessageBytes > 0 && len(data) > cfg.MaxMessageBytes {
		// The same check and code ValidateWith applies first.
		s, err = checkBatch(data, opts)
	}
	if err != nil {
		return records.Header{}, err
	}
	if s.HasProducerID() && s.BaseSequence < 0 {
		return records.Header{}, withMessage(kerr.InvalidRecord, "a producer's batch must carry a sequence")
	}
	if s.MaxTimestamp != s.Header.MaxTimestamp && s.MaxTimestamp != records.NoTimestamp {
		// The time index trusts the batch's maxTimestamp; a client that
		// wrote a wrong one gets it corrected, as Kafka does.
		if err := records.SetMaxTimestamp(data, s.MaxTimestamp); err != nil {
			return records.Header{}, kerrOf(err)
		}
		s.Header.MaxTimestamp = s.MaxTimestamp
	}
	return s.Header, nil
}

// checkBatch validates data as exactly one batch under opts.
func checkBatch(data []byte, opts records.ValidateOptions) (records.Summary, error) {
	batches, err := records.Split(data)
	if err != nil {
		return records.Summary{}, kerrOf(err)
	}
	if len(batches) != 1 {
		return records.Summary{}, withMessage(kerr.InvalidRecord, "a produce request must carry exactly one batch per partition")
	}
	s, err := records.ValidateWith(data, opts)
	if err != nil {
		return records.Summary{}, kerrOf(err)
	}
	return s, nil
}

// kerrOf maps a records validation error to its Kafka error.
func kerrOf(err error) error {
	code := records.ErrorCode(err)
	if ke := kerr.ErrorForCode(code); ke != nil {
		return withMessage(ke, err.Error())
	}
	return withMessage(kerr.CorruptMessage, err.Error())
}
