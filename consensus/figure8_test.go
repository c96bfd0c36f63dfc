package consensus_test

import (
	"time"

	"github.com/floe-broker/floe/netx"
)

// The Figure 8 nemesis plays, over and over with random timings, the
// schedule of Figure 8 of the Raft paper on the live cluster:
//
//  1. the leader L1, holding entries not yet committed, is cut off (and
//     keeps accepting proposals that reach nobody);
//  2. the moment another node L2 is elected (before its first Ready goes
//     out), it is cut off too, so its entry of a newer term stays on L2;
//  3. L1 comes back and campaigns at once (the adversary picks who times
//     out first); elected again, it brings the others up to date with its
//     old-term entries, and a random moment later it is cut off again;
//  4. L2 comes back, campaigns at once, and can win with its newer last
//     term, overwriting what L1 spread. That is safe only if L1 never
//     committed an old-term entry by counting replicas.
//
// A step that does not happen within a timeout abandons the cycle: the
// network heals and a new cycle starts.

type figure8Phase uint8

const (
	f8Settle       figure8Phase = iota // everything healed; wait a while
	f8WaitL2                           // L1 cut off; wait for a new leader
	f8WaitL1Return                     // L2 cut off, L1 back; wait for L1 to lead
	f8WaitL2Return                     // L1 cut off again, L2 back; wait for a leader
)

type figure8 struct {
	phase    figure8Phase
	l1, l2   *node
	deadline time.Duration
	cycle    int
}

func (c *cluster) startFigure8() {
	c.f8 = &figure8{}
	c.figure8Restart()
	c.figure8Poll()
}

func (c *cluster) figure8Restart() {
	c.net.Heal()
	c.f8.phase = f8Settle
	c.f8.deadline = c.sim.Monotonic() + c.randDuration(20*c.opts.tick)
}

// figure8Timeout is how long a step may take: a few elections, each a few
// round trips.
func (c *cluster) figure8Timeout() time.Duration {
	return 4*electionTicks*c.opts.tick + 20*c.opts.faults.DelayMax
}

// campaignSoon makes n campaign a moment from now (after the network
// change takes effect), as if its election timer fired first.
func (c *cluster) campaignSoon(n *node) {
	c.sim.After(time.Duration(c.rng.Int63n(int64(c.opts.tick))), func() {
		if c.faulty && c.err == nil && n.up {
			n.rn.Campaign()
			n.stepDone()
		}
	})
}

// figure8Poll handles the timed steps; it polls every millisecond.
func (c *cluster) figure8Poll() {
	if !c.faulty || c.err != nil {
		return
	}
	c.sim.After(time.Millisecond, c.figure8Poll)
	f, now := c.f8, c.sim.Monotonic()
	if f.phase == f8Settle {
		// Cut the leader off once it holds entries not yet committed.
		if l := c.leader(); l != nil && now >= f.deadline {
			if st := l.rn.Status(); st.LastIndex > st.Commit {
				f.cycle++
				f.l1 = l
				c.net.Isolate(netx.NodeID(l.id))
				c.tracef("figure8 #%d: n%d (leader, %d uncommitted) cut off", f.cycle, l.id, st.LastIndex-st.Commit)
				f.phase, f.deadline = f8WaitL2, now+c.figure8Timeout()
			}
		}
		return
	}
	if now >= f.deadline {
		c.tracef("figure8 #%d: gave up", f.cycle)
		c.figure8Restart()
	}
}

// figure8OnLeader runs the moment node n becomes leader of term.
func (c *cluster) figure8OnLeader(n *node, term uint64) {
	f := c.f8
	if f == nil || !c.faulty {
		return
	}
	now := c.sim.Monotonic()
	switch f.phase {
	case f8WaitL2:
		if n == f.l1 {
			return
		}
		f.l2 = n
		c.net.Heal()
		c.net.Isolate(netx.NodeID(n.id))
		c.tracef("figure8 #%d: n%d elected in term %d, cut off at once; n%d back", f.cycle, n.id, term, f.l1.id)
		f.phase, f.deadline = f8WaitL1Return, now+c.figure8Timeout()
		c.campaignSoon(f.l1)
	case f8WaitL1Return:
		if n != f.l1 {
			c.tracef("figure8 #%d: n%d won instead of n%d", f.cycle, n.id, f.l1.id)
			c.figure8Restart()
			return
		}
		// Cut L1 off again somewhere inside its catch-up of the others.
		cut := time.Duration(c.rng.Int63n(int64(8*c.opts.faults.DelayMax + 2*c.opts.fsyncMax)))
		f.phase, f.deadline = f8WaitL2Return, now+c.figure8Timeout()
		c.sim.After(cut, func() {
			if !c.faulty || c.err != nil || f.phase != f8WaitL2Return {
				return
			}
			c.net.Heal()
			c.net.Isolate(netx.NodeID(f.l1.id))
			c.tracef("figure8 #%d: n%d (leader of term %d) cut off again after %v; n%d back", f.cycle, f.l1.id, term, cut, f.l2.id)
			c.campaignSoon(f.l2)
		})
	case f8WaitL2Return:
		if n != f.l1 {
			c.tracef("figure8 #%d: n%d leads term %d after the dance", f.cycle, n.id, term)
			c.figure8Restart()
		}
	}
}
