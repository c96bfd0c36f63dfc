package itest

// Request/reply with a transactional responder (package reqreply,
// NewTransactionalResponder; floe reply --transactional-id): each batch of
// replies and its requests' offsets commit in one transaction, so a
// read_committed reader of the reply topic sees each reply exactly once,
// also when a responder stops or dies mid-batch. Waits are bounded.

import (
	"context"
	"encoding/binary"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/reqreply"
)

// TestRequestReplyTransactional: two transactional responders in one
// group answer 30 concurrent requests of a read_committed requester;
// every reply is in a transactional batch, the reply topic holds each
// reply exactly once read_committed, and the group's committed offsets
// cover every request (committed in the replies' transactions).
func TestRequestReplyTransactional(t *testing.T) {
	const n = 30
	b := start(t)
	makeTopic(t, b.KafkaAddr, "rpc-tx", 3, nil)
	makeTopic(t, b.KafkaAddr, "inbox-tx", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), bulkWaitMax)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		resp, err := reqreply.NewTransactionalResponder("rpc-tx", "svc-tx", fmt.Sprintf("rr-%d", i),
			func(_ context.Context, r *kgo.Record) ([]byte, error) { return []byte("re:" + string(r.Value)), nil },
			kgo.SeedBrokers(b.KafkaAddr), kgo.MetadataMinAge(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := resp.Run(ctx); err != nil {
				t.Errorf("responder %d: %v", i, err)
			}
		}()
	}
	q, err := reqreply.NewRequester(ctxFor(t, opWaitMax), "inbox-tx", 0, kgo.SeedBrokers(b.KafkaAddr),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var rwg sync.WaitGroup
	for i := 0; i < n; i++ {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			v := fmt.Sprintf("q%d", i)
			r, err := q.Request(ctxFor(t, opWaitMax), "rpc-tx", []byte(v), []byte(v))
			switch {
			case err != nil:
				t.Errorf("request %s: %v", v, err)
			case string(r.Value) != "re:"+v:
				t.Errorf("request %s: reply %q", v, r.Value)
			case !r.Attrs.IsTransactional():
				t.Errorf("request %s: the reply is not in a transaction", v)
			}
		}()
	}
	rwg.Wait()
	cancel()
	wg.Wait()
	if t.Failed() {
		return
	}
	replies := consumeAll(t, b.KafkaAddr, "inbox-tx", kgo.ReadCommitted(), n)
	checkRepliesOnce(t, replies, n)
	offs, err := kadm.NewClient(kgoClient(t, b.KafkaAddr)).FetchOffsets(ctxFor(t, opWaitMax), "svc-tx")
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != n {
		t.Errorf("group svc-tx committed offsets sum to %d, want %d (every request)", sum, n)
	}
}

// checkRepliesOnce checks that replies hold n replies, one per correlation
// id, each in a transactional batch.
func checkRepliesOnce(t *testing.T, replies []*kgo.Record, n int) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range replies {
		id, _ := reqreply.Header(r, reqreply.HeaderCorrelationID)
		seen[string(id)]++
		if seen[string(id)] > 1 {
			t.Errorf("reply %q (correlation id %s) visible read_committed twice", r.Value, id)
		}
		if !r.Attrs.IsTransactional() {
			t.Errorf("reply %q not in a transaction", r.Value)
		}
	}
	if len(seen) != n || len(replies) != n {
		t.Errorf("read_committed: %d replies for %d correlation ids, want %d each", len(replies), len(seen), n)
	}
}

// TestRequestReplyTransactionalCancelMidBatch: a transactional responder
// has replied to "a" and is in its handler for "slow" (the same batch, so
// the same transaction) when its context is cancelled: Run aborts, the
// reply to "a" never becomes visible read_committed, and a second
// responder answers both requests exactly once.
func TestRequestReplyTransactionalCancelMidBatch(t *testing.T) {
	b := start(t)
	makeTopic(t, b.KafkaAddr, "rpc-c", 1, nil)
	makeTopic(t, b.KafkaAddr, "inbox-c", 1, nil)
	sendRequests(t, b.KafkaAddr, "rpc-c", "inbox-c", "a", "slow")
	inSlow := make(chan struct{})
	first, err := reqreply.NewTransactionalResponder("rpc-c", "svc-c", "rr-c1",
		func(ctx context.Context, r *kgo.Record) ([]byte, error) {
			if string(r.Value) == "slow" {
				close(inSlow)
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return []byte("first:" + string(r.Value)), nil
		}, kgo.SeedBrokers(b.KafkaAddr), kgo.SessionTimeout(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- first.Run(ctx) }()
	select {
	case <-inSlow:
	case <-time.After(opWaitMax):
		t.Fatal("the responder never reached the slow request")
	}
	off := waitUncommittedReply(t, b.KafkaAddr, "inbox-c", "id-a")
	checkAboveStable(t, b.KafkaAddr, "inbox-c", off)
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("the cancelled responder: %v", err)
		}
	case <-time.After(opWaitMax):
		t.Fatal("the cancelled responder did not stop")
	}
	second, err := reqreply.NewTransactionalResponder("rpc-c", "svc-c", "rr-c2",
		func(_ context.Context, r *kgo.Record) ([]byte, error) {
			return []byte("second:" + string(r.Value)), nil
		},
		kgo.SeedBrokers(b.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	if err := second.RunN(ctxFor(t, bulkWaitMax), 2); err != nil {
		t.Fatalf("the second responder: %v", err)
	}
	checkSecondAnswers(t, b.KafkaAddr, "inbox-c")
}

// TestRequestReplyTransactionalKill: as above, but the first responder is
// `floe reply --transactional-id` killed with SIGKILL (with its --exec
// shell) while "slow" runs; the next `floe reply` with the same
// transactional id aborts the dead one's transaction and answers both
// requests exactly once, read_committed.
func TestRequestReplyTransactionalKill(t *testing.T) {
	b := start(t)
	makeTopic(t, b.KafkaAddr, "rpc-k", 1, nil)
	makeTopic(t, b.KafkaAddr, "inbox-k", 1, nil)
	sendRequests(t, b.KafkaAddr, "rpc-k", "inbox-k", "a", "slow")
	args := []string{"reply", "rpc-k", "--group", "svc-k", "--transactional-id", "rr-k",
		"--session-timeout", "6s", "--brokers", b.KafkaAddr}
	first := exec.Command(floeBin, append(args, "--exec",
		`v=$(cat); if [ "$v" = slow ]; then sleep 120; fi; echo "first:$v"`)...)
	first.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // kill its shell too
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-first.Process.Pid, syscall.SIGKILL); first.Wait() }()
	off := waitUncommittedReply(t, b.KafkaAddr, "inbox-k", "id-a")
	checkAboveStable(t, b.KafkaAddr, "inbox-k", off)
	if err := syscall.Kill(-first.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	second := exec.Command(floeBin, append(args, "--count", "2", "--exec", `v=$(cat); echo "second:$v"`)...)
	done := make(chan error, 1)
	go func() {
		out, err := second.CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, out)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the second floe reply: %v", err)
		}
	case <-time.After(bulkWaitMax):
		second.Process.Kill()
		t.Fatal("the second floe reply did not answer 2 requests")
	}
	checkSecondAnswers(t, b.KafkaAddr, "inbox-k")
}

// sendRequests writes one request per value to topic in one batch (so
// that a responder polls them together, in one transaction), each with
// correlation id "id-"+value and replies to partition 0 of inbox.
func sendRequests(t *testing.T, addr, topic, inbox string, values ...string) {
	t.Helper()
	cl := kgoClient(t, addr, kgo.ProducerLinger(100*time.Millisecond))
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v), Headers: []kgo.RecordHeader{
			{Key: reqreply.HeaderReplyTopic, Value: []byte(inbox)},
			{Key: reqreply.HeaderReplyPartition, Value: binary.BigEndian.AppendUint32(nil, 0)},
			{Key: reqreply.HeaderCorrelationID, Value: []byte("id-" + v)},
		}})
	}
	if err := cl.ProduceSync(ctxFor(t, opWaitMax), recs...).FirstErr(); err != nil {
		t.Fatalf("send requests: %v", err)
	}
}

// waitUncommittedReply waits until inbox (partition 0) holds a reply with
// correlation id, read read_uncommitted, and returns its offset.
func waitUncommittedReply(t *testing.T, addr, inbox, id string) int64 {
	t.Helper()
	cl := kgoClient(t, addr, kgo.ConsumeTopics(inbox), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxFor(t, opWaitMax)
	for ctx.Err() == nil {
		for _, r := range cl.PollFetches(ctx).Records() {
			if got, _ := reqreply.Header(r, reqreply.HeaderCorrelationID); string(got) == id {
				return r.Offset
			}
		}
	}
	t.Fatalf("no reply %s in %s, even read_uncommitted", id, inbox)
	return 0
}

// checkAboveStable checks that offset is at or above the last stable
// offset of inbox's partition 0: the reply there is in a transaction
// still open, invisible to read_committed readers.
func checkAboveStable(t *testing.T, addr, inbox string, offset int64) {
	t.Helper()
	adm := kadm.NewClient(kgoClient(t, addr))
	lso, err := adm.ListCommittedOffsets(ctxFor(t, opWaitMax), inbox)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := lso.Lookup(inbox, 0)
	if !ok || o.Err != nil {
		t.Fatalf("last stable offset of %s: %v", inbox, o.Err)
	}
	if o.Offset > offset {
		t.Fatalf("the reply at offset %d of %s is below the last stable offset %d: visible before its request's offset is committed", offset, inbox, o.Offset)
	}
}

// checkSecondAnswers checks that inbox holds, read_committed, exactly the
// second responder's replies to "a" and "slow", once each.
func checkSecondAnswers(t *testing.T, addr, inbox string) {
	t.Helper()
	replies := consumeAll(t, addr, inbox, kgo.ReadCommitted(), 2)
	checkRepliesOnce(t, replies, 2)
	var got []string
	for _, r := range replies {
		got = append(got, string(r.Value))
	}
	if strings.Join(got, ",") != "second:a,second:slow" {
		t.Errorf("read_committed replies %q, want second:a and second:slow only", got)
	}
	all := consumeAll(t, addr, inbox, kgo.ReadUncommitted(), 3)
	if len(all) != 3 || string(all[0].Value) != "first:a" {
		t.Errorf("read_uncommitted: %d replies (first %q), want the aborted first:a and the two committed", len(all), all[0].Value)
	}
}

// TestRequestReplyCLITransactional: floe reply --transactional-id answers
// what floe request --isolation-level read_committed sends, and every
// reply in the inbox is transactional.
func TestRequestReplyCLITransactional(t *testing.T) {
	b := start(t)
	makeTopic(t, b.KafkaAddr, "rpc3", 1, nil)
	makeTopic(t, b.KafkaAddr, "inbox3", 1, nil)
	cliRequestReply(t, b, "rpc3", "inbox3", []string{"--transactional-id", "upper-1"}, []string{"--isolation-level", "read_committed"})
	checkRepliesOnce(t, consumeAll(t, b.KafkaAddr, "inbox3", kgo.ReadCommitted(), 3), 3)
}
