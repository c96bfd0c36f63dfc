package itest

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// rollingCheck runs floe cluster rolling-restart-check with args and
// returns its exit status and output.
func rollingCheck(t *testing.T, addr string, args ...string) (int, string) {
	t.Helper()
	args = append([]string{"cluster", "rolling-restart-check", "--brokers", addr, "--timeout", "5s"}, args...)
	out, err := exec.Command(floeBin, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("floe %s: %v", strings.Join(args, " "), err)
	return 0, ""
}

// floe cluster rolling-restart-check through a broker's kill and return
// under produce load: ready with every replica in sync; not ready, with
// the reasons, while a broker is down (for any next broker, and for one
// whose partitions would lose their in-sync majority); ready again once
// the returned broker has caught up; nothing acknowledged lost. Bad
// invocations exit 2.
func TestRollingRestartCheck(t *testing.T) {
	bs := startCluster(t, 3, WithFlags("--replica-lag-time-max=2s"))
	createReplicated(t, bs, "rr", 6, 3)
	log := newAckLog()
	w := startWriters(t, bs, "rr", log, "r")
	defer w.stop()
	addr := bs[0].KafkaAddr

	for _, bad := range [][]string{{"--broker", "0"}, {"--broker", "-5"}, {"extra"}} {
		if code, out := rollingCheck(t, addr, bad...); code != 2 {
			t.Fatalf("%q: exit %d, want 2 (usage)\n%s", bad, code, out)
		}
	}
	ready := func(args ...string) func() bool {
		return func() bool { code, _ := rollingCheck(t, addr, args...); return code == 0 }
	}
	waitFor(t, 60*time.Second, "every replica in sync", ready())
	if code, out := rollingCheck(t, addr, "--broker", "2"); code != 0 || !strings.Contains(out, "ok: broker 2 may be stopped") {
		t.Fatalf("--broker 2 with every replica in sync: exit %d\n%s", code, out)
	}

	bs[2].Kill()
	var out string
	waitFor(t, 60*time.Second, "the check to refuse with broker 3 down", func() bool {
		var code int
		code, out = rollingCheck(t, addr)
		return code == 1 && strings.Contains(out, "not yet: broker 3 does not answer")
	})
	t.Logf("broker 3 down:\n%s", out)
	waitFor(t, 60*time.Second, "the check to refuse broker 2 while broker 3 is down", func() bool {
		var code int
		code, out = rollingCheck(t, addr, "--broker", "2")
		return code == 1 && strings.Contains(out, "without broker 2, fewer than the majority 2")
	})
	t.Logf("--broker 2 with broker 3 down:\n%s", out)
	log.waitForMore(t, 30*time.Second, "writes while broker 3 is down", 50)

	bs[2].Restart()
	waitFor(t, 120*time.Second, "every replica in sync after broker 3's return", ready())
	w.stop()
	n := checkNoLoss(t, bs, "rr", log)
	t.Logf("%d writes acknowledged, none lost", n)
}

// The check asks the controller quorum, not only partitions' ISRs: three
// controller voters, of which only brokers 1 and 2 run (broker 3 never
// starts, so it is in no broker list and holds no partition; the
// controller runs on the majority 1 and 2). Every broker in the metadata
// answers and the one partition (on broker 1) is in sync, yet stopping
// broker 2 would leave the controller without a majority: the check must
// refuse it, naming voter 3. Once broker 3 runs and has caught up,
// broker 2 may go.
func TestRollingRestartCheckControllerQuorum(t *testing.T) {
	raft := []string{FreeAddr(t), FreeAddr(t), FreeAddr(t)}
	peers := fmt.Sprintf("1@%s,2@%s,3@%s", raft[0], raft[1], raft[2])
	start := func(id int) *Broker {
		return StartBroker(t, WithBinary(floeBin), WithNodeID(id), WithRaftAddr(raft[id-1]), WithPeers(peers), NoWait())
	}
	bs := []*Broker{start(1), start(2)}
	for _, b := range bs {
		b.WaitReady()
	}
	createAssigned(t, bs[0].KafkaAddr, "rq", [][]int32{{1}})
	addr := bs[0].KafkaAddr

	var out string
	waitFor(t, 60*time.Second, "the check to refuse broker 2 while voter 3 is down", func() bool {
		var code int
		code, out = rollingCheck(t, addr, "--broker", "2")
		return code == 1 && strings.Contains(out, "not yet: controller voter 3 has not caught up")
	})
	if strings.Contains(out, "rq-0") || strings.Contains(out, "does not answer") {
		t.Fatalf("--broker 2 refused for a partition or a broker, not only the quorum:\n%s", out)
	}
	t.Logf("--broker 2 with controller voter 3 down:\n%s", out)
	if code, out := rollingCheck(t, addr); code != 1 || !strings.Contains(out, "controller voter 3 has not caught up") {
		t.Fatalf("no --broker with controller voter 3 down: exit %d\n%s", code, out)
	}

	start(3).WaitReady()
	waitFor(t, 60*time.Second, "broker 2 may go once voter 3 caught up", func() bool {
		var code int
		code, out = rollingCheck(t, addr, "--broker", "2")
		return code == 0 && strings.Contains(out, "ok: broker 2 may be stopped")
	})
	t.Logf("--broker 2 with every voter up:\n%s", out)
}
