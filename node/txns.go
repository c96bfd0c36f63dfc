package node

// Transactions on the node: one txn.Coordinator per partition of
// __transaction_state this broker leads, hosted exactly as consumer group
// coordinators are on __consumer_offsets (coordinators.go): created on the
// first FindCoordinator of key type 1, rebuilt by replaying the partition's
// committed records when a local replica becomes a ready leader, closed when
// it stops leading. Until loaded, transactional requests get
// COORDINATOR_LOAD_IN_PROGRESS; for ids of partitions led elsewhere,
// NOT_COORDINATOR.
//
// Markers: the coordinator's txn.Markers is writeMarkers below. A marker
// for a partition led here is appended through its Raft group
// (partition.AppendMarker) and acknowledged once committed; a marker for a
// partition of __consumer_offsets then also completes the group
// coordinator's pending transactional offsets. A marker for a partition led
// by another broker goes there as a node RPC (rpcTxnMarker), answered by
// rpcTxnMarkerAck once committed there; a lost message or answer times out
// and the coordinator sends the whole set again (markers are idempotent).
//
// Hooks the rest of the node calls: txnsSync on every tick, txnsAfterApply
// after every apply.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/internal/wire"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/group"
	"github.com/floe-broker/floe/node/partition"
	"github.com/floe-broker/floe/node/records"
	"github.com/floe-broker/floe/node/txn"
)

// txnCoordinators is the reactor's transaction state.
//
// Invariant: every shard's coordinator is open and its partition was a
// ready leader in shard.term when last reconciled.
type txnCoordinators struct {
	shardSet[*txn.Coordinator]      // by Raft group of the __transaction_state partition (shards.go)
	creating                   bool // a CreateTopic for __transaction_state is in flight
	// markers are marker RPCs awaiting an answer, by request id.
	markers   map[uint64]*markerCall
	markerSeq uint64
	// retired sums the counters of coordinators closed here (TxnStats).
	retired txn.Stats
	// verify holds this broker's verification calls as a partition
	// leader (txn_verify.go).
	verify txnVerifier
}

// markerCall is a marker sent to another broker.
type markerCall struct {
	done  func(error)
	timer func() // cancels the timeout
}

// markerTimeout bounds a marker RPC; the coordinator then retries.
const markerTimeout = 5 * time.Second

func (r *Reactor) txnTopic() *controller.Topic { return r.ctl.state.Topics[txn.StateTopic] }

// ensureTxnTopic asks the controller to create __transaction_state (Kafka's
// transaction.state.log settings: compacted), once at a time
// (ensureInternalTopic).
func (r *Reactor) ensureTxnTopic() {
	r.ensureInternalTopic(txn.StateTopic, r.txnTopic(), &r.txns.creating)
}

// txnCoordinatorFor returns the local coordinator of a transactional id, or
// the error a request for it gets.
func (r *Reactor) txnCoordinatorFor(id string) (*txn.Coordinator, *kerr.Error) {
	t := r.txnTopic()
	if t == nil || len(t.Partitions) == 0 {
		return nil, kerr.NotCoordinator
	}
	return r.txns.lookup(r, t, txn.PartitionFor(id, int32(len(t.Partitions))), r.txnHooks(),
		bugTxnCoordinatorLoading, bugTxnNotCoordinator)
}

// txnHooks build a transaction coordinator by replaying its partition and
// close it, keeping its counters (TxnStats).
func (r *Reactor) txnHooks() shardHooks[*txn.Coordinator] {
	return shardHooks[*txn.Coordinator]{load: r.loadTxnCoordinator, close: func(c *txn.Coordinator) {
		addTxnStats(&r.txns.retired, c.Stats())
		c.Close()
	}}
}

// txnsSync opens, rebuilds and closes transaction coordinators to match
// which __transaction_state partitions this node leads now.
func (r *Reactor) txnsSync() {
	r.txns.sync(r, r.txnTopic(), r.txnHooks())
}

// txnsAfterApply reconciles the coordinator of g when g is a partition of
// __transaction_state.
func (r *Reactor) txnsAfterApply(g uint64) {
	t, cp, ok := r.ctl.state.PartitionByGroup(g)
	if ok && t.Name == txn.StateTopic {
		r.txns.syncOne(r, cp, r.txnHooks())
	}
}

// loadTxnCoordinator builds a coordinator from the partition's committed
// records and starts it (decided transactions get their markers again).
func (r *Reactor) loadTxnCoordinator(p *partition.Partition) (*txn.Coordinator, error) {
	g, term := uint64(p.Replica().Group), p.Term()
	coord := txn.New(r.cfg.Txn, txn.Env{
		Log:         txnStateLog{&offsetsLog{r: r, group: g, term: term}},
		Timers:      reactorTimers{r},
		Markers:     txnMarkers{r},
		ProducerIDs: txnPIDs{r},
		WallMillis:  func() int64 { return r.env.Clock.Now().UnixMilli() },
		Epoch:       int32(term),
	})
	skipped := 0
	err := replayBatches(p, func(h records.Header, b []byte) error {
		if h.IsControl() {
			return nil
		}
		return records.Records(b, func(rec records.Record) error {
			if coord.Replay(rec.Key, rec.Value) != nil {
				skipped++
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if skipped > 0 {
		r.env.Logf("node %d: %s-%d: skipped %d records that do not decode", r.self, p.Topic, p.Index, skipped)
	}
	coord.Start(r.env.Clock.Monotonic())
	return coord, nil
}

// replayBatches calls fn for every committed batch of p, in order. b is
// the logs' read buffer (Partition.ReadTransient): fn reads no log and
// copies what it keeps of b (record bytes are that buffer, or a reused
// decompression buffer, in any case).
func replayBatches(p *partition.Partition, fn func(h records.Header, b []byte) error) error {
	for off := p.StartOffset(); off < p.HighWatermark(); {
		data, err := p.ReadTransient(off, 1<<20)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return nil
		}
		batches, err := records.Split(data)
		if err != nil {
			return err
		}
		for _, b := range batches {
			h, err := records.ParseHeader(b)
			if err != nil {
				return err
			}
			off = h.NextOffset()
			if err := fn(h, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// txnStateLog is a coordinator's txn.Log: its __transaction_state
// partition, written as offsetsLog writes __consumer_offsets.
type txnStateLog struct{ l *offsetsLog }

func (t txnStateLog) Write(recs []txn.Record, done func(now time.Duration, err error)) {
	if t.l.r.buggify(bugTxnStateWriteFails) {
		// BUGGIFY: the write fails before it is appended, as if
		// leadership had just moved (buggify.go).
		done(t.l.r.monoNow(), kerr.NotLeaderForPartition)
		return
	}
	gs := make([]group.Record, len(recs))
	for i, rec := range recs {
		gs[i] = group.Record{Key: rec.Key, Value: rec.Value}
	}
	t.l.Write(gs, done)
}

// txnPIDs hands out producer ids from the broker's block.
type txnPIDs struct{ r *Reactor }

func (t txnPIDs) Next(done func(pid int64, err error)) { t.r.allocProducerID(done) }

// txnMarkers writes a transaction's markers to its partitions.
type txnMarkers struct{ r *Reactor }

// Write implements txn.Markers: every partition's marker, in parallel; done
// gets the first error once all have answered.
func (t txnMarkers) Write(m txn.Marker, done func(now time.Duration, err error)) {
	r := t.r
	if len(m.Partitions) == 0 {
		done(r.monoNow(), nil)
		return
	}
	remaining := len(m.Partitions)
	var first error
	for _, tp := range m.Partitions {
		r.writeMarker(tp.Topic, tp.Partition, m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch, func(err error) {
			if err != nil && first == nil {
				first = err
			}
			if remaining--; remaining == 0 {
				done(r.monoNow(), first)
			}
		})
	}
}

// writeMarker writes one marker, here or on the partition's leader, and
// calls done once it is committed there (or failed).
//
// A partition this broker's metadata does not hold is skipped (done(nil):
// the topic was deleted, nothing to mark, as Kafka does), but only once a
// metadata barrier (metabarrier.go) confirmed it: the metadata may just lag
// the topic's creation (a broker restarted behind the controller, or cut
// off from its leader, that now coordinates transactions another
// coordinator added the partition to). Skipping on lagging metadata left
// the transaction open on the partition for good, its Complete record
// written, with no marker ever to come (simulator seed 1200787
// --all-faults on 1a60155: a restarted n3 with a damaged controller log
// took over __transaction_state and completed two aborts without their
// markers on simtxn-0 and simtxn-2).
func (r *Reactor) writeMarker(topic string, part int32, pid int64, epoch int16, commit bool, coordEpoch int32, done func(error)) {
	if !r.holdsPartition(topic, part) {
		r.afterFreshMetadata(func() {
			if !r.holdsPartition(topic, part) {
				done(nil) // the partition is gone: nothing to mark (Kafka skips it)
				return
			}
			r.writeKnownMarker(topic, part, pid, epoch, commit, coordEpoch, done)
		})
		return
	}
	r.writeKnownMarker(topic, part, pid, epoch, commit, coordEpoch, done)
}

// holdsPartition reports whether the metadata holds partition part of
// topic.
func (r *Reactor) holdsPartition(topic string, part int32) bool {
	t := r.ctl.state.Topics[topic]
	return t != nil && part >= 0 && int(part) < len(t.Partitions)
}

// writeKnownMarker is writeMarker for a partition the metadata holds.
func (r *Reactor) writeKnownMarker(topic string, part int32, pid int64, epoch int16, commit bool, coordEpoch int32, done func(error)) {
	t := r.ctl.state.Topics[topic]
	if p, ok := r.byName[topicPartition{topic, part}]; ok && p.IsLeader() {
		r.appendMarker(p, pid, epoch, commit, coordEpoch, done)
		return
	}
	leader, _ := r.partitionLeader(&t.Partitions[part])
	if leader <= 0 || uint64(leader) == r.self {
		done(kerr.NotLeaderForPartition)
		return
	}
	r.sendMarker(uint64(leader), topic, part, pid, epoch, commit, coordEpoch, done)
}

// appendMarker appends a marker to a partition this broker leads.
func (r *Reactor) appendMarker(p *partition.Partition, pid int64, epoch int16, commit bool, coordEpoch int32, done func(error)) {
	res, err := p.AppendMarker(pid, epoch, commit, coordEpoch, r.env.Clock.Now())
	if err != nil {
		done(err)
		return
	}
	r.voidVerify(uint64(p.Replica().Group), pid, epoch)
	p.WaitCommit(res.Index, res.Term, res.BaseOffset, func(err error) {
		if err == nil && p.Topic == group.OffsetsTopic {
			if sh := r.groups.shards[uint64(p.Replica().Group)]; sh != nil && sh.term == res.Term {
				sh.coord.CompleteTxn(pid, commit)
			}
		}
		done(err)
	})
	r.queueProcess()
}

// The marker RPCs.
const (
	rpcTxnMarker    = 12 // a coordinator's marker for a partition this broker leads
	rpcTxnMarkerAck = 13 // the partition leader: the marker committed, or the error
)

func (r *Reactor) sendMarker(to uint64, topic string, part int32, pid int64, epoch int16, commit bool, coordEpoch int32, done func(error)) {
	if r.txns.markers == nil {
		r.txns.markers = map[uint64]*markerCall{}
	}
	r.txns.markerSeq++
	id := r.txns.markerSeq
	call := &markerCall{done: done}
	r.txns.markers[id] = call
	tid := r.after(markerTimeout, func() { r.markerAnswered(id, kerr.RequestTimedOut.Code) })
	call.timer = func() { r.cancelTimer(tid) }
	var w wire.Writer
	w.U8(frameRPC)
	w.U8(rpcTxnMarker)
	w.Uvarint(id)
	w.String(topic)
	w.Varint(int64(part))
	w.Varint(pid)
	w.U16(uint16(epoch))
	w.Bool(commit)
	w.Varint(int64(coordEpoch))
	r.env.Net.Send(netx.NodeID(to), w.B)
}

func (r *Reactor) markerAnswered(id uint64, code int16) {
	call := r.txns.markers[id]
	if call == nil {
		return
	}
	delete(r.txns.markers, id)
	if call.timer != nil {
		call.timer()
	}
	var err error
	if code != 0 {
		err = kerr.ErrorForCode(code)
	}
	call.done(err)
}

// handleTxnRPC handles the marker RPCs (the reader is past the kind).
func (r *Reactor) handleTxnRPC(from uint64, kind uint8, rd *wire.Reader) {
	switch kind {
	case rpcTxnMarker:
		id, topic, part := rd.Uvarint(), rd.String(), int32(rd.Varint())
		pid, epoch, commit, coordEpoch := rd.Varint(), int16(rd.U16()), rd.Bool(), int32(rd.Varint())
		if rd.Done() != nil {
			r.stats.BadFrames++
			return
		}
		answer := func(err error) {
			var w wire.Writer
			w.U8(frameRPC)
			w.U8(rpcTxnMarkerAck)
			w.Uvarint(id)
			w.Varint(int64(errCode(err)))
			r.env.Net.Send(netx.NodeID(from), w.B)
		}
		p, ok := r.byName[topicPartition{topic, part}]
		if !ok || !p.IsLeader() {
			answer(kerr.NotLeaderForPartition)
			return
		}
		r.appendMarker(p, pid, epoch, commit, coordEpoch, answer)
	case rpcTxnMarkerAck:
		id, code := rd.Uvarint(), int16(rd.Varint())
		if rd.Done() != nil {
			r.stats.BadFrames++
			return
		}
		r.markerAnswered(id, code)
	}
}

// expiredTxn answers the transaction APIs at their deadline (nil for any
// other request): COORDINATOR_LOAD_IN_PROGRESS or REQUEST_TIMED_OUT, which
// clients retry.
func expiredTxn(req kmsg.Request) kmsg.Response {
	timedOut := kerr.RequestTimedOut.Code
	switch q := req.(type) {
	case *kmsg.AddPartitionsToTxnRequest:
		resp := q.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		if q.Version >= 4 {
			resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			return resp
		}
		for _, rt := range q.Topics {
			st := kmsg.NewAddPartitionsToTxnResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, kerr.CoordinatorLoadInProgress.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.AddOffsetsToTxnRequest:
		resp := q.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return resp
	case *kmsg.EndTxnRequest:
		resp := q.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = kerr.CoordinatorLoadInProgress.Code, -1, -1
		return resp
	case *kmsg.TxnOffsetCommitRequest:
		return group.TxnOffsetCommitAnswer(q, func(int, int) int16 { return kerr.CoordinatorLoadInProgress.Code })
	case *kmsg.WriteTxnMarkersRequest:
		resp := q.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
		for _, m := range q.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			for _, t := range m.Topics {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					rp.Partition, rp.ErrorCode = p, timedOut
					rt.Partitions = append(rt.Partitions, rp)
				}
				rm.Topics = append(rm.Topics, rt)
			}
			resp.Markers = append(resp.Markers, rm)
		}
		return resp
	case *kmsg.DescribeTransactionsRequest:
		resp := q.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		for _, id := range q.TransactionalIDs {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, kerr.CoordinatorLoadInProgress.Code, -1, -1, -1
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		return resp
	case *kmsg.ListTransactionsRequest:
		resp := q.ResponseKind().(*kmsg.ListTransactionsResponse)
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return resp
	case *kmsg.DescribeProducersRequest:
		return expiredDescribeProducers(q)
	}
	return nil
}
