package node

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/partition"
	"github.com/floe-broker/floe/node/records"
)

// idemBatch is one record from producer pid (epoch 0) at sequence seq,
// stamped tsMs.
func idemBatch(pid int64, seq int32, tsMs int64) []byte {
	return records.Build(records.BuildOptions{BaseTimestamp: tsMs, Producer: &records.Producer{ID: pid, BaseSequence: seq}},
		[]records.Record{{Value: []byte(fmt.Sprintf("p%d-%d", pid, seq))}})
}

// replicasAgree runs until every running replica of topic-partition has
// applied the same index and returns their common producer table; it fails
// the test if their tables differ there.
func replicasAgree(t *testing.T, c *cluster, topic string, part int32, replicas int) *partition.Producers {
	t.Helper()
	var cps [][]byte
	ok := c.runUntil(20*time.Second, func() bool {
		cps = cps[:0]
		var applied uint64
		for _, id := range sortedKeys(c.nodes) {
			n := c.nodes[id]
			if n.r == nil {
				continue
			}
			p := n.r.byName[topicPartition{topic, part}]
			if p == nil {
				return false
			}
			rep := p.Replica()
			if a := rep.Applied(); len(cps) > 0 && a != applied || rep.Applied() < rep.BasicStatus().Commit {
				return false
			} else {
				applied = a
			}
			cps = append(cps, p.Checkpoint())
		}
		return len(cps) == replicas
	})
	if !ok {
		t.Fatalf("%s-%d: %d replicas never reached the same applied index", topic, part, replicas)
	}
	for i := 1; i < len(cps); i++ {
		if !bytes.Equal(cps[i], cps[0]) {
			a, _ := partition.DecodeCheckpoint(cps[0])
			b, _ := partition.DecodeCheckpoint(cps[i])
			t.Fatalf("replicas disagree at the same index: %v (time %d) vs %v (time %d)",
				a.Producers.IDs(), a.Producers.NowMs(), b.Producers.IDs(), b.Producers.NowMs())
		}
	}
	cp, err := partition.DecodeCheckpoint(cps[0])
	if err != nil {
		t.Fatal(err)
	}
	return cp.Producers
}

// Issue 13, bug 7: every replica expires the same producers at the same
// entry, across a leader change and a restart, and a changed
// producer.id.expiration.ms reaches every replica through the log.
func TestReplicasAgreeOnProducerExpiry(t *testing.T) {
	c := newCluster(t, 3, 21)
	c.waitReady()
	createTopic(t, c, 1, "px", 1, 3, nil)
	waitLeaders(t, c, "px", 1)
	const day = int64(24 * 3600 * 1000)
	t0 := int64(1_700_000_000_000)
	send := func(to int32, pid int64, seq int32, ts int64) {
		t.Helper()
		if sp := produce(c, to, "px", 0, -1, idemBatch(pid, seq, ts)); sp.ErrorCode != 0 {
			t.Fatalf("produce pid %d seq %d to %d: %v", pid, seq, to, kerr.ErrorForCode(sp.ErrorCode))
		}
	}
	lead := leaderOf(c, "px", 0)
	for pid := int64(1); pid <= 20; pid++ {
		send(lead, pid, 0, t0)
	}
	if ps := replicasAgree(t, c, "px", 0, 3); ps.Len() != 20 {
		t.Fatalf("%d producers, want 20", ps.Len())
	}

	// The leader crashes; its successor's producer table (rebuilt from its
	// log) expires everyone but producer 5, which wrote within the day.
	c.nodes[lead].crash()
	var next int32
	if !c.runUntil(10*time.Second, func() bool { next = leaderOf(c, "px", 0); return next != 0 && next != lead }) {
		t.Fatalf("no new leader after crashing %d", lead)
	}
	send(next, 5, 1, t0+day-1)
	send(next, 21, 0, t0+day)
	c.nodes[lead].boot()
	ps := replicasAgree(t, c, "px", 0, 3)
	if fmt.Sprint(ps.IDs()) != "[5 21]" {
		t.Fatalf("producers %v a day on, want [5 21]", ps.IDs())

	}

	// A shorter producer.id.expiration.ms on the topic: the leader puts it
	// in the log (within a maintenance pass), and every replica applies it.
	incremental(t, c, next, kmsg.ConfigResourceTypeTopic, "px", setOp("producer.id.expiration.ms", "1000"))
	if !c.runUntil(10*time.Second, func() bool {
		for _, n := range c.nodes {
			cp, err := partition.DecodeCheckpoint(n.r.byName[topicPartition{"px", 0}].Checkpoint())
			if err != nil || cp.Producers.Expiration() != 1000 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("producer.id.expiration.ms=1000 did not reach every replica's table")
	}
	send(leaderOf(c, "px", 0), 22, 0, t0+day+999)
	if ps := replicasAgree(t, c, "px", 0, 3); fmt.Sprint(ps.IDs()) != "[21 22]" {
		t.Fatalf("producers %v with a 1 s expiry at %d ms on, want [21 22]", ps.IDs(), day+999)
	}
	send(leaderOf(c, "px", 0), 22, 1, t0+day+1000)
	if ps := replicasAgree(t, c, "px", 0, 3); fmt.Sprint(ps.IDs()) != "[22]" {
		t.Fatalf("producers %v with a 1 s expiry at %d ms on, want [22]", ps.IDs(), day+1000)
	}
}
