package node

// Verifying a transaction's partition before its first batch (KIP-890
// part 1).
//
// A transactional batch that opens its producer's transaction on a
// partition (none is open there for the producer, counting entries not yet
// committed) is appended only once the transaction's coordinator said the
// partition was added to the producer's ongoing transaction at that epoch.
// Otherwise a client that writes to a partition it never added (a bug, or a
// zombie whose transaction timed out and was aborted without the client
// knowing) opens a transaction that no marker will ever close, and the
// partition's last stable offset stops for good.
//
// The coordinator here: a direct call (txn.Coordinator.Verify). The
// coordinator on another broker: a node RPC (rpcTxnVerify) carrying an
// AddPartitionsToTxn v4 request with VerifyOnly, served exactly as the
// Kafka API's v4 (api_add_partitions_to_txn.go), and its response
// (rpcTxnVerifyAck). The peer network may lose, duplicate or reorder
// frames: verification changes nothing at the coordinator, so duplicates are
// harmless; answers are matched by this incarnation's nonce and the call's
// id, and a call unanswered within txnVerifyTimeout fails with a retriable
// error.
//
// One call per (partition, producer) at a time: later batches of the same
// producer and epoch wait for the call's answer and are appended after the
// first, in arrival order, so a client's pipelined batches keep their
// sequence order. A marker written for the producer on the partition while a
// call is out voids it (Kafka's VerificationGuard): the transaction the
// coordinator vouched for has ended, and a batch appended now would open a
// new one nobody added. Its waiters get INVALID_TXN_STATE, but only when the
// coordinator said yes: a refusal or a retriable answer stands as it is
// (Kafka checks the guard only when it appends, after a verified answer),
// since a voided retriable answer turned into INVALID_TXN_STATE tells a
// client that its write is refused for good when a retry would have been
// accepted (franz-go then commits the transaction without it: see
// Transaction version 2 below).
//
// TxnOffsetCommit is verified the same way (api_txn_offset_commit.go): the
// group's __consumer_offsets partition must have been added to the
// transaction (AddOffsetsToTxn) before the first transactional offsets are
// written there, or they would stay pending, and the partition's
// transaction open, for good.
//
// Transaction version 2 (KIP-890 part 2: Produce v12+, TxnOffsetCommit
// v5+): the client sends no AddPartitionsToTxn; the same call adds the
// partition instead of verifying it (txn.Coordinator.AddPartitions here,
// the RPC without VerifyOnly there), which starts the transaction when none
// is ongoing. A duplicated or late add is harmless because every end of a
// TV2 transaction bumps the producer epoch (txn.Coordinator.EndTxnV2): an
// add at the old epoch is fenced. A transaction of the producer open here
// at another epoch (the previous one, whose marker has not landed yet)
// does not count as open: the batch must not join it, so it is added, and
// the coordinator answers CONCURRENT_TRANSACTIONS until that marker is
// written.
//
// Under transaction version 2 a marker at the add's own epoch does not void
// it: the transaction at epoch e ends with markers at e + 1 (EndTxnV2), so a
// marker at e is the previous transaction's (the one whose end handed the
// client epoch e), written again by a coordinator that took over and resends
// the markers of a decided transaction, or by a marker retry. It ends
// nothing the add vouches for. Voiding it (as the guard did at first)
// refused a first batch of the client's next transaction with
// INVALID_TXN_STATE whenever the resent marker landed while its add was out:
// franz-go's GroupTransactSession under kill -9 of the coordinator
// (itest TestTxnPipelineKillCoordinator) then committed the transaction
// without that batch, losing its records from a committed transaction.
// Kafka keeps the guard in the same case (UnifiedLog.updateProducers: a
// control batch of a TV2 producer at the guard's epoch). A marker at a
// higher epoch did end the transaction (a timeout or a fence bumped the
// epoch): the add's batch is then fenced, INVALID_PRODUCER_EPOCH.
//
// A transaction version 2 add the coordinator answers CONCURRENT_TRANSACTIONS
// (the producer's previous transaction is decided but its markers are still
// being written: the client produced right after EndTxn) is asked again by
// the partition leader itself every txnAddRetryBackoff until
// txnAddRetryMax has passed since the first ask, as Kafka does
// (add.partitions.to.txn.retry.backoff.ms and .max.ms, 20 and 100 ms): the
// markers usually land within that, and the client's batch is appended
// instead of refused. Each new ask is a new call id, so a late or
// duplicated answer to an earlier ask is ignored; the retries run on the
// reactor's timers (clock.Deadlines), so the simulator replays them.
//
// Errors the produce gets: the coordinator's INVALID_TXN_STATE (partition
// not added, or no transaction ongoing); INVALID_PRODUCER_EPOCH for a
// fenced epoch or a producer id the coordinator does not know (produce has
// no PRODUCER_FENCED before v9 clients, and Kafka answers the same);
// NOT_ENOUGH_REPLICAS, which every client retries, when the coordinator
// cannot be asked or answer now (moving, loading, lost message).

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/internal/plant"
	"github.com/floe-broker/floe/internal/wire"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/partition"
	"github.com/floe-broker/floe/node/records"
	"github.com/floe-broker/floe/node/txn"
)

const (
	rpcTxnVerify    = 16 // a partition leader asks a transaction coordinator (AddPartitionsToTxn v4, VerifyOnly)
	rpcTxnVerifyAck = 17 // the coordinator's AddPartitionsToTxn v4 response

	// txnVerifyTimeout bounds a verification call; the produce then gets
	// a retriable error.
	txnVerifyTimeout = 5 * time.Second

	// A transaction version 2 add told CONCURRENT_TRANSACTIONS is asked
	// again after txnAddRetryBackoff, until txnAddRetryMax has passed
	// since its first ask (Kafka's add.partitions.to.txn.retry.backoff.ms
	// and add.partitions.to.txn.retry.backoff.max.ms defaults).
	txnAddRetryBackoff = 20 * time.Millisecond
	txnAddRetryMax     = 100 * time.Millisecond
)

// txnVerifier holds the verification calls this broker has out.
type txnVerifier struct {
	seq   uint64
	nonce uint64 // drawn at the first call: tells this incarnation's answers from earlier ones'
	calls map[uint64]*verifyCall
	// byKey is the call out for each (partition, producer), at most one.
	byKey map[verifyKey]*verifyCall
}

type verifyKey struct {
	group uint64 // the partition's Raft group
	pid   int64
}

// verifyCall is one verification awaiting the coordinator's answer.
type verifyCall struct {
	id      uint64
	key     verifyKey
	epoch   int16
	term    uint64 // the partition's leader term when asked
	add     bool   // transaction version 2: the coordinator adds the partition
	txnID   string
	tp      txn.TopicPartition
	started time.Duration // when it was first asked
	asks    int           // how many times the coordinator was asked
	voided  bool          // a marker that ends the vouched-for transaction was written meanwhile
	fenced  bool          // transaction version 2: that marker was at a higher epoch
	cancel  func()
	waiters []func(error)
}

// verifyTxnProduce checks a batch about to be appended to p against
// transactions and calls cont with nil when it may be appended, or with
// the error the partition's answer gets: before it returns when no
// coordinator on another broker needs asking, else once it answers.
func (r *Reactor) verifyTxnProduce(txnID *string, p *partition.Partition, h records.Header, add bool, cont func(error)) {
	if !h.IsTransactional() {
		cont(nil)
		return
	}
	if txnID == nil || h.ProducerID < 0 {
		cont(withMessage(kerr.InvalidRecord, "a transactional batch needs a transactional id and a producer id"))
		return
	}
	r.verifyTxnPartition(*txnID, p, h.ProducerID, h.ProducerEpoch, add, cont)
}

// verifyTxnPartition calls cont with nil once the coordinator of txnID
// said p is part of producer pid's ongoing transaction at epoch, or when a
// transaction of pid is open on p already (counting entries not yet
// committed); else with the error (produceVerifyError's). With add (a
// transaction version 2 client) the coordinator adds p instead.
func (r *Reactor) verifyTxnPartition(txnID string, p *partition.Partition, pid int64, epoch int16, add bool, cont func(error)) {
	key := verifyKey{uint64(p.Replica().Group), pid}
	v := &r.txns.verify
	if call := v.byKey[key]; call != nil {
		if call.epoch != epoch {
			cont(withMessage(kerr.NotEnoughReplicas, "another epoch of the producer is being verified"))
			return
		}
		call.waiters = append(call.waiters, cont) // after the first batch, in order
		return
	}
	if p.PendingOpenAt(pid, epoch) {
		cont(nil)
		return
	}
	tp := txn.TopicPartition{Topic: p.Topic, Partition: p.Index}
	if co, err := r.txnCoordinatorFor(txnID); err == nil {
		if !add {
			cont(verifyAnswer(co.Verify(txnID, pid, epoch, []txn.TopicPartition{tp})))
			return
		}
		call := r.newVerifyCall(key, txnID, tp, epoch, p.Term(), add, cont)
		r.askAddLocal(co, call)
		return
	}
	lead, err := r.txnCoordinatorBroker(txnID)
	if err != nil && add && r.txnTopic() == nil {
		// A client of transaction version 2 was given its producer id by
		// a coordinator, so the topic exists and this broker's metadata
		// lags (it just restarted): ask again, rather than refuse the
		// write for good.
		err = produceVerifyError(kerr.CoordinatorNotAvailable)
	}
	if err != nil {
		cont(err)
		return
	}
	if plant.Enabled(plant.TxnVerifySkipped) {
		cont(nil) // the hole this file closes
		return
	}
	r.sendVerify(lead, r.newVerifyCall(key, txnID, tp, epoch, p.Term(), add, cont))
}

// askAddLocal asks the coordinator on this broker to add call's partition.
func (r *Reactor) askAddLocal(co *txn.Coordinator, call *verifyCall) {
	id := call.id
	call.asks++
	co.AddPartitions(call.txnID, call.key.pid, call.epoch, []txn.TopicPartition{call.tp}, r.monoNow(), func(err *kerr.Error) {
		r.coordinatorAnswered(id, err)
	})
}

// coordinatorAnswered completes call id with the coordinator's error for
// its partition, unless it is a transaction version 2 add to ask again.
func (r *Reactor) coordinatorAnswered(id uint64, err *kerr.Error) {
	if r.retryAdd(id, err) {
		return
	}
	r.verifyDone(id, produceVerifyError(err))
}

// retryAdd schedules call id's next ask when it is a transaction version 2
// add the coordinator answered CONCURRENT_TRANSACTIONS and txnAddRetryMax
// has not passed since its first ask; it reports whether it did.
func (r *Reactor) retryAdd(id uint64, err *kerr.Error) bool {
	call := r.txns.verify.calls[id]
	if call == nil || !call.add || err != kerr.ConcurrentTransactions || r.monoNow()-call.started >= txnAddRetryMax {
		return false
	}
	r.after(txnAddRetryBackoff, func() { r.askAgain(id) })
	return true
}

// askAgain asks the coordinator again for call id (retryAdd), under a new
// call id, wherever the coordinator is now.
func (r *Reactor) askAgain(id uint64) {
	v := &r.txns.verify
	call := v.calls[id]
	if call == nil {
		return
	}
	if p := r.parts[call.key.group]; p == nil || !p.IsLeader() || p.Term() != call.term {
		r.verifyDone(id, kerr.NotLeaderForPartition)
		return
	}
	delete(v.calls, id)
	v.seq++
	call.id = v.seq
	v.calls[call.id] = call
	if co, err := r.txnCoordinatorFor(call.txnID); err == nil {
		r.askAddLocal(co, call)
		return
	}
	lead, err := r.txnCoordinatorBroker(call.txnID)
	if err != nil {
		r.verifyDone(call.id, err)
		return
	}
	r.sendVerify(lead, call)
}

// verifyAnswer maps a coordinator's verification to the produce's error.
func verifyAnswer(errs []*kerr.Error, err *kerr.Error) error {
	if err == nil && len(errs) == 1 {
		err = errs[0]
	}
	return produceVerifyError(err)
}

// produceVerifyError maps a coordinator's error for one partition to the
// error the produce gets.
func produceVerifyError(err *kerr.Error) error {
	switch err {
	case nil:
		return nil
	case kerr.InvalidTxnState:
		return withMessage(kerr.InvalidTxnState, "the partition is not part of the producer's transaction (AddPartitionsToTxn first)")
	case kerr.ProducerFenced, kerr.InvalidProducerEpoch, kerr.InvalidProducerIDMapping:
		return withMessage(kerr.InvalidProducerEpoch, "the transaction coordinator fenced this producer epoch")
	}
	return withMessage(kerr.NotEnoughReplicas, "the transaction coordinator could not verify the partition now: "+err.Message)
}

// txnCoordinatorBroker returns the broker leading the __transaction_state
// partition of id, when that is another broker.
func (r *Reactor) txnCoordinatorBroker(id string) (uint64, error) {
	t := r.txnTopic()
	if t == nil || len(t.Partitions) == 0 {
		// No coordinator ever existed, so nothing was added.
		return 0, produceVerifyError(kerr.InvalidTxnState)
	}
	lead, _ := r.partitionLeader(&t.Partitions[txn.PartitionFor(id, int32(len(t.Partitions)))])
	if lead <= 0 || uint64(lead) == r.self {
		return 0, produceVerifyError(kerr.CoordinatorNotAvailable)
	}
	return uint64(lead), nil
}

// newVerifyCall registers a call for (partition, producer) key, answered
// within txnVerifyTimeout.
func (r *Reactor) newVerifyCall(key verifyKey, txnID string, tp txn.TopicPartition, epoch int16, term uint64, add bool, cont func(error)) *verifyCall {
	v := &r.txns.verify
	if v.calls == nil {
		v.calls, v.byKey = map[uint64]*verifyCall{}, map[verifyKey]*verifyCall{}
	}
	if v.nonce == 0 {
		v.nonce = r.env.Rand.Uint64() | 1
	}
	v.seq++
	call := &verifyCall{id: v.seq, key: key, epoch: epoch, term: term, add: add, txnID: txnID, tp: tp,
		started: r.monoNow(), waiters: []func(error){cont}}
	v.calls[call.id], v.byKey[key] = call, call
	tid := r.after(txnVerifyTimeout, func() { r.verifyAnswered(call.id, nil) })
	call.cancel = func() { r.cancelTimer(tid) }
	return call
}

// sendVerify asks the coordinator on broker to for call.
func (r *Reactor) sendVerify(to uint64, call *verifyCall) {
	v := &r.txns.verify
	call.asks++
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = call.txnID, call.key.pid, call.epoch, !call.add
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = call.tp.Topic, []int32{call.tp.Partition}
	tx.Topics = append(tx.Topics, tt)
	req.Transactions = append(req.Transactions, tx)
	var w wire.Writer
	w.U8(frameRPC)
	w.U8(rpcTxnVerify)
	w.Uvarint(v.nonce)
	w.Uvarint(call.id)
	w.Bytes(req.AppendTo(nil))
	r.env.Net.Send(netx.NodeID(to), w.B)
}

// verifyAnswered completes a call with the coordinator's answer (nil:
// none came in time).
func (r *Reactor) verifyAnswered(id uint64, resp *kmsg.AddPartitionsToTxnResponse) {
	switch {
	case resp == nil:
		r.verifyDone(id, withMessage(kerr.NotEnoughReplicas, "the transaction coordinator did not answer the verification"))
	case resp.ErrorCode != 0:
		r.coordinatorAnswered(id, kerrFor(resp.ErrorCode))
	default:
		if err, ok := verifyResult(resp); ok {
			r.coordinatorAnswered(id, err)
			return
		}
		r.verifyDone(id, withMessage(kerr.NotEnoughReplicas, "the transaction coordinator's answer names no partition"))
	}
}

// verifyDone completes a call with the coordinator's answer, unless the
// coordinator said yes but the producer's transaction ended on the
// partition meanwhile, or the partition changed leader.
func (r *Reactor) verifyDone(id uint64, answer error) {
	v := &r.txns.verify
	call := v.calls[id]
	if call == nil {
		return
	}
	delete(v.calls, id)
	delete(v.byKey, call.key)
	call.cancel()
	err := answer
	switch p := r.parts[call.key.group]; {
	case answer == nil && call.fenced:
		err = withMessage(kerr.InvalidProducerEpoch, "a marker at a newer epoch ended the producer's transaction on the partition while it was being added")
	case call.voided && (answer == nil || plant.Enabled(plant.TxnVoidPreviousMarker)):
		err = withMessage(kerr.InvalidTxnState, "the producer's transaction ended on the partition while it was being verified")
	case p == nil || !p.IsLeader() || p.Term() != call.term:
		err = kerr.NotLeaderForPartition
	}
	for _, w := range call.waiters {
		w(err)
	}
}

// verifyResult is the coordinator's error for the one partition a
// verification asked about; ok is false when the answer names none.
func verifyResult(resp *kmsg.AddPartitionsToTxnResponse) (err *kerr.Error, ok bool) {
	for _, t := range resp.Transactions {
		for _, tt := range t.Topics {
			for _, p := range tt.Partitions {
				if p.ErrorCode == 0 {
					return nil, true
				}
				return kerrFor(p.ErrorCode), true
			}
		}
	}
	return nil, false
}

// kerrFor is the Kafka error of a nonzero code (UNKNOWN_SERVER_ERROR for a
// code it does not know).
func kerrFor(code int16) *kerr.Error {
	if ke, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return ke
	}
	return kerr.UnknownServerError
}

// voidVerify is called when a marker at epoch for producer pid is written
// to the partition of Raft group g: a verification out for it no longer
// holds, unless it is a transaction version 2 add at the marker's epoch
// (the marker is the previous transaction's; see the top of the file). At
// an exhausted epoch EndTxnV2 does not bump, so there every marker voids.
func (r *Reactor) voidVerify(g uint64, pid int64, epoch int16) {
	call := r.txns.verify.byKey[verifyKey{g, pid}]
	switch {
	case call == nil:
	case call.add && epoch == call.epoch && epoch < math.MaxInt16-1 && !plant.Enabled(plant.TxnVoidPreviousMarker):
	case call.add && epoch > call.epoch:
		call.voided, call.fenced = true, true
	default:
		call.voided = true
	}
}

// handleTxnVerifyRPC handles the verification RPCs (the reader is past the
// kind).
func (r *Reactor) handleTxnVerifyRPC(from uint64, kind uint8, rd *wire.Reader) {
	nonce, id, body := rd.Uvarint(), rd.Uvarint(), rd.Bytes()
	if rd.Done() != nil {
		r.stats.BadFrames++
		return
	}
	switch kind {
	case rpcTxnVerify:
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 4
		if err := req.ReadFrom(body); err != nil {
			r.stats.BadFrames++
			return
		}
		serveAddPartitionsToTxnBatch(r, req, func(resp kmsg.Response) {
			var w wire.Writer
			w.U8(frameRPC)
			w.U8(rpcTxnVerifyAck)
			w.Uvarint(nonce)
			w.Uvarint(id)
			w.Bytes(resp.AppendTo(nil))
			r.env.Net.Send(netx.NodeID(from), w.B)
		})
	case rpcTxnVerifyAck:
		if nonce != r.txns.verify.nonce {
			return // an answer to an earlier incarnation
		}
		resp := kmsg.NewPtrAddPartitionsToTxnResponse()
		resp.Version = 4
		if err := resp.ReadFrom(body); err != nil {
			r.stats.BadFrames++
			return
		}
		r.verifyAnswered(id, resp)
	}
}
