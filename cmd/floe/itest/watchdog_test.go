package itest

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWatchdogTurnsAHangIntoAFailure runs a test that hangs while driving
// a broker (TestWatchdogHelperHangs, in a child test binary with a 5 s
// bound) and checks the child fails by itself, with the evidence: its name,
// the broker's log tail, the goroutine that hung, and no broker left
// running.
func TestWatchdogTurnsAHangIntoAFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestWatchdogHelperHangs$", "-test.v")
	cmd.Env = append(os.Environ(), "FLOE_ITEST_WATCHDOG_HELPER=1", "FLOE_ITEST_BOUND=5s")
	// The child and its brokers form a process group: if the watchdog
	// fails, the context kills them all, leaving no broker behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the hanging child was not stopped by its watchdog within 3 minutes; output:\n%s", out.String())
	}
	if err == nil {
		t.Fatalf("the hanging child exited 0; output:\n%s", out.String())
	}
	for _, want := range []string{
		"--- FAIL: TestWatchdogHelperHangs: still running after 5s",
		"log tail:",
		"### floe serve",   // the head of the broker's log
		"watchdog_test.go", // the hung goroutine's stack
		"FAIL: TestWatchdogHelperHangs hung",
	} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("the child's output lacks %q:\n%s", want, out.String())
		}
	}
	m := regexp.MustCompile(`=== broker \d+ \(kafka (127\.0\.0\.1:\d+),`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("the child's output names no broker address:\n%s", out.String())
	}
	waitFor(t, 30*time.Second, "the hung test's broker to be gone", func() bool {
		c, err := net.DialTimeout("tcp", m[1], time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
}

// TestWatchdogHelperHangs is the child of the test above: it starts a
// broker, then blocks for ever.
func TestWatchdogHelperHangs(t *testing.T) {
	if os.Getenv("FLOE_ITEST_WATCHDOG_HELPER") != "1" {
		t.Skip("run by TestWatchdogTurnsAHangIntoAFailure")
	}
	start(t)
	select {} // the hang
}
