package group

import (
	"math/rand"
	"testing"
)

// TestForkOfTransactionalReplay: transactional offsets pending at a fork
// (and the groups' counts of them) are the fork's own; a fork of a
// replay-only coordinator that replayed a random mix of plain and
// transactional offset records, markers and tombstones, in steps, holds
// what a full replay does at every step (checkFork). The harness's
// failover checks the rest of the state the same way.
func TestForkOfTransactionalReplay(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	type rec struct {
		pid        int64 // -1: a plain record
		marker     bool
		commit     bool
		key, value []byte
	}
	groups := []string{"a", "b", "c"}
	tps := []topicPartition{{"t", 0}, {"t", 1}, {"u", 0}}
	random := func() rec {
		g, tp := groups[rng.Intn(len(groups))], tps[rng.Intn(len(tps))]
		v := committed{offset: int64(rng.Intn(1000)), leaderEpoch: int32(rng.Intn(3)), metadata: "m", timestamp: 1}
		switch rng.Intn(6) {
		case 0:
			return rec{pid: -1, key: offsetKey(g, tp)} // tombstone
		case 1, 2:
			return rec{pid: -1, key: offsetKey(g, tp), value: offsetValue(v)}
		case 3:
			return rec{pid: int64(rng.Intn(3)), marker: true, commit: rng.Intn(2) == 0}
		default:
			return rec{pid: int64(rng.Intn(3)), key: offsetKey(g, tp), value: offsetValue(v)}
		}
	}
	replay := func(c *Coordinator, recs []rec) {
		for _, r := range recs {
			var err error
			switch {
			case r.marker:
				c.ReplayMarker(r.pid, r.commit)
			case r.pid >= 0:
				err = c.ReplayTxn(r.pid, r.key, r.value)
			default:
				err = c.Replay(r.key, r.value)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	pendingSeen := false
	for trial := 0; trial < 200; trial++ {
		var all []rec
		shadow := New(Config{}, Env{})
		for step := 0; step < 5; step++ {
			var more []rec
			for i := rng.Intn(10); i > 0; i-- {
				more = append(more, random())
			}
			all = append(all, more...)
			replay(shadow, more)
			full := New(Config{}, Env{})
			replay(full, all)
			pendingSeen = pendingSeen || full.PendingTxnOffsets() > 0
			checkFork(t, shadow, full, Config{}, Env{})
		}
	}
	if !pendingSeen {
		t.Fatal("no fork had transactional offsets pending")
	}
}
