package node

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// moveCatchUp writes records of valueBytes to a partition on brokers 1-3
// of a 4-broker cluster with the given move rate, moves it to 2, 3, 4 and
// returns, per 100 ms of simulated time from the move, how many records
// broker 4's replica holds, until it holds them all.
func moveCatchUp(t *testing.T, rate int64, records, valueBytes int) []int64 {
	c := newClusterWith(t, 4, 23, func(cfg *Config) { cfg.MoveRateBytes = rate })
	c.waitReady()
	createOnReplicas(t, c, 1, "mv", []int32{1, 2, 3})
	value := strings.Repeat("x", valueBytes)
	for i := 0; i < records; i++ {
		for attempt := 0; ; attempt++ {
			if attempt == 50 {
				t.Fatalf("record %d not written", i)
			}
			if lead := leaderOf(c, "mv", 0); lead != 0 && produce(c, lead, "mv", 0, -1, batchOf(fmt.Sprint(i, value))).ErrorCode == 0 {
				break
			}
			c.runFor(20 * time.Millisecond)
		}
	}
	reassign(t, c, 1, "mv", 0, []int32{2, 3, 4})
	var held []int64
	for step := 0; step < 600; step++ {
		c.runFor(100 * time.Millisecond)
		n := int64(0)
		if p := c.nodes[4].r.byName[topicPartition{"mv", 0}]; p != nil {
			n = p.Replica().NextOffset()
		}
		held = append(held, n)
		if n >= int64(records) {
			return held
		}
	}
	t.Fatalf("broker 4 holds %d of %d records after 60 s simulated", held[len(held)-1], records)
	return nil
}

// TestMoveRateLimit: with --balancer-move-rate-bytes 100 KB/s, the replica
// a move adds receives at most the rate times the time since the move,
// plus one second's burst and one entry: checked every 100 ms of
// simulated time, counting each record as its value's bytes (its entry
// carries more: batchOf writes the value as the key too, so the limit
// shows as about half the rate in records). Unthrottled, the same data crosses faster than the bound
// allows, so the bound is one that can fail.
func TestMoveRateLimit(t *testing.T) {
	const rate, records, value = 100_000, 200, 2_000
	bound := func(step int) int64 { // bytes by the end of step (0-based)
		return rate*int64(step+1)/10 + rate + value + 1000
	}
	check := func(held []int64) (int, bool) {
		for i, n := range held {
			if n*value > bound(i) {
				return i, false
			}
		}
		return 0, true
	}
	limited := moveCatchUp(t, rate, records, value)
	if i, ok := check(limited); !ok {
		t.Fatalf("with a limit of %d B/s, broker 4 held %d records (%d bytes of values) %v after the move, over the bound %d", rate, limited[i], limited[i]*value, time.Duration(i+1)*100*time.Millisecond, bound(i))
	}
	free := moveCatchUp(t, 0, records, value)
	if _, ok := check(free); ok {
		t.Fatalf("unthrottled, broker 4 stayed within the bound (%v): the test cannot fail", free)
	}
	t.Logf("caught up in %v limited, %v unthrottled (simulated, %d KB)", time.Duration(len(limited))*100*time.Millisecond, time.Duration(len(free))*100*time.Millisecond, records*value/1000)
}
