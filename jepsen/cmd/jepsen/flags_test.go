package main

import (
	"testing"
	"time"
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
