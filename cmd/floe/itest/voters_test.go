package itest

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestControllerVoters runs the commands of docs/operations.md ("Changing
// the controller's voters") on real processes: a fourth broker joins, is
// made a controller voter, an original voter is made a learner, and bad
// input is refused with a message and changes nothing.
func TestControllerVoters(t *testing.T) {
	bs := startCluster(t, 3)
	joiner := StartBroker(t, WithBinary(floeBin), WithNodeID(4), WithRaftAddr(FreeAddr(t)),
		WithFlags("--join", bs[0].RaftAddr))
	defer func() {
		if t.Failed() {
			for _, b := range append(bs, joiner) {
				t.Logf("broker log tail:\n%s", b.LogTail())
			}
		}
	}()
	at := bs[1].KafkaAddr
	ctl := func(args ...string) (string, error) {
		out, err := exec.Command(floeBin, append(append([]string{"controller"}, args...), "--brokers", at)...).CombinedOutput()
		return string(out), err
	}
	// A joined broker catches up as a learner first; until then the
	// promotion is refused as not caught up (retriable).
	waitFor(t, 60*time.Second, "broker 4 to become a controller voter", func() bool {
		out, err := ctl("add-voter", "4")
		if err != nil && !strings.Contains(out, "not caught up") && !strings.Contains(out, "not a learner") {
			t.Fatalf("add-voter 4: %v: %s", err, out)
		}
		return err == nil
	})
	refused := []struct{ args, want string }{
		{"add-voter 4", "already a voter"},
		{"remove-voter 9", "not a voter"},
		{"add-voter 9", "not registered"},
	}
	for _, r := range refused {
		out, err := ctl(strings.Fields(r.args)...)
		if err == nil || !strings.Contains(out, r.want) {
			t.Fatalf("floe controller %s: err %v, output %s (want %q)", r.args, err, out, r.want)
		}
	}
	waitFor(t, 30*time.Second, "broker 1 to become a learner", func() bool {
		out, err := ctl("remove-voter", "1")
		if err != nil && !strings.Contains(out, "in progress") {
			t.Fatalf("remove-voter 1: %v: %s", err, out)
		}
		return err == nil
	})
	var desc string
	waitFor(t, 30*time.Second, "describe to show voters 2, 3, 4 and learner 1", func() bool {
		out, err := ctl("describe")
		desc = out
		return err == nil && strings.Contains(out, "\n1   learner") && strings.Contains(out, "\n2   voter") &&
			strings.Contains(out, "\n3   voter") && strings.Contains(out, "\n4   voter")
	})
	t.Logf("floe controller describe:\n%s", desc)
}
