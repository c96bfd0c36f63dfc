package reqreply

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Responder answers the requests of a topic as a member of a consumer
// group: at least once (NewResponder), or with each batch of replies and
// the requests' offsets in one transaction (NewTransactionalResponder).
type Responder struct {
	cl      *kgo.Client
	sess    *kgo.GroupTransactSession // nil: at least once
	handler Handler
}

// endTimeout bounds the commit of marked offsets, or the end of a
// transaction, when Run stops: it runs after ctx has ended, so that a
// stopping responder leaves no transaction open (an open transaction
// holds back every read_committed reader of the reply partitions until
// it times out).
const endTimeout = 10 * time.Second

// DefaultTransactionTimeout is a transactional responder's transaction
// timeout unless opts set kgo.TransactionTimeout. It is how long a
// responder killed mid-transaction holds back read_committed readers of
// its reply partitions, unless it is restarted with the same
// transactional id (which aborts the open transaction at once), so it is
// shorter than franz-go's 40 s.
const DefaultTransactionTimeout = 10 * time.Second

// noLinger is the responders' default: a reply is sent as soon as it is
// produced (replies produced meanwhile are batched behind it), not after
// franz-go's default linger of 10 ms, which a round trip would wait out
// whole (`floe bench rr` at concurrency 1: p50 15 ms with it, 2.5 ms
// without). opts may set kgo.ProducerLinger.
var noLinger = kgo.ProducerLinger(0)

// NewResponder joins group on topic, answering at least once. opts
// configure its client (seed brokers at least; not ConsumerGroup,
// ConsumeTopics or commit options, which it sets).
func NewResponder(topic, group string, handler Handler, opts ...kgo.Opt) (*Responder, error) {
	cl, err := kgo.NewClient(append(append([]kgo.Opt{noLinger}, opts...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.AutoCommitMarks(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))...) // replies go to the partition the request names
	if err != nil {
		return nil, err
	}
	return &Responder{cl: cl, handler: handler}, nil
}

// NewTransactionalResponder joins group on topic with franz-go's
// GroupTransactSession under transactionalID: each batch of requests it
// polls is answered in one transaction that also commits the batch's
// offsets, so a read_committed requester sees each reply exactly once,
// even when a responder dies mid-batch (its transaction is aborted and
// the batch answered again). Each responder of a group needs its own
// transactional id; restarting a dead responder with its id aborts its
// open transaction at once. Requests are read read_committed. opts as
// for NewResponder (kgo.TransactionTimeout may be set; default
// DefaultTransactionTimeout).
func NewTransactionalResponder(topic, group, transactionalID string, handler Handler, opts ...kgo.Opt) (*Responder, error) {
	if transactionalID == "" {
		return nil, errors.New("reqreply: transactional responder: empty transactional id")
	}
	// The first reply of a transaction produced right after the previous
	// one ended is refused with a retriable NOT_ENOUGH_REPLICAS while the
	// coordinator still completes that transaction (seen with Floe in
	// `floe bench rr`: in 50 of 51 transactions at concurrency 4);
	// franz-go retries it only after a metadata refresh, at most one per
	// MetadataMinAge: 5 s by default, a 5 s stall each time; 100 ms
	// still cost p50 312 ms at concurrency 4, 10 ms 45 ms.
	all := append([]kgo.Opt{noLinger, kgo.TransactionTimeout(DefaultTransactionTimeout),
		kgo.MetadataMinAge(10 * time.Millisecond)}, opts...)
	sess, err := kgo.NewGroupTransactSession(append(all, kgo.TransactionalID(transactionalID),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return nil, err
	}
	return &Responder{cl: sess.Client(), sess: sess, handler: handler}, nil
}

// ErrBadRequest is why a request without the reply headers is skipped.
var ErrBadRequest = errors.New("reqreply: request without reply topic, partition or correlation id")

// Run answers requests until ctx ends, then commits what it answered (a
// transactional responder aborts the transaction in progress) and leaves
// the group. Requests without reply headers are skipped (committed, no
// reply).
func (s *Responder) Run(ctx context.Context) error { return s.RunN(ctx, 0) }

// RunN is Run that also stops after answering n requests (0: no limit).
func (s *Responder) RunN(ctx context.Context, n int) error {
	defer s.cl.Close()
	if s.sess != nil {
		return s.runTransactional(ctx, n)
	}
	answered := 0
	for ctx.Err() == nil && (n == 0 || answered < n) {
		recs := s.cl.PollRecords(ctx, pollLimit(n, answered)).Records()
		k, err := s.produceReplies(ctx, recs)
		if err != nil {
			if ctx.Err() != nil {
				break // unmarked: answered again by the group (at least once)
			}
			return err
		}
		s.cl.MarkCommitRecords(recs...)
		answered += k
	}
	cctx, cancel := context.WithTimeout(context.Background(), endTimeout)
	defer cancel()
	return s.cl.CommitMarkedOffsets(cctx)
}

// pollLimit is how many records a poll may return when n requests are to
// be answered and answered are: 0 (no limit) when n is.
func pollLimit(n, answered int) int {
	if n == 0 {
		return 0
	}
	return n - answered
}

// reply calls the handler and builds the reply to r: to the topic and
// partition r names, with its correlation id, and the handler's error in
// HeaderReplyError if it failed.
func (s *Responder) reply(ctx context.Context, r *kgo.Record) (*kgo.Record, error) {
	topic, ok1 := Header(r, HeaderReplyTopic)
	part, ok2 := Header(r, HeaderReplyPartition)
	id, ok3 := Header(r, HeaderCorrelationID)
	if !ok1 || !ok2 || !ok3 || len(part) != 4 || len(topic) == 0 {
		return nil, ErrBadRequest
	}
	value, err := s.handler(ctx, r)
	reply := &kgo.Record{Topic: string(topic), Partition: int32(binary.BigEndian.Uint32(part)), Value: value,
		Headers: []kgo.RecordHeader{{Key: HeaderCorrelationID, Value: id}}}
	if err != nil {
		reply.Value = nil
		reply.Headers = append(reply.Headers, kgo.RecordHeader{Key: HeaderReplyError, Value: []byte(err.Error())})
	}
	return reply, nil
}

// runTransactional answers each poll's requests in one transaction until
// ctx ends or n requests are answered and committed.
func (s *Responder) runTransactional(ctx context.Context, n int) error {
	answered := 0
	for ctx.Err() == nil && (n == 0 || answered < n) {
		recs := s.sess.PollRecords(ctx, pollLimit(n, answered)).Records()
		if len(recs) == 0 {
			continue
		}
		k, err := s.transact(ctx, recs)
		if err != nil {
			if ctx.Err() != nil {
				return nil // stopped mid-transaction: aborted, as Run says
			}
			return err
		}
		answered += k
	}
	return nil
}

// transact answers recs in one transaction with their offsets and
// returns how many were answered and committed: none when the session
// aborted (a rebalance, or a reply that failed), in which case it
// rewound to the committed offsets and the requests come again.
func (s *Responder) transact(ctx context.Context, recs []*kgo.Record) (int, error) {
	if err := s.sess.Begin(); err != nil {
		return 0, err
	}
	k, prodErr := s.produceReplies(ctx, recs)
	try := kgo.TryCommit
	if prodErr != nil {
		// franz-go would commit the replies that did succeed: abort,
		// so that the batch is answered again as a whole.
		try = kgo.TryAbort
	}
	// End runs even if ctx has ended: a stopping responder aborts
	// rather than leave its transaction open.
	ectx, cancel := context.WithTimeout(context.Background(), endTimeout)
	defer cancel()
	committed, err := s.sess.End(ectx, try)
	switch {
	case err != nil:
		return 0, fmt.Errorf("reqreply: end transaction: %w", err)
	case prodErr != nil:
		return 0, prodErr
	case !committed:
		return 0, nil
	}
	return k, nil
}

// produceReplies produces the replies to recs (in the open transaction,
// if any) and waits for them all; it returns how many requests it
// answered and the first produce error. Replies are produced together,
// not one ack at a time, so a batch of requests costs about one round
// trip to the broker.
func (s *Responder) produceReplies(ctx context.Context, recs []*kgo.Record) (int, error) {
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	k := 0
	for _, r := range recs {
		reply, err := s.reply(ctx, r)
		if errors.Is(err, ErrBadRequest) {
			continue // its offset is committed with the others: skipped
		}
		k++
		wg.Add(1)
		s.cl.Produce(ctx, reply, func(_ *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	return k, firstErr
}
