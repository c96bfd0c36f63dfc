//go:build floe_bugs

package itest

// The crash test's self-test (make planted): with the planted bug
// ack-before-quorum, the broker answers acks=all as soon as the leader has
// appended in memory, before the batch is written; a kill -9 then loses
// batches that were acknowledged, and the crash test's lost-write check
// must say so. Idempotence is off here: the lost sequences would stall an
// idempotent producer, and this test is about the checker, not liveness.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/floe-broker/floe/internal/plant"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestPlantedBugAckBeforeQuorumCaughtByKill9(t *testing.T) {
	// A kill -9 loses only what the broker had not yet handed to the
	// kernel, so catching the planted bug takes a lucky kill and can need
	// many rounds on a loaded machine; the deterministic planted-bug tests
	// of consensus and sim (and the Docker suite's) are make test's proof
	// that the checkers fail. This one runs with FLOE_ITEST_LONG=1.
	if !longRun() {
		t.Skip("kill -9 against a planted build: set FLOE_ITEST_LONG=1")
	}
	bin, err := BuildPlanted(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := StartBroker(t, WithBinary(bin), WithEnv("FLOE_PLANT="+plant.AckBeforeQuorum))
	const topic = "planted"
	makeTopic(t, b.KafkaAddr, topic, crashPartitions, nil)
	// 16 KiB values: larger writes keep acknowledged-but-unwritten
	// batches around longer, so a kill finds some sooner.
	w := startCrashWorkload(t, b.KafkaAddr, topic, 16<<10, kgo.DisableIdempotentWrite())
	const roundsMax = 10
	for round := range roundsMax {
		w.waitAcks(t, w.snapshot(), 100, fmt.Sprintf("round %d, before the crash", round))
		b.Kill()
		b.Restart()
		w.waitAcks(t, w.snapshot(), 20, fmt.Sprintf("round %d, after the restart", round))
		w.mu.Lock()
		acked := make(map[string]ackedRecord, len(w.acked))
		for v, a := range w.acked {
			acked[v] = a
		}
		w.mu.Unlock()
		for _, p := range crashProblems(topic, acked, readAll(t, b.KafkaAddr, topic)) {
			if strings.HasPrefix(p, "lost-write") {
				t.Logf("caught after %d kill(s): %s", round+1, p)
				w.finish(t)
				return
			}
		}
	}
	w.finish(t)
	t.Fatalf("%d kills with %s planted, and the crash checks found no lost acknowledged write", roundsMax, plant.AckBeforeQuorum)
}
