package node

import (
	"encoding/binary"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
)

// TestFollowerCutAcrossDamagedHeaderIsRepaired: a replica whose log holds
// a suffix a new leader replaces (Raft truncates it after the last entry
// both agree on), and whose header of that last common entry is damaged
// in a sealed segment. The cut needs the end of that entry, which only its
// damaged header says: the truncation fails with ErrCorrupt. The broker
// must survive (damage is a fault it is built for): the replica is
// repaired from its peers, fenced, and ends up with the leader's log.
// Before the fix the broker stopped fatally, on every start again (sim
// seed 1903863 with --all-faults: a flipped bit in the length field of a
// follower's entry 11, a new leader's append replacing 12..).
func TestFollowerCutAcrossDamagedHeaderIsRepaired(t *testing.T) {
	for _, pipeline := range []int{1, 2} {
		t.Run(fmt.Sprintf("fsync-pipeline-%d", pipeline), func(t *testing.T) {
			followerCutAcrossDamagedHeader(t, pipeline)
		})
	}
}

func followerCutAcrossDamagedHeader(t *testing.T, pipeline int) {
	c := newClusterWith(t, 3, 1903863, func(cfg *Config) { cfg.SyncPipeline = pipeline })
	c.waitReady()
	const topic = "dcut"
	createTopic(t, c, 1, topic, 1, 3, map[string]string{"segment.bytes": "1024"})
	waitLeaders(t, c, topic, 1)
	produceValues(t, c, topic, 5)
	c.runFor(200 * time.Millisecond) // every follower holds every entry
	victim := leaderOf(c, topic, 0)
	rep := c.nodes[victim].r.byName[topicPartition{topic, 0}].Replica()
	g := uint64(rep.Group)
	common := rep.LastIndex() // the last entry every replica holds
	// Cut off, the leader appends (and syncs) a tail nobody else gets.
	c.net.Isolate(netx.NodeID(victim))
	for i := 0; i < 6; i++ {
		c.nodes[victim].r.HandleRequest(Client{ClientID: "test"}, produceReq(topic, 0, -1, batchOf(fmt.Sprintf("tail-%d-%s", i, strings.Repeat("y", 300)))),
			func(kmsg.Response) {})
	}
	c.runFor(5 * time.Millisecond)
	if got := rep.DurableIndex(); got < common+6 {
		t.Fatalf("the cut-off leader holds entries up to %d durably, want at least %d", got, common+6)
	}
	// The others elect a leader and commit an entry of a later term.
	var lead int32
	if !c.runUntil(10*time.Second, func() bool { lead = leaderOf(c, topic, 0); return lead != 0 && lead != victim }) {
		t.Fatalf("no leader among the others")
	}
	if sp := produce(c, lead, topic, 0, -1, batchOf("after")); sp.ErrorCode != 0 {
		t.Fatalf("the new leader %d refused a write: %v", lead, kerr.ErrorForCode(sp.ErrorCode))
	}
	c.nodes[victim].crashWith(logstore.CrashKeepAll)
	c.net.Heal()

	// Damage the header of entry common (its length field, as the
	// simulator did) in the sealed segment that also holds common+1: the
	// cut after common scans to common's end across it. (Recovery at open
	// scans only the active segment and the last entry of the others.)
	dir := partitionDir(".", topic, 0, g)
	flipped := false
	for _, seg := range sealedSegments(t, c.nodes[victim].fs, dir) {
		b, err := c.nodes[victim].fs.ReadFile(path.Join(dir, seg))
		if err != nil {
			t.Fatal(err)
		}
		at, next := int64(-1), false
		for pos := 0; pos+56 <= len(b); pos += 56 + int(binary.LittleEndian.Uint32(b[pos+8:])) {
			switch binary.LittleEndian.Uint64(b[pos+16:]) {
			case common:
				at = int64(pos)
			case common + 1:
				next = true
			}
		}
		if at >= 0 && next {
			if err := c.nodes[victim].fs.FlipBit(path.Join(dir, seg), at+10, 6); err != nil {
				t.Fatal(err)
			}
			flipped = true
			break
		}
	}
	if !flipped {
		t.Fatalf("entries %d and %d in no sealed segment of %v", common, common+1, dir)
	}

	c.nodes[victim].boot()
	if !c.runUntil(20*time.Second, func() bool {
		r := c.nodes[victim].r
		return r.stopped || r.stats.Repairs > 0 && len(fencesInForce(r)) == 0
	}) {
		t.Fatalf("node %d was not repaired (repairs %d, fences %v)", victim, c.nodes[victim].r.stats.Repairs, fencesInForce(c.nodes[victim].r))
	}
	if c.nodes[victim].r.stopped {
		t.Fatalf("node %d stopped: the cut across its damaged entry %d was fatal", victim, common)
	}
	want := []string{"0", "1", "2", "3", "4", "after"}
	if !c.runUntil(10*time.Second, func() bool { lead = leaderOf(c, topic, 0); return lead != 0 }) {
		t.Fatalf("no leader after the repair")
	}
	if got, _ := fetchAll(t, c, lead, topic, 0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the leader %d serves %v, want %v", lead, got, want)
	}
	// The repaired replica's own copy is the leader's: make it leader and
	// read everything from it.
	if lead != victim {
		c.nodes[lead].r.byName[topicPartition{topic, 0}].Replica().TransferLeader(uint64(victim))
		c.nodes[lead].r.queueProcess()
		if !c.runUntil(10*time.Second, func() bool { return leaderOf(c, topic, 0) == victim }) {
			t.Fatalf("leadership did not move to the repaired node %d", victim)
		}
	}
	if got, _ := fetchAll(t, c, victim, topic, 0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the repaired replica serves %v, want %v", got, want)
	}
}
