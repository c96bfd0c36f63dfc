package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// These tests drive real containers. They run only with FLOE_JEPSEN_DOCKER=1
// (make jepsen-plumbing sets it) and need a Docker daemon and, for the
// partition test, iptables and nsenter on the host. The nodes run the stub
// broker (jepsen/internal/stubbroker), which also answers `probe host:port`.

func dockerCluster(t *testing.T, nodes int) *Cluster {
	t.Helper()
	if os.Getenv("FLOE_JEPSEN_DOCKER") != "1" {
		t.Skip("set FLOE_JEPSEN_DOCKER=1 to run the Docker tests")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if !Available(ctx) {
		t.Fatal("FLOE_JEPSEN_DOCKER=1 but no Docker daemon answers")
	}
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "floe")
	log := &testLog{t}
	b := Build{ModuleDir: filepath.Dir(strings.TrimSpace(string(mod))), Pkg: "./jepsen/internal/stubbroker", Out: bin}
	if err := BuildBinary(ctx, log, b); err != nil {
		t.Fatal(err)
	}
	if err := BuildImage(ctx, log, bin, "floe-jepsen-test:stub"); err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{RunID: fmt.Sprintf("test-%d", os.Getpid()), Nodes: nodes, Image: "floe-jepsen-test:stub",
		KafkaPortBase: FreePortBase(29092, nodes), DataRoot: t.TempDir(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label="+LabelKey+"="+c.cfg.RunID).Output()
		if len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("containers left after Close: %s", out)
		}
	})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes() {
		waitFor(t, fmt.Sprintf("node %d's published port", n.ID), func() bool { return dialable(n.KafkaAddr) })
	}
	return c
}

type testLog struct{ t *testing.T }

func (l *testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 60; i++ {
		if cond() {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("gave up waiting for %s", what)
}

// reaches reports whether node from can open a connection to node to's
// Kafka port over the private network.
func reaches(c *Cluster, from, to int) bool {
	_, err := c.Exec(context.Background(), from, "/broker", "probe", c.Node(to).Host+":9092")
	return err == nil
}

func TestDockerPartitionHealAndRestart(t *testing.T) {
	if err := IptablesAvailable(); err != nil && os.Getenv("FLOE_JEPSEN_DOCKER") == "1" {
		t.Fatal(err)
	}
	c := dockerCluster(t, 3)
	ctx := context.Background()
	waitFor(t, "node 1 to reach node 2", func() bool { return reaches(c, 1, 2) })

	if err := c.Partition(ctx, Components([]int{1, 2, 3}, []int{1}, []int{2, 3})); err != nil {
		t.Fatal(err)
	}
	if reaches(c, 1, 2) || reaches(c, 2, 1) || reaches(c, 3, 1) {
		t.Fatal("node 1 still talks to the majority after isolation")
	}
	if !reaches(c, 2, 3) {
		t.Fatal("the majority cannot talk among itself")
	}
	if !dialable(c.Node(1).KafkaAddr) {
		t.Fatal("the host lost the isolated node's published port")
	}

	// A restarted node gets a new network namespace (and maybe address):
	// the partition in force must hold for it again.
	if err := c.Kill(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if st, _ := c.State(ctx, 1); st != "exited" {
		t.Fatalf("killed node is %q", st)
	}
	if err := c.Restart(ctx, 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "restarted node's port", func() bool { return dialable(c.Node(1).KafkaAddr) })
	if reaches(c, 1, 2) || reaches(c, 2, 1) {
		t.Fatal("partition lost across a restart")
	}

	if err := c.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "healed node 1 to reach node 2", func() bool { return reaches(c, 1, 2) && reaches(c, 2, 1) })
}

func TestDockerPauseResume(t *testing.T) {
	c := dockerCluster(t, 1)
	ctx := context.Background()
	if err := c.Pause(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if st, _ := c.State(ctx, 1); st != "paused" {
		t.Fatalf("paused node is %q", st)
	}
	if err := c.Resume(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if st, _ := c.State(ctx, 1); st != "running" {
		t.Fatalf("resumed node is %q", st)
	}
	if !dialable(c.Node(1).KafkaAddr) {
		t.Fatal("resumed node does not answer")
	}
}
