package itest

import (
	"errors"
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
