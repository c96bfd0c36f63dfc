package itest

// The messaging patterns of docs/patterns.md beyond queues, with real
// franz-go clients against a real broker: request/reply through package
// reqreply (Spring Kafka's headers), and pub/sub (two consumer groups each
// receive every record). Waits are bounded; nothing is timed.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/reqreply"
)

// TestRequestReply: two responders in one group answer 40 concurrent
// requests from two requesters, each on its own inbox partition; every
// reply matches its request; the request carries Spring's headers (a
// 4-byte big-endian reply partition); a handler error comes back as
// *reqreply.Error; with no responder for a topic a request ends at its
// deadline.
func TestRequestReply(t *testing.T) {
	b := start(t)
	makeTopic(t, b.KafkaAddr, "rpc", 3, nil)
	makeTopic(t, b.KafkaAddr, "inbox", 2, nil)
	makeTopic(t, b.KafkaAddr, "nobody", 1, nil)

	ctx, cancel := context.WithTimeout(context.Background(), bulkWaitMax)
	defer cancel()
	var mu sync.Mutex
	answered := map[int]int{}
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		resp, err := reqreply.NewResponder("rpc", "svc", func(_ context.Context, r *kgo.Record) ([]byte, error) {
			if p, _ := reqreply.Header(r, reqreply.HeaderReplyPartition); len(p) != 4 || binary.BigEndian.Uint32(p) > 1 {
				return nil, fmt.Errorf("reply partition header %x", p)
			}
			if string(r.Value) == "fail" {
				return nil, errors.New("cannot")
			}
			mu.Lock()
			answered[i]++
			mu.Unlock()
			return []byte("re:" + string(r.Value)), nil
		}, kgo.SeedBrokers(b.KafkaAddr))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); resp.Run(ctx) }()
	}
	var reqs []*reqreply.Requester
	for p := int32(0); p < 2; p++ {
		q, err := reqreply.NewRequester(ctxFor(t, opWaitMax), "inbox", p, kgo.SeedBrokers(b.KafkaAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		reqs = append(reqs, q)
	}
	var rwg sync.WaitGroup
	for i := 0; i < 40; i++ {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			v := fmt.Sprintf("q%d", i)
			r, err := reqs[i%2].Request(ctxFor(t, opWaitMax), "rpc", []byte(v), []byte(v))
			if err != nil {
				t.Errorf("request %s: %v", v, err)
				return
			}
			if string(r.Value) != "re:"+v || r.Partition != int32(i%2) {
				t.Errorf("request %s: reply %q on inbox partition %d", v, r.Value, r.Partition)
			}
		}()
	}
	rwg.Wait()
	_, err := reqs[0].Request(ctxFor(t, opWaitMax), "rpc", nil, []byte("fail"))
	var re *reqreply.Error
	if !errors.As(err, &re) || !strings.Contains(re.Message, "cannot") {
		t.Errorf("a failing handler: %v, want *reqreply.Error", err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancelShort()
	if _, err := reqs[1].Request(short, "nobody", nil, []byte("x")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request nobody answers: %v, want the deadline", err)
	}
	cancel()
	wg.Wait()
	t.Logf("answered per responder: %v", answered)
}

// TestPubSubEveryGroupGetsEveryRecord: two consumer groups on one topic
// each receive all 200 records (pub/sub), while two members of one group
// split them.
func TestPubSubEveryGroupGetsEveryRecord(t *testing.T) {
	b := start(t)
	const n = 200
	makeTopic(t, b.KafkaAddr, "news", 4, nil)
	produceValues(t, b.KafkaAddr, "news", n)
	ctx, cancel := context.WithTimeout(context.Background(), bulkWaitMax)
	defer cancel()
	var mu sync.Mutex
	got := map[string]map[string]bool{}
	var wg sync.WaitGroup
	for _, m := range []struct{ group, member string }{{"g1", "a"}, {"g2", "b"}, {"g2", "c"}} {
		cl := kgoClient(t, b.KafkaAddr, kgo.ConsumerGroup(m.group), kgo.ConsumeTopics("news"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
					mu.Lock()
					if got[m.group] == nil {
						got[m.group] = map[string]bool{}
					}
					got[m.group][string(r.Value)] = true
					mu.Unlock()
				})
			}
		}()
	}
	eventually(t, bulkWaitMax, "both groups read every record", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got["g1"]) == n && len(got["g2"]) == n
	})
	cancel()
	wg.Wait()
}

// TestRequestReplyCLI: floe reply (with --exec) answers what floe request
// sends, line by line, in order.
func TestRequestReplyCLI(t *testing.T) {
	b := start(t)
	makeTopic(t, b.KafkaAddr, "rpc2", 1, nil)
	makeTopic(t, b.KafkaAddr, "inbox2", 1, nil)
	cliRequestReply(t, b, "rpc2", "inbox2", nil, nil)
}

// cliRequestReply runs floe reply on topic (group upper, --exec "tr a-z
// A-Z", --count 3, and replyFlags) and floe request of three lines to it
// (replies to inbox, and requestFlags), and checks that the request prints
// the three replies, in order, and that the reply stops after three.
func cliRequestReply(t *testing.T, b *Broker, topic, inbox string, replyFlags, requestFlags []string) {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		args := append([]string{"reply", topic, "--group", "upper"}, replyFlags...)
		cmd := exec.Command(floeBin, append(args, "--exec", "tr a-z A-Z", "--count", "3", "--brokers", b.KafkaAddr)...)
		out, err := cmd.CombinedOutput()
		done <- fmt.Sprintf("%v %s", err, out)
	}()
	args := append([]string{"request", topic, "--reply-topic", inbox}, requestFlags...)
	cmd := exec.Command(floeBin, append(args, "--brokers", b.KafkaAddr, "--timeout", "20s")...)
	cmd.Stdin = strings.NewReader("abc\ndef\nghi\n")
	out, err := cmd.Output()
	if err != nil || string(out) != "ABC\nDEF\nGHI\n" {
		t.Fatalf("floe request: %v, output %q", err, out)
	}
	select {
	case res := <-done:
		if !strings.HasPrefix(res, "<nil>") {
			t.Fatalf("floe reply: %s", res)
		}
	case <-time.After(opWaitMax):
		t.Fatalf("floe reply did not stop after --count 3")
	}
}
