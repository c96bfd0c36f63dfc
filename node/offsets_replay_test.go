package node

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/group"
	"github.com/floe-broker/floe/node/share"
)

// offsetsLead drives partition 0 of __consumer_offsets on a 3-broker
// cluster for the replay tests: g is its Raft group.
type offsetsLead struct {
	t *testing.T
	c *cluster
	g uint64
}

func newOffsetsLead(t *testing.T, seed int64) *offsetsLead {
	c := newClusterWith(t, 3, seed, earliestShares)
	c.waitReady()
	findCoordinator(t, c, 1, "g") // creates __consumer_offsets
	return &offsetsLead{t: t, c: c, g: c.nodes[1].r.offsetsTopic().Partitions[0].Group}
}

// leader returns the broker that leads the partition, ready and with its
// lease, or 0.
func (o *offsetsLead) leader() int32 {
	for _, id := range sortedKeys(o.c.nodes) {
		if n := o.c.nodes[id]; n.r != nil {
			if p, ok := n.r.parts[o.g]; ok && p.Ready() && n.r.leaseHeld(p) {
				return id
			}
		}
	}
	return 0
}

// waitLeader waits for a leader other than not (0: any).
func (o *offsetsLead) waitLeader(not int32) int32 {
	o.t.Helper()
	var id int32
	if !o.c.runUntil(30*time.Second, func() bool { id = o.leader(); return id != 0 && id != not }) {
		o.t.Fatalf("no ready leader of the offsets partition other than %d", not)
	}
	return id
}

// write commits recs to the partition, as its leader's coordinators do.
func (o *offsetsLead) write(recs []group.Record) {
	o.t.Helper()
	for attempt := 0; attempt < 20; attempt++ {
		id := o.waitLeader(0)
		p := o.c.nodes[id].r.parts[o.g]
		var done, failed bool
		(&offsetsLog{r: o.c.nodes[id].r, group: o.g, term: p.Term()}).Write(recs, func(_ time.Duration, err error) {
			done, failed = true, err != nil
		})
		o.c.runUntil(10*time.Second, func() bool { return done })
		if done && !failed {
			return
		}
	}
	o.t.Fatal("the records were never written")
}

// next makes the next broker lead.
func (o *offsetsLead) next() {
	o.t.Helper()
	old := o.waitLeader(0)
	for _, id := range sortedKeys(o.c.nodes) {
		if id != old {
			o.c.nodes[old].r.parts[o.g].Replica().TransferLeader(uint64(id))
			break
		}
	}
	o.waitLeader(old)
}

// moveTo makes broker id lead.
func (o *offsetsLead) moveTo(id int32) {
	o.t.Helper()
	if !o.c.runUntil(30*time.Second, func() bool {
		if l := o.leader(); l != id && l != 0 {
			o.c.nodes[l].r.parts[o.g].Replica().TransferLeader(uint64(id))
		}
		return o.leader() == id
	}) {
		o.t.Fatalf("broker %d never led the offsets partition", id)
	}
}

// moveStart moves the partition's log start to its high watermark (as
// DeleteRecords would, which refuses internal topics) and returns it.
func (o *offsetsLead) moveStart() int64 {
	o.t.Helper()
	p := o.c.nodes[o.waitLeader(0)].r.parts[o.g]
	newStart := p.HighWatermark()
	index, term, err := p.ProposeStartOffset(newStart)
	if err != nil {
		o.t.Fatal(err)
	}
	committed := false
	p.WaitCommit(index, term, -1, func(err error) { committed = err == nil })
	if !o.c.runUntil(10*time.Second, func() bool { return committed }) {
		o.t.Fatal("the new log start never committed")
	}
	return newStart
}

// TestShareReplayAcrossTermsMatchesFullReplay: the share state a broker
// loads from what its last load read plus the records committed since
// (shareReplay) equals a full replay of the offsets partition, across
// leader changes (each broker coming back to lead with an older reading,
// which its group coordinator's load extends: extendReplay), a log start
// moved past records that alone decided some keys (the reading no longer
// holds: a full replay, the coordinator's or the share state's own), and a
// broker restarted (no reading). The records mix valid states, tombstones, values and keys
// that do not decode, and one key spelled two ways.
func TestShareReplayAcrossTermsMatchesFullReplay(t *testing.T) {
	o := newOffsetsLead(t, 61)
	c, g := o.c, o.g
	leader, write := o.leader, o.write

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
		id := o.waitLeader(0)
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
		o.next() // the next broker leads; it read the log when it last led
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
		o.moveTo(id)
		check(fmt.Sprintf("broker %d reads the key", id))
	}
	lead := leader()
	newStart := o.moveStart()
	write(randomRecords(3))
	c.runFor(time.Second)
	for _, id := range sortedKeys(c.nodes) {
		o.moveTo(id)
		if c.nodes[id].r.parts[g].StartOffset() != newStart {
			t.Fatalf("broker %d: log start %d, want %d", id, c.nodes[id].r.parts[g].StartOffset(), newStart)
		}
		check(fmt.Sprintf("broker %d after the log start moved", id))
		if got := c.nodes[id].r.shares.replays[g].start; got != newStart {
			t.Fatalf("broker %d: its reading begins at %d, not at the new log start %d", id, got, newStart)
		}
		states, _ := c.nodes[id].r.shares.replayShareStates(g, c.nodes[id].r.parts[g])
		if _, ok := states[gone]; ok {
			t.Fatalf("broker %d: %v still has a state below the log start", id, gone)
		}
	}

	// A restarted broker has no reading: a full replay (its coordinator's).
	c.nodes[lead].crash()
	c.nodes[lead].boot()
	write(randomRecords(4))
	o.moveTo(lead)
	check("after a restart")
}

// TestCoordinatorReplayAcrossTermsMatchesFullReplay: the group coordinator
// a broker loads by forking its replay-only coordinator after replaying
// the records committed since its last load (groupReplay) holds the
// offsets a full replay does, across leader changes, a log start moved
// past records that alone set some offsets, and a restart; records that
// do not decode are counted the same (the load logs the count).
func TestCoordinatorReplayAcrossTermsMatchesFullReplay(t *testing.T) {
	o := newOffsetsLead(t, 62)
	c, g := o.c, o.g
	rng := rand.New(rand.NewSource(9))
	offsetRecord := func(grp, topic string, part int32, off int64, tombstone bool) group.Record {
		k := kmsg.NewOffsetCommitKey()
		k.Version, k.Group, k.Topic, k.Partition = 1, grp, topic, part
		if tombstone {
			return group.Record{Key: k.AppendTo(nil)}
		}
		v := kmsg.NewOffsetCommitValue()
		v.Version, v.Offset, v.LeaderEpoch = 3, off, 1
		return group.Record{Key: k.AppendTo(nil), Value: v.AppendTo(nil)}
	}
	randomRecords := func(n int) []group.Record {
		var recs []group.Record
		for ; n > 0; n-- {
			switch rng.Intn(8) {
			case 0:
				recs = append(recs, group.Record{Key: []byte{0, 99, 1}, Value: []byte("?")}) // does not decode
			case 1:
				recs = append(recs, offsetRecord(fmt.Sprint("g", rng.Intn(4)), "t", int32(rng.Intn(3)), 0, true))
			default:
				recs = append(recs, offsetRecord(fmt.Sprint("g", rng.Intn(4)), "t", int32(rng.Intn(3)), int64(rng.Intn(1000)), false))
			}
		}
		return recs
	}

	incremental := 0
	// check loads the coordinator on the leader as syncOne does and
	// compares it with one a full replay builds; it returns whether the
	// leader's replay held (only the new records were replayed).
	check := func(label string) bool {
		t.Helper()
		id := o.waitLeader(0)
		r := c.nodes[id].r
		p := r.parts[g]
		rp := r.groups.replays[g]
		held := rp.holds(p)
		var skippedBefore int
		if held {
			skippedBefore = rp.skipped
		}
		got, err := r.loadCoordinator(p)
		if err != nil {
			t.Fatalf("%s: load on %d: %v", label, id, err)
		}
		got.Close()
		kept := r.groups.replays[g]
		delete(r.groups.replays, g)
		want, err := r.loadCoordinator(p)
		if err != nil {
			t.Fatalf("%s: full replay on %d: %v", label, id, err)
		}
		want.Close()
		fullSkipped := r.groups.replays[g].skipped
		r.groups.replays[g] = kept
		if !reflect.DeepEqual(got.Committed(), want.Committed()) {
			t.Fatalf("%s: broker %d (term %d, replay held: %v) loaded\n%v\nbut a full replay of [%d, %d) gives\n%v",
				label, id, p.Term(), held, got.Committed(), p.StartOffset(), p.HighWatermark(), want.Committed())
		}
		if kept.end != p.HighWatermark() || kept.skipped != fullSkipped || kept.skipped < skippedBefore {
			t.Fatalf("%s: the replay ends at %d (high watermark %d) and skipped %d records (a full replay: %d)",
				label, kept.end, p.HighWatermark(), kept.skipped, fullSkipped)
		}
		if held {
			incremental++
		}
		return held
	}

	// checkLive compares the coordinator the leader loaded when it
	// became leader (nothing written since) with a full replay.
	checkLive := func(label string) {
		t.Helper()
		id := o.waitLeader(0)
		r := c.nodes[id].r
		if !c.runUntil(5*time.Second, func() bool { return r.groups.shards[g] != nil }) {
			t.Fatalf("%s: broker %d loaded no coordinator", label, id)
		}
		kept := r.groups.replays[g]
		delete(r.groups.replays, g)
		want, err := r.loadCoordinator(r.parts[g])
		if err != nil {
			t.Fatalf("%s: full replay on %d: %v", label, id, err)
		}
		want.Close()
		r.groups.replays[g] = kept
		if got := r.groups.shards[g].coord.Committed(); !reflect.DeepEqual(got, want.Committed()) {
			t.Fatalf("%s: broker %d loaded\n%v\nbut a full replay gives\n%v", label, id, got, want.Committed())
		}
	}

	for round := 0; round < 12; round++ {
		o.write(randomRecords(1 + rng.Intn(8)))
		check(fmt.Sprintf("round %d", round))
		o.write(randomRecords(1 + rng.Intn(8)))
		check(fmt.Sprintf("round %d, again", round))
		o.next()
		checkLive(fmt.Sprintf("round %d, new leader", round))
	}
	if incremental < 12 {
		t.Fatalf("only %d of the loads replayed just the new records: the test no longer covers them", incremental)
	}

	// Offsets only the records below a new log start set.
	o.write([]group.Record{offsetRecord("gone", "t", 9, 5, false)})
	for _, id := range sortedKeys(c.nodes) {
		o.moveTo(id)
		check(fmt.Sprintf("broker %d reads the offset", id))
	}
	lead := o.leader()
	o.moveStart()
	o.write(randomRecords(3))
	c.runFor(time.Second)
	for _, id := range sortedKeys(c.nodes) {
		o.moveTo(id)
		checkLive(fmt.Sprintf("broker %d after the log start moved", id))
		for _, off := range c.nodes[id].r.groups.shards[g].coord.Committed() {
			if off.Group == "gone" {
				t.Fatalf("broker %d: %+v is below the log start", id, off)
			}
		}
	}

	c.nodes[lead].crash()
	c.nodes[lead].boot()
	o.write(randomRecords(4))
	o.moveTo(lead)
	checkLive("after a restart")
	check("after a restart, again")
}

// TestShareExtendReplayOnlyContinues: the group coordinator's load hands
// its share-state records to the share state's reading only when they
// continue it exactly, or begin the log when there is none.
func TestShareExtendReplayOnlyContinues(t *testing.T) {
	o := newOffsetsLead(t, 63)
	k := share.Key{Group: "g", Topic: "t", Partition: 0}
	rec := func(start int64) shareStateRecord {
		return shareStateRecord{key: string(share.EncodeKey(k)), value: share.EncodeState(share.State{Start: start, End: start + 1})}
	}
	write := func(start int64) int64 {
		r := rec(start)
		o.write([]group.Record{{Key: []byte(r.key), Value: r.value}})
		return o.c.nodes[o.waitLeader(0)].r.parts[o.g].HighWatermark()
	}
	e1 := write(1)
	lead := o.waitLeader(0)
	r := o.c.nodes[lead].r
	p := r.parts[o.g]
	start := p.StartOffset()
	if _, err := r.shares.replayShareStates(o.g, p); err != nil {
		t.Fatal(err)
	}
	e2 := write(2)
	e3 := write(3)
	if o.waitLeader(0) != lead {
		t.Fatal("the leader changed")
	}
	end := func() int64 { return r.shares.replays[o.g].end }
	r.shares.extendReplay(o.g, p, start, e2, e3, []shareStateRecord{rec(3)}) // leaves out [e1, e2)
	if end() != e1 {
		t.Fatalf("a replay of [%d, %d) extended a reading that ends at %d: it ends at %d", e2, e3, e1, end())
	}
	r.shares.extendReplay(o.g, p, start, e1, e2, []shareStateRecord{rec(2)})
	if end() != e2 || r.shares.replays[o.g].states()[k].Start != 2 {
		t.Fatalf("a replay of [%d, %d) did not extend the reading: it ends at %d with %v", e1, e2, end(), r.shares.replays[o.g].states())
	}
	delete(r.shares.replays, o.g)
	r.shares.extendReplay(o.g, p, start, e1, e3, []shareStateRecord{rec(2), rec(3)})
	if r.shares.replays[o.g] != nil {
		t.Fatalf("a replay of [%d, %d) made a reading: the log begins at %d", e1, e3, start)
	}
	r.shares.extendReplay(o.g, p, start, start, e3, []shareStateRecord{rec(1), rec(2), rec(3)})
	if r.shares.replays[o.g] == nil || end() != e3 || r.shares.replays[o.g].states()[k].Start != 3 {
		t.Fatal("a replay of the whole log made no reading")
	}
}
