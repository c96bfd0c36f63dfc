package reqreply

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The header names (Spring Kafka's KafkaHeaders), and Floe's error header.
const (
	HeaderReplyTopic     = "kafka_replyTopic"
	HeaderReplyPartition = "kafka_replyPartition"
	HeaderCorrelationID  = "kafka_correlationId"
	HeaderReplyError     = "floe_reply_error"
)

// Error is a responder's handler error, carried back in the reply.
type Error struct{ Message string }

func (e *Error) Error() string { return "reqreply: responder: " + e.Message }

// Header returns the value of the first header named key, and whether
// there is one.
func Header(r *kgo.Record, key string) ([]byte, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value, true
		}
	}
	return nil, false
}

// Requester sends requests and waits for their replies. Safe for
// concurrent use.
type Requester struct {
	cl        *kgo.Client
	topic     string
	partition int32
	cancel    context.CancelFunc
	done      chan struct{}

	mu      sync.Mutex
	pending map[string]chan *kgo.Record
}

// NewRequester starts a requester whose replies come to partition of
// replyTopic (which must exist). opts configure its client (seed brokers
// at least); it consumes only its inbox partition, from the end offset the
// partition has now, so no reply to one of its requests is missed.
func NewRequester(ctx context.Context, replyTopic string, partition int32, opts ...kgo.Opt) (*Requester, error) {
	admin, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	ends, err := kadm.NewClient(admin).ListEndOffsets(ctx, replyTopic)
	admin.Close()
	if err != nil {
		return nil, err
	}
	end, ok := ends.Lookup(replyTopic, partition)
	if !ok || end.Err != nil {
		return nil, fmt.Errorf("reqreply: reply topic %s partition %d: %v", replyTopic, partition, end.Err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		replyTopic: {partition: kgo.NewOffset().At(end.Offset)}}))...)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	q := &Requester{cl: cl, topic: replyTopic, partition: partition, cancel: cancel, done: make(chan struct{}),
		pending: map[string]chan *kgo.Record{}}
	go q.read(rctx)
	return q, nil
}

// read hands each reply to the request waiting for its correlation id.
func (q *Requester) read(ctx context.Context) {
	defer close(q.done)
	for ctx.Err() == nil {
		fs := q.cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			id, ok := Header(r, HeaderCorrelationID)
			if !ok {
				return
			}
			q.mu.Lock()
			ch := q.pending[string(id)]
			delete(q.pending, string(id))
			q.mu.Unlock()
			if ch != nil {
				ch <- r // buffered: never blocks
			}
		})
	}
}

// Request writes a record with value and key to topic, with the reply
// headers, and returns the reply's record, or ctx's error (a deadline or
// a cancellation; a late reply is dropped), or an *Error when the
// responder's handler failed.
func (q *Requester) Request(ctx context.Context, topic string, key, value []byte) (*kgo.Record, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	id := hex.EncodeToString(raw[:])
	ch := make(chan *kgo.Record, 1)
	q.mu.Lock()
	q.pending[id] = ch
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		delete(q.pending, id)
		q.mu.Unlock()
	}()
	rec := &kgo.Record{Topic: topic, Key: key, Value: value, Headers: []kgo.RecordHeader{
		{Key: HeaderReplyTopic, Value: []byte(q.topic)},
		{Key: HeaderReplyPartition, Value: binary.BigEndian.AppendUint32(nil, uint32(q.partition))},
		{Key: HeaderCorrelationID, Value: []byte(id)},
	}}
	if err := q.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if msg, ok := Header(r, HeaderReplyError); ok {
			return r, &Error{Message: string(msg)}
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops the requester; requests in flight end with their contexts.
func (q *Requester) Close() {
	q.cancel()
	<-q.done
	q.cl.Close()
}

// Handler answers one request: the reply's value, or an error sent back
// to the requester.
type Handler func(ctx context.Context, req *kgo.Record) ([]byte, error)

// Responder answers the requests of a topic as a member of a consumer
// group.
type Responder struct {
	cl      *kgo.Client
	handler Handler
}

// NewResponder joins group on topic. opts configure its client (seed
// brokers at least; not ConsumerGroup, ConsumeTopics or commit options,
// which it sets).
func NewResponder(topic, group string, handler Handler, opts ...kgo.Opt) (*Responder, error) {
	cl, err := kgo.NewClient(append(opts, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.AutoCommitMarks(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))...) // replies go to the partition the request names
	if err != nil {
		return nil, err
	}
	return &Responder{cl: cl, handler: handler}, nil
}

// ErrBadRequest is why a request without the reply headers is skipped.
var ErrBadRequest = errors.New("reqreply: request without reply topic, partition or correlation id")

// Run answers requests until ctx ends, then commits what it answered and
// leaves the group. Requests without reply headers are skipped (marked
// done, no reply).
func (s *Responder) Run(ctx context.Context) error { return s.RunN(ctx, 0) }

// RunN is Run that also stops after answering n requests (0: no limit).
func (s *Responder) RunN(ctx context.Context, n int) error {
	defer s.cl.Close()
	answered := 0
	for ctx.Err() == nil && (n == 0 || answered < n) {
		fs := s.cl.PollFetches(ctx)
		var firstErr error
		fs.EachRecord(func(r *kgo.Record) {
			if firstErr != nil || (n > 0 && answered >= n) {
				return // left unmarked: the group's next member answers it
			}
			err := s.answer(ctx, r)
			if err != nil && !errors.Is(err, ErrBadRequest) {
				firstErr = err
				return
			}
			if err == nil {
				answered++
			}
			s.cl.MarkCommitRecords(r)
		})
		if firstErr != nil && ctx.Err() == nil {
			return firstErr
		}
	}
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.cl.CommitMarkedOffsets(cctx)
}

// answer sends the reply to one request.
func (s *Responder) answer(ctx context.Context, r *kgo.Record) error {
	topic, ok1 := Header(r, HeaderReplyTopic)
	part, ok2 := Header(r, HeaderReplyPartition)
	id, ok3 := Header(r, HeaderCorrelationID)
	if !ok1 || !ok2 || !ok3 || len(part) != 4 || len(topic) == 0 {
		return ErrBadRequest
	}
	value, err := s.handler(ctx, r)
	reply := &kgo.Record{Topic: string(topic), Partition: int32(binary.BigEndian.Uint32(part)), Value: value,
		Headers: []kgo.RecordHeader{{Key: HeaderCorrelationID, Value: id}}}
	if err != nil {
		reply.Value = nil
		reply.Headers = append(reply.Headers, kgo.RecordHeader{Key: HeaderReplyError, Value: []byte(err.Error())})
	}
	return s.cl.ProduceSync(ctx, reply).FirstErr()
}
