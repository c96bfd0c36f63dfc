package sim

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/kafka"
)

// pipeConnRun is a run with only what a pipeConn needs: a world with no
// nodes (its clock) and a kafkaNet for latencies.
func pipeConnRun() (*run, *pipeConn) {
	r := &run{w: NewWorld(Config{Seed: 1, TraceKeep: 50}, func(Env) Instance { return nil })}
	r.kn = &kafkaNet{w: r.w, rng: rand.New(rand.NewSource(1)), latMin: 100 * time.Microsecond, latMax: time.Millisecond, calls: map[int16]int{}}
	c := &pipeConn{r: r, id: 1, conn: 1, order: kafka.NewInOrder[*pipeReq](pipeMaxInFlight)}
	return r, c
}

// pending queues n produce requests on c as sent and arrived, each
// recording its index in got when answered.
func pipeRequests(c *pipeConn, n int, got *[]int) []*pipeReq {
	var prs []*pipeReq
	for i := range n {
		req := kmsg.NewPtrProduceRequest()
		req.Version = 9
		c.corrNext++
		pr := &pipeReq{corr: c.corrNext, wire: req, done: func(_ kmsg.Response, err error) {
			if err == nil {
				*got = append(*got, i)
			}
		}}
		c.pending = append(c.pending, pr)
		pr.ticket, _ = c.order.Reserve(pr)
		prs = append(prs, pr)
	}
	return prs
}

// TestPipeConnAnswersInRequestOrder: answers made in any order reach the
// client in request order, and the held-back answer is counted.
func TestPipeConnAnswersInRequestOrder(t *testing.T) {
	r, c := pipeConnRun()
	var got []int
	prs := pipeRequests(c, 4, &got)
	for _, i := range []int{2, 0, 3, 1} {
		resp := kmsg.NewPtrProduceResponse()
		c.respond(prs[i], resp)
	}
	r.w.RunFor(time.Second)
	if !slices.Equal(got, []int{0, 1, 2, 3}) || len(r.violations) > 0 {
		t.Fatalf("answered %v, violations %v; want [0 1 2 3] and none", got, r.violations)
	}
	if r.coverage[covPipeHeldBack] != 2 {
		t.Fatalf("held back %d times, want 2 (answers 2 and 3 came before an earlier one)", r.coverage[covPipeHeldBack])
	}
}

// TestPipeConnOutOfOrderAnswerIsAViolation: an answer that is not for the
// oldest request awaited (what a connection releasing answers out of
// order would send) fails the run and kills the connection.
func TestPipeConnOutOfOrderAnswerIsAViolation(t *testing.T) {
	r, c := pipeConnRun()
	var got []int
	prs := pipeRequests(c, 2, &got)
	prs[1].resp = kmsg.NewPtrProduceResponse()
	c.deliver(prs[1])
	if len(r.violations) != 1 || !strings.Contains(r.violations[0], "responses out of request order") {
		t.Fatalf("violations %v, want one for the order", r.violations)
	}
	if !c.dead || len(got) != 0 {
		t.Fatalf("connection dead %v, answered %v: want dead, none answered", c.dead, got)
	}
}
