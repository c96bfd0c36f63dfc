package node

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/floe-broker/floe/node/group"
	"github.com/floe-broker/floe/node/share"
)

// TestShareReplayAcrossTermsMatchesFullReplay: the share state a broker
// loads from what its last load read plus the records committed since
// (shareReplay) equals a full replay of the offsets partition, across
// leader changes (each broker coming back to lead with an older reading),
// a log start moved past records that alone decided some keys (the
// reading no longer holds: a full replay), and a broker restarted (no
// reading). The records mix valid states, tombstones, values and keys
// that do not decode, and one key spelled two ways.
func TestShareReplayAcrossTermsMatchesFullReplay(t *testing.T) {
	c := newClusterWith(t, 3, 61, earliestShares)
	c.waitReady()
	findCoordinator(t, c, 1, "g") // creates __consumer_offsets
	cp := c.nodes[1].r.offsetsTopic().Partitions[0]
	g := cp.Group

	leader := func() int32 {
		for _, id := range sortedKeys(c.nodes) {
			if n := c.nodes[id]; n.r != nil {
				if p, ok := n.r.parts[g]; ok && p.Ready() && n.r.leaseHeld(p) {
					return id
				}
			}
		}
		return 0
	}
	waitLeader := func(not int32) int32 {
		t.Helper()
		var id int32
		if !c.runUntil(30*time.Second, func() bool { id = leader(); return id != 0 && id != not }) {
			t.Fatalf("no ready leader of the offsets partition other than %d", not)
		}
		return id
	}
	write := func(recs []group.Record) {
		t.Helper()
		for attempt := 0; attempt < 20; attempt++ {
			id := waitLeader(0)
			p := c.nodes[id].r.parts[g]
			var done, failed bool
			(&offsetsLog{r: c.nodes[id].r, group: g, term: p.Term()}).Write(recs, func(_ time.Duration, err error) {
				done, failed = true, err != nil
			})
			c.runUntil(10*time.Second, func() bool { return done })
			if done && !failed {
				return
			}
		}
		t.Fatal("the share-state records were never written")
	}

	keys := []share.Key{{Group: "g", Topic: "t", Partition: 0}, {Group: "g", Topic: "t", Partition: 1}, {Group: "h", Topic: "u", Partition: 2}}
	spelling := func(k share.Key, other bool) []byte {
		if !other {
			return share.EncodeKey(k)
		}
		return append(binary.BigEndian.AppendUint16(nil, uint16(share.KeyVersion)),
			fmt.Sprintf(` {"partition": %d, "topic": %q, "group": %q}`, k.Partition, k.Topic, k.Group)...)
	}
	badKey := append(binary.BigEndian.AppendUint16(nil, uint16(share.KeyVersion)), "{not json"...)
	rng := rand.New(rand.NewSource(7))
	randomRecords := func(n int) []group.Record {
		var recs []group.Record
		for ; n > 0; n-- {
			var rec group.Record
			if rng.Intn(10) == 0 {
				rec.Key = badKey
			} else {
				rec.Key = spelling(keys[rng.Intn(len(keys))], rng.Intn(3) == 0)
			}
			switch rng.Intn(6) {
			case 0:
				rec.Value = nil
			case 1:
				rec.Value = []byte("{broken")
			default:
				start := int64(rng.Intn(100))
				rec.Value = share.EncodeState(share.State{Start: start, End: start + int64(rng.Intn(10))})
			}
			recs = append(recs, rec)
		}
		return recs
	}

	incremental := 0
	// check loads the share state on the leader the way loadShareShard
	// does and compares it with a full replay; it returns whether the
	// leader's reading held (only the new records were read).
	check := func(label string) bool {
		t.Helper()
		id := waitLeader(0)
		r := c.nodes[id].r
		p := r.parts[g]
		held := r.shares.replays[g].holds(p)
		got, err := r.shares.replayShareStates(g, p)
		if err != nil {
			t.Fatalf("%s: load on %d: %v", label, id, err)
		}
		full, err := replayShareValues(p, nil)
		if err != nil {
			t.Fatalf("%s: full replay on %d: %v", label, id, err)
		}
		if want := full.states(); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: broker %d (term %d, reading held: %v) loaded\n%v\nbut a full replay of [%d, %d) gives\n%v",
				label, id, p.Term(), held, got, p.StartOffset(), p.HighWatermark(), want)
		}
		if r.shares.replays[g].end != p.HighWatermark() {
			t.Fatalf("%s: the reading ends at %d, the high watermark is %d", label, r.shares.replays[g].end, p.HighWatermark())
		}
		if held {
			incremental++
		}
		return held
	}

	for round := 0; round < 12; round++ {
		write(randomRecords(1 + rng.Intn(8)))
		check(fmt.Sprintf("round %d", round))
		write(randomRecords(1 + rng.Intn(8)))
		check(fmt.Sprintf("round %d, again", round))
		// The next broker leads; it read the log when it last led.
		old := leader()
		for _, id := range sortedKeys(c.nodes) {
			if id != old {
				c.nodes[old].r.parts[g].Replica().TransferLeader(uint64(id))
				break
			}
		}
		waitLeader(old)
	}
	if incremental < 12 {
		t.Fatalf("only %d of the loads read just the new records: the test no longer covers them", incremental)
	}

	// A key only the records below a new log start decide: after the
	// start moves past them, every reading that began earlier no longer
	// holds, and the key has no state.
	gone := share.Key{Group: "gone", Topic: "t", Partition: 9}
	write([]group.Record{{Key: share.EncodeKey(gone), Value: share.EncodeState(share.State{Start: 5, End: 6})}})
	for _, id := range sortedKeys(c.nodes) { // every broker leads once and reads it
		for leader() != id {
			c.nodes[leader()].r.parts[g].Replica().TransferLeader(uint64(id))
			c.runUntil(5*time.Second, func() bool { return leader() == id })
		}
		check(fmt.Sprintf("broker %d reads the key", id))
	}
	lead := leader()
	p := c.nodes[lead].r.parts[g]
	newStart := p.HighWatermark()
	index, term, err := p.ProposeStartOffset(newStart)
	if err != nil {
		t.Fatal(err)
	}
	committed := false
	p.WaitCommit(index, term, -1, func(err error) { committed = err == nil })
	c.runUntil(10*time.Second, func() bool { return committed })
	write(randomRecords(3))
	c.runFor(time.Second)
	for _, id := range sortedKeys(c.nodes) {
		for leader() != id {
			c.nodes[leader()].r.parts[g].Replica().TransferLeader(uint64(id))
			c.runUntil(5*time.Second, func() bool { return leader() == id })
		}
		if c.nodes[id].r.parts[g].StartOffset() != newStart {
			t.Fatalf("broker %d: log start %d, want %d", id, c.nodes[id].r.parts[g].StartOffset(), newStart)
		}
		if check(fmt.Sprintf("broker %d after the log start moved", id)) {
			t.Fatalf("broker %d: its reading from before the log start moved still held", id)
		}
		states, _ := c.nodes[id].r.shares.replayShareStates(g, c.nodes[id].r.parts[g])
		if _, ok := states[gone]; ok {
			t.Fatalf("broker %d: %v still has a state below the log start", id, gone)
		}
	}

	// A restarted broker has no reading: a full replay.
	c.nodes[lead].crash()
	c.nodes[lead].boot()
	write(randomRecords(4))
	if !c.runUntil(30*time.Second, func() bool {
		if l := leader(); l != lead && l != 0 {
			c.nodes[l].r.parts[g].Replica().TransferLeader(uint64(lead))
		}
		return leader() == lead
	}) {
		t.Fatalf("broker %d never led again after its restart", lead)
	}
	if check("after a restart") {
		t.Fatal("a restarted broker had a reading")
	}
}
