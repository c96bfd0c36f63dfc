package node

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/wire"
	"github.com/floe-broker/floe/netx"
)

// controllerLeaderNode returns the node that leads the controller group,
// or nil.
func (c *cluster) controllerLeaderNode() *tnode {
	for _, id := range sortedKeys(c.nodes) {
		if n := c.nodes[id]; n.r != nil && !n.r.stopped && n.r.controllerLeader() == n.r.self {
			return n
		}
	}
	return nil
}

func joinFrame(id uint64, addr string, inc uint64) []byte {
	var w wire.Writer
	w.U8(frameRPC)
	w.U8(rpcJoin)
	w.Uvarint(id)
	w.String(addr)
	w.Uvarint(inc)
	return w.B
}

// A second process joining under the id of a live registered broker is
// refused and changes nothing; once the registered one stops, the same
// join is admitted (a replacement), and the broker restarts as before.
func TestDuplicateBrokerIDRefusedWhileLive(t *testing.T) {
	c := newCluster(t, 3, 23)
	c.waitReady()
	lead := c.controllerLeaderNode()
	if lead == nil {
		t.Fatal("no controller leader")
	}
	victim := c.nodes[1]
	if victim == lead {
		victim = c.nodes[2]
	}
	vid := uint64(victim.id)
	registered := func() bool {
		l := c.controllerLeaderNode()
		if l == nil || victim.r == nil {
			return false
		}
		b, ok := l.r.ctl.state.Brokers[victim.id]
		return ok && b.Incarnation == victim.r.incarnation
	}
	if !c.runUntil(10*time.Second, registered) {
		t.Fatalf("broker %d never registered its incarnation", vid)
	}
	c.runFor(time.Second) // the leader has led long enough to know who is live
	lead = c.controllerLeaderNode()
	other := victim.r.incarnation + 2

	before := *lead.r.ctl.state.Brokers[victim.id]
	conf := lead.r.ctl.rep.Conf()
	changes := lead.r.MetadataChanges()
	lead.r.HandlePeer(netx.NodeID(vid), joinFrame(vid, "127.0.0.1:1", other))
	c.runFor(200 * time.Millisecond)

	err := lead.r.joinRefusal(vid, other)
	if err == nil || !strings.Contains(err.Error(), "is registered by a live broker") {
		t.Fatalf("join of live broker id %d from another incarnation: %v, want refused as live", vid, err)
	}
	if got := lead.r.ctl.state.Brokers[victim.id]; !got.Equal(&before) {
		t.Fatalf("refused join changed broker %d: %+v, was %+v", vid, *got, before)
	}
	if got := lead.r.ctl.rep.Conf(); !slices.Equal(got.Voters, conf.Voters) || !slices.Equal(got.Learners, conf.Learners) {
		t.Fatalf("refused join changed the controller members: %+v, was %+v", got, conf)
	}
	if got := lead.r.MetadataChanges(); got != changes {
		// Leader and size reports may still apply; the broker record and
		// the members, checked above, are what a join could change.
		t.Logf("metadata changes %d -> %d (reports)", changes, got)
	}
	if err := lead.r.joinRefusal(vid, victim.r.incarnation); err != nil {
		t.Fatalf("the registered process's own join refused: %v", err)
	}
	// A join under the leader's own id is refused by the broker it came
	// in through (the leader's transport cannot reach a process with its id).
	lid := lead.r.self
	if err := victim.r.leaderJoinRefusal(lid, other, lid); err == nil || !strings.Contains(err.Error(), "is the controller leader") {
		t.Fatalf("join under the leader's id %d at a follower: %v, want refused", lid, err)
	}
	if err := victim.r.leaderJoinRefusal(lid, lead.r.incarnation, lid); err != nil {
		t.Fatalf("the leader's own incarnation refused at a follower: %v", err)
	}

	victim.crash()
	admitted := func() bool {
		l := c.controllerLeaderNode()
		return l != nil && l.r.joinRefusal(vid, other) == nil
	}
	if !c.runUntil(20*time.Second, admitted) {
		t.Fatalf("join of broker id %d still refused 20s after it stopped: %v", vid, c.controllerLeaderNode().r.joinRefusal(vid, other))
	}

	victim.boot()
	if !c.runUntil(30*time.Second, registered) {
		t.Fatalf("restarted broker %d never registered its new incarnation", vid)
	}
}

// A joining broker refused as a duplicate logs it, keeps asking for a
// while (the registered process may just have died), then exits.
func TestJoinRefusedBrokerExits(t *testing.T) {
	c := newCluster(t, 3, 24)
	c.waitReady()
	n4 := c.addNode(4)
	c.net.Isolate(4) // it never hears a controller leader: only the refusals
	var refusal wire.Writer
	refusal.U8(frameRPC)
	refusal.U8(rpcJoinRefused)
	refusal.String("broker id 4 is registered by a live broker")
	fatal := func() (error, bool) {
		for _, f := range c.w.Fatals() {
			if f.ID == 4 {
				return f.Err, true
			}
		}
		return nil, false
	}
	r4 := n4.r
	r4.HandlePeer(1, refusal.B)
	c.runFor(10 * time.Millisecond)
	if err, ok := fatal(); ok {
		t.Fatalf("broker exited on the first refusal: %v", err)
	}
	for i := 0; i < 1000 && !r4.stopped; i++ {
		r4.HandlePeer(1, refusal.B)
		c.runFor(10 * time.Millisecond)
	}
	err, ok := fatal()
	if !ok || !strings.Contains(err.Error(), "join refused: broker id 4 is registered by a live broker") {
		t.Fatalf("refused broker: fatal %v (%v), want it to exit with the refusal", err, ok)
	}
}

// A learner keeps the controller leader it last heard from for as long as
// no later term reaches it (it never campaigns). Once it has not heard
// from that leader for dupLiveTicks, a join under the leader's id is no
// longer refused there as a live leader's: it may be the leader restarted
// (sim seed 3500093: the restarted controller leader, a voter waiting for
// its group to elect, was refused by a learner until it exited).
func TestStaleLeaderJoinNotRefusedAtFollower(t *testing.T) {
	c := newCluster(t, 3, 25)
	c.waitReady()
	n4 := c.addNode(4)
	known := func() bool {
		l := c.controllerLeaderNode()
		if l == nil || n4.r == nil || n4.r.controllerLeader() != l.r.self {
			return false
		}
		b, ok := n4.r.ctl.state.Brokers[l.id]
		return ok && b.Incarnation == l.r.incarnation
	}
	if !c.runUntil(30*time.Second, known) {
		t.Fatal("broker 4 never followed the controller leader with its registration applied")
	}
	lid := c.controllerLeaderNode().r.self
	other := c.nodes[int32(lid)].r.incarnation + 2
	if err := n4.r.leaderJoinRefusal(lid, other, lid); err == nil || !strings.Contains(err.Error(), "is the controller leader") {
		t.Fatalf("join under the live leader's id %d at learner 4: %v, want refused", lid, err)
	}

	c.net.Isolate(4) // it hears from no leader any more, and elects none
	c.runFor(time.Duration(2*n4.r.dupLiveTicks()) * n4.r.cfg.TickInterval)
	if got := n4.r.controllerLeader(); got != lid {
		t.Fatalf("isolated learner 4 follows %d, want the stale leader %d kept", got, lid)
	}
	if ago := n4.r.ctl.rep.LeadHeardTicksAgo(); ago < 0 || uint64(ago) <= n4.r.dupLiveTicks() {
		t.Fatalf("isolated learner 4 heard from its leader %d ticks ago", ago)
	}
	if err := n4.r.leaderJoinRefusal(lid, other, lid); err != nil {
		t.Fatalf("join under the id of leader %d, not heard from for %d ticks, refused at learner 4: %v",
			lid, n4.r.ctl.rep.LeadHeardTicksAgo(), err)
	}
}
