package main

import (
	"io"
	"testing"
	"time"

	"github.com/floe-broker/floe/jepsen/cluster"
	"github.com/floe-broker/floe/jepsen/workload"
)

func TestSmokeFitsInFiveMinutes(t *testing.T) {
	o, err := parseOptions(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	// The build and the container start come on top: leave them a minute.
	total := o.duration + o.setupTimeout + o.drainTimeout + o.finalTimeout + o.checkTimeout
	if total > 4*time.Minute {
		t.Fatalf("smoke phases may take %v, more than 4 of the 5 minutes", total)
	}
	full, _ := parseOptions(nil, false)
	if full.duration <= o.duration {
		t.Fatalf("full run (%v) no longer than smoke (%v)", full.duration, o.duration)
	}
}

func TestFlagsOverrideSmoke(t *testing.T) {
	o, err := parseOptions([]string{"--duration", "20s", "--nemeses", "kill,pause", "--stub"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if o.duration != 20*time.Second || len(o.kinds()) != 2 || o.nodes != 1 || o.replication != 1 {
		t.Fatalf("options %+v", o)
	}
	if o.partitionsWanted() {
		t.Fatal("kill,pause needs no iptables")
	}
	if o, _ := parseOptions([]string{"--nemeses", "none"}, false); len(o.kinds()) != 0 {
		t.Fatalf("none gave kinds %v", o.kinds())
	}
	if _, err := parseOptions([]string{"extra"}, false); err == nil {
		t.Fatal("stray argument accepted")
	}
}

// The coordinator target is a default only with transactional producers,
// and the nemesis takes it.
func TestCoordinatorTarget(t *testing.T) {
	if o, _ := parseOptions(nil, true); o.targets != "any,leader,controller,coordinator" {
		t.Errorf("default targets %q", o.targets)
	}
	if o, _ := parseOptions([]string{"--txn-producers", "0"}, true); o.targets != "any,leader,controller" {
		t.Errorf("default targets without transactions %q", o.targets)
	}
	o, err := parseOptions([]string{"--nemeses", "kill", "--targets", "coordinator,leader"}, false)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.New(cluster.Config{RunID: "x", Nodes: 5, Image: "i"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.New(workload.Config{Brokers: []string{"127.0.0.1:1"}, TxnProducers: o.txnProducers}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := newNemesis(o, c, w, nil, func() int64 { return 0 }, io.Discard); err != nil {
		t.Fatal(err)
	}
	o.txnProducers = 0
	if _, err := newNemesis(o, c, w, nil, func() int64 { return 0 }, io.Discard); err == nil {
		t.Fatal("coordinator target accepted without transactional producers")
	}
}
