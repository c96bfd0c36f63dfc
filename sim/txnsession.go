package sim

// A transactional producer's conversation with its transaction
// coordinator, shared by the transactional workload (txn.go) and the one
// on a compacted topic (txncompact.go): FindCoordinator key type 1,
// InitProducerId, AddPartitionsToTxn and EndTxn, and the requests both
// send to partition leaders. The producers differ in what they do between
// these steps and in which random stream times them, so the session calls
// back into them (open, next, abort, ready) and waits with their think
// and backoff.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
)

// txnSession is one transactional id's state at its client.
type txnSession struct {
	r     *run
	id    string
	coord netx.NodeID // 0: unknown
	pid   int64
	epoch int16
	// gaveUp: a produce of the current transaction was given up with its
	// outcome unknown, so the partition's sequence may have moved: after
	// the abort the producer takes a new epoch (sequences restart), as
	// clients do (KIP-360), or its next batch could be taken for a
	// duplicate of the abandoned one.
	gaveUp bool
	// tv2: the producer uses transaction version 2 (KIP-890 part 2):
	// EndTxn v5, whose answer is the epoch to use next (onEpoch is called
	// when it changes).
	tv2     bool
	onEpoch func()
	// afterFind, when set, is what to do once the coordinator is found
	// again (instead of resume).
	afterFind func()
	// think is the wait before the producer's next step, backoff the
	// wait before a retry.
	think, backoff func() time.Duration
	// The producer: whether a transaction is open; start the next one;
	// end the open one as an abort; a new producer id and epoch came.
	open  func() bool
	next  func()
	abort func()
	ready func()
	// stop, when set, is called once the producer has counted itself
	// out of the run (stopped).
	stop func()
}

// stopped reports whether the run is stopping and the producer is between
// transactions; it then counts itself out of the run.
func (s *txnSession) stopped() bool {
	if s.r.stopping && !s.open() {
		s.r.active--
		if s.stop != nil {
			s.stop()
		}
		return true
	}
	return false
}

// resume continues after the coordinator is known: a producer without a
// producer id initializes; one in the middle of ending a transaction
// retries the end as an abort.
func (s *txnSession) resume() {
	switch {
	case s.pid < 0:
		s.init()
	case s.open():
		s.abort()
	default:
		s.next()
	}
}

func (s *txnSession) then(fn func()) { s.r.w.After(s.think(), fn) }

// find looks for the transaction coordinator, then resumes.
func (s *txnSession) find() {
	if s.stopped() {
		return
	}
	r := s.r
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version, req.CoordinatorType, req.CoordinatorKeys = 4, 1, []string{s.id}
	r.kn.call(r.meta.anyNode(), req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			if cs := resp.(*kmsg.FindCoordinatorResponse).Coordinators; len(cs) == 1 && cs[0].ErrorCode == 0 && cs[0].NodeID > 0 {
				s.coord = netx.NodeID(cs[0].NodeID)
				s.then(s.resumeOrAfterFind)
				return
			}
		}
		r.w.After(s.backoff(), s.find)
	})
}

func (s *txnSession) resumeOrAfterFind() {
	if next := s.afterFind; next != nil {
		s.afterFind = nil
		next()
		return
	}
	s.resume()
}

// notCoord reports an answer that means the coordinator moved.
func notCoord(err error, code int16) bool {
	return err != nil || code == kerr.NotCoordinator.Code || code == kerr.CoordinatorNotAvailable.Code
}

// coordFailed handles an error from the coordinator: look for it again if
// it moved, else retry after a backoff.
func (s *txnSession) coordFailed(err error, code int16, retry func()) {
	if notCoord(err, code) {
		s.coord = 0
		s.r.w.After(s.backoff(), s.find)
		return
	}
	s.r.w.After(s.backoff(), retry)
}

// init gets a producer id and epoch (fencing any earlier incarnation and
// aborting its open transaction), then calls ready.
func (s *txnSession) init() {
	if s.stopped() {
		return
	}
	r := s.r
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.TransactionalID = kmsg.StringPtr(s.id)
	req.TransactionTimeoutMillis = txnTimeoutMs
	req.ProducerID, req.ProducerEpoch = -1, -1
	r.kn.call(s.coord, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		var code int16
		if err == nil {
			ir := resp.(*kmsg.InitProducerIDResponse)
			if code = ir.ErrorCode; code == 0 {
				s.pid, s.epoch = ir.ProducerID, ir.ProducerEpoch
				s.ready()
				return
			}
		}
		s.coordFailed(err, code, s.init)
	})
}

// addPartitions sends AddPartitionsToTxn (v3) for parts of topic and calls
// done with the first error of any partition (UNKNOWN_SERVER_ERROR and err
// when no answer came).
func (s *txnSession) addPartitions(topic string, parts []int32, done func(code int16, err error)) {
	r := s.r
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, s.id, s.pid, s.epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic = topic
	rt.Partitions = append(rt.Partitions, parts...)
	req.Topics = append(req.Topics, rt)
	r.kn.call(s.coord, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		code := kerr.UnknownServerError.Code
		if err == nil {
			code = 0
			for _, t := range resp.(*kmsg.AddPartitionsToTxnResponse).Topics {
				for _, sp := range t.Partitions {
					if sp.ErrorCode != 0 {
						code = sp.ErrorCode
					}
				}
			}
		}
		done(code, err)
	})
}

// txnEnd is what a producer does with an EndTxn answer.
type txnEnd struct {
	// answered, if set, sees every answer first (for the trace).
	answered func(commit bool, code int16, err error)
	// settled: the transaction's outcome is known to the producer:
	// committed or aborted as the coordinator acknowledged, or unknown
	// (an abort was refused: fenced, not open, concurrent). The session
	// then goes on: the next transaction, or a new producer epoch.
	settled func(txnOutcome)
	// concurrent counts the commit's CONCURRENT_TRANSACTIONS answers.
	concurrent int
}

// txnEndConcurrentMax bounds the retries of a commit told
// CONCURRENT_TRANSACTIONS.
const txnEndConcurrentMax = 20

// end commits or aborts the open transaction. A failed commit is retried
// as an abort (as franz-go's GroupTransactSession does): an acknowledged
// abort means the transaction must never be visible. When the coordinator
// moved, the session finds it again and the producer's resume retries the
// end as an abort.
func (s *txnSession) end(commit bool, h txnEnd) {
	r := s.r
	if s.coord == 0 {
		s.find()
		return
	}
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = 3, s.id, s.pid, s.epoch, commit
	if s.tv2 {
		req.Version = 5
	}
	r.kn.call(s.coord, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		var code int16
		pid, epoch := s.pid, s.epoch
		if err == nil {
			er := resp.(*kmsg.EndTxnResponse)
			code = er.ErrorCode
			if s.tv2 {
				pid, epoch = er.ProducerID, er.ProducerEpoch
			}
		}
		if h.answered != nil {
			h.answered(commit, code, err)
		}
		switch {
		case err == nil && code == 0:
			if commit {
				h.settled(txnCommitted)
			} else {
				h.settled(txnAborted)
			}
			if pid != s.pid || epoch != s.epoch {
				s.pid, s.epoch = pid, epoch
				s.onEpoch()
			}
			if s.gaveUp {
				s.pid, s.gaveUp = -1, false
			}
			if s.tv2 {
				// As franz-go's GroupTransactSession does, the
				// next transaction begins at once: its first
				// batches' implicit adds race the ended one's
				// markers (and, after a coordinator move, their
				// resending).
				s.r.w.After(s.think()/16, s.resume)
				return
			}
			s.then(s.resume)
		case s.tv2 && commit && err == nil && code == kerr.ConcurrentTransactions.Code && h.concurrent < txnEndConcurrentMax:
			// franz-go retries the commit itself (the previous
			// transaction's markers, or an add, are in flight).
			h.concurrent++
			r.w.After(s.backoff(), func() { s.end(true, h) })
		case commit || notCoord(err, code):
			if notCoord(err, code) {
				s.coord = 0
			}
			if s.coord == 0 {
				r.w.After(s.backoff(), s.find) // resume retries the end as an abort
				return
			}
			r.w.After(s.backoff(), func() { s.end(false, h) })
		default:
			// A new producer epoch settles it.
			h.settled(txnUnknown)
			s.pid, s.gaveUp = -1, false
			s.then(s.init)
		}
	})
}

// txnProduceRequest is an acks=all Produce (v9, or v12 for a transaction
// version 2 client: the leader adds the partition to the transaction) of
// one batch to one partition, transactional when txnID is not empty.
func (r *run) txnProduceRequest(topic string, part int32, txnID string, tv2 bool, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks = 9, -1
	if tv2 {
		req.Version = 12
	}
	if txnID != "" {
		req.TransactionID = kmsg.StringPtr(txnID)
	}
	req.TimeoutMillis = int32((r.o.RequestTimeout * 8 / 10).Milliseconds())
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: part, Records: batch}}
	req.Topics = append(req.Topics, rt)
	return req
}

// txnFetchRequest is a Fetch (v12) of one partition from offset,
// read_committed when committed.
func txnFetchRequest(topic string, part int32, offset int64, partMax int32, committed bool) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes = 12, -1, 256<<10
	if committed {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = part, offset, partMax, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// fetchedPartition returns the one partition of a Fetch answer (its own
// error code to be looked at), or false when the answer carries an error
// or does not hold exactly one partition.
func fetchedPartition(fr *kmsg.FetchResponse) (kmsg.FetchResponseTopicPartition, bool) {
	if fr.ErrorCode != 0 || len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return kmsg.FetchResponseTopicPartition{}, false
	}
	return fr.Topics[0].Partitions[0], true
}
