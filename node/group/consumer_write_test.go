package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// lastConsumerImage is the value of the last committed record of a
// consumer group: what a new coordinator would load.
func (h *harness) lastConsumerImage(group string) string {
	key := string(consumerKey(group))
	img := ""
	for _, r := range h.log.Committed {
		if string(r.Key) == key {
			img = string(r.Value)
		}
	}
	return img
}

// A failed write of a consumer group must not leave the group's memory
// behind its log: a write of the same group still in flight holds the
// failed change in its image (each write is the group's whole image) and
// may commit. Two orders: a later write refused at once while an earlier
// one is in flight (the offsets-write-fails BUGGIFY site), and the
// earlier one refused while a later one commits. Once every write has
// come back, the group in memory is the last committed image, a
// coordinator rebuilt from the log agrees, and the members settle without
// owning a partition twice.
func TestConsumerGroupFailedWriteKeepsMemoryWithLog(t *testing.T) {
	refused := kerr.NotLeaderForPartition
	cases := []struct {
		name   string
		script func(h *harness, a, b *cclient)
	}{
		{"later write refused, earlier commits", func(h *harness, a, b *cclient) {
			rb := h.cgSend("g", b, nil) // b joins: write 1, held
			h.log.FailWith = refused
			ra := h.cgSend("g", a, nil) // a starts revoking: write 2, refused at once
			h.log.FailWith = nil
			wantCode(t, "a's refused heartbeat", h.cgApply(a, ra.must()).ErrorCode, kerr.NotCoordinator)
			h.log.CommitAll()
			wantCode(t, "b's join", h.cgApply(b, rb.must()).ErrorCode, nil)
		}},
		{"earlier write refused, later commits", func(h *harness, a, b *cclient) {
			rb := h.cgSend("g", b, nil) // write 1, held
			ra := h.cgSend("g", a, nil) // write 2, held, with b in its image
			h.log.FailNext(refused)
			wantCode(t, "b's refused join", h.cgApply(b, rb.must()).ErrorCode, kerr.NotCoordinator)
			h.log.CommitNext()
			wantCode(t, "a's heartbeat", h.cgApply(a, ra.must()).ErrorCode, nil)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			h.setTopic("t", 2)
			a, b := newClient("a", "t"), newClient("b", "t")
			h.settle("g", []*cclient{a})
			h.log.Hold = true
			tc.script(h, a, b)
			h.log.Hold = false
			if len(h.log.Queued) != 0 {
				t.Fatalf("%d writes still held", len(h.log.Queued))
			}
			mem, logged := string(encodeConsumerGroup(h.consumerGroup("g"))), h.lastConsumerImage("g")
			if mem != logged {
				t.Fatalf("the group's memory is not its log:\nmemory %s\nlog    %s", mem, logged)
			}
			h.settle("g", []*cclient{a, b})
			settled := string(encodeConsumerGroup(h.consumerGroup("g")))
			h.failover()
			if got := string(encodeConsumerGroup(h.consumerGroup("g"))); got != settled {
				t.Fatalf("a new coordinator loaded another group:\nbefore %s\nafter  %s", settled, got)
			}
			if a.owned.count()+b.owned.count() != 2 || a.owned.count() == 0 || b.owned.count() == 0 {
				t.Fatalf("settled with a %v and b %v, want one partition each", a.owned, b.owned)
			}
		})
	}
}

// TestConsumerImagePrincipal: a member's principal is part of the durable
// image, and an image written before it was (no "principal") still
// decodes, its regex member filtered by nothing until its next heartbeat
// records one.
func TestConsumerImagePrincipal(t *testing.T) {
	old := `{"format":1,"epoch":3,"assignment_epoch":3,"members":{"m":{"id":"m","epoch":3,"prev_epoch":2,"state":0,"regex":"t.*","rebalance_ms":30000}}}`
	cg, err := decodeConsumerGroup([]byte(old))
	if err != nil {
		t.Fatalf("an image without principals does not decode: %v", err)
	}
	m := cg.Members["m"]
	c := &Coordinator{env: Env{MayDescribe: func(principal, host, topic string) bool { return principal == "User:alice" && topic == "t1" }}}
	if m.Principal != "" || !c.mayDescribe(m, "t2") {
		t.Fatalf("old member: principal %q, may describe t2 %v; want none and true", m.Principal, c.mayDescribe(m, "t2"))
	}
	m.Principal, m.ClientHost = "User:alice", "/10.0.0.2"
	back, err := decodeConsumerGroup(encodeConsumerGroup(cg))
	if err != nil {
		t.Fatal(err)
	}
	bm := back.Members["m"]
	if bm.Principal != "User:alice" || !c.mayDescribe(bm, "t1") || c.mayDescribe(bm, "t2") {
		t.Fatalf("round trip: principal %q, t1 %v, t2 %v", bm.Principal, c.mayDescribe(bm, "t1"), c.mayDescribe(bm, "t2"))
	}
}
