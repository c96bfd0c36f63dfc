package reqreply

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sync"

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
// partition has now, so no reply to one of its requests is missed. With
// a transactional responder, pass kgo.FetchIsolationLevel(kgo.ReadCommitted())
// in opts: the requester then sees only committed replies, each once
// (read_uncommitted, it may also see a reply whose transaction is later
// aborted, and take it).
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
