package sim

import (
	"fmt"
	"time"

	"github.com/floe-broker/floe/jepsen/history"
	"slices"
	"sort"
	"strings"

	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node"
)

// White-box invariants (issue 15). The history checkers see what clients
// saw; these look inside every broker (node.Reactor.Inspect) while the run
// goes, at every new simulated instant, and once more after the liveness
// phase:
//
//   - election safety: at most one leader per term per group;
//   - one vote per term: a member never votes for two candidates in one
//     term, also across crashes (the vote must be durable before it is
//     sent);
//   - a member's commit index never decreases within an incarnation, and a
//     restarted member's commit index is at least the one it had made
//     durable before the crash;
//   - a durable term never goes back, and a durable vote never changes
//     within its term, also across crashes;
//   - applied <= commit, and term >= durable term;
//   - a settled member's term and vote are durable (persist before send);
//   - a committed entry is never replaced: the term at every commit index
//     seen, on every member holding it;
//   - a restarted member's log, or its vote fence, covers the entries it
//     held durably and knew committed before the crash (heldAfterRestart);
//   - a leader advances its commit index only onto an entry of its own
//     term (Raft's Figure 8 rule);
//   - no read is answered by a deposed leader (read leases);
//   - after the heal: every replica's committed prefix is identical (hash
//     of index, term and data of each entry both hold), and replicas that
//     applied the same index hold the same partition state (checkpoint:
//     producer table and start offset, and high watermark) — each replica
//     replays the committed log on its own, so a replay that differs shows.
//
// Reading the views changes nothing in the brokers and schedules no event,
// so a seed's run is the same with or without the checks.
//
// A node whose files the nemesis damaged may lower its commit index on
// purpose (repair from peers): the cross-crash commit and durable-state
// checks skip it from then on.
type invariants struct {
	r *run
	// leaders: (group, term) -> the node that led it.
	leaders map[groupTerm]netx.NodeID
	// votes: (node, incarnation, group, term) -> the vote seen in memory;
	// a vote not yet durable may be lost in a crash (it was never sent),
	// so across incarnations only durable votes are compared (durVotes).
	votes    map[nodeGroupTerm]uint64
	durVotes map[nodeGroupTerm]uint64
	// seen: (node, group) -> what was last observed.
	seen map[nodeGroup]memberSeen
	// looks: per node, its views at the last check that saw it up, so a
	// check runs the member checks only on views that changed (look).
	looks map[netx.NodeID]*nodeLook
	// regrouped: nodes of this check whose set of groups may differ from
	// the last check's (forgetDeleted looks only at these).
	regrouped []netx.NodeID
	// committed: (group, index) -> the term of the entry a member held
	// there while its commit index covered it.
	committed map[groupTerm]uint64
	// damaged: nodes whose files were corrupted (run.corruptedFiles).
	damaged     map[netx.NodeID]bool
	damagedSeen int
	// reported: invariant kinds already reported (one line each).
	reported map[string]int
	failures uint64 // calls of fail, reported or counted
	// quietLooks counts the looks checkRefreshed compared.
	quietLooks int
	checks     uint64
}

// nodeLook is what the invariants keep of one node between checks.
type nodeLook struct {
	checked       uint64 // the last check that saw the node up
	inc           uint64
	ran           uint64 // World.Ran at that check
	insp          node.Inspector
	damaged, lies bool // iv.damaged and the lying fsync, at that check
	views         []node.ReplicaView
	failed        []bool // per view: its member checks called fail
	// spare and spareFailed are the buffers the next check fills.
	spare       []node.ReplicaView
	spareFailed []bool
}

type groupTerm struct{ group, term uint64 }

type nodeGroup struct {
	node  netx.NodeID
	group uint64
}

type nodeGroupTerm struct {
	node             netx.NodeID
	inc, group, term uint64
}

type memberSeen struct {
	inc, opening, term      uint64
	leader, damaged         bool
	commit, last            uint64
	durIdx                  uint64 // durable and agreeing with Raft's log (ReplicaView.DurableAgreed)
	durTerm, durVote, durCo uint64
	// wiped: the node's disk was replaced since (replacedisk.go): its
	// next look is a new member's, held to heldAfterRestart only.
	wiped bool
	// retention and compaction (retention.go)
	first                     uint64
	segRemoved, cleanerPasses int64
}

func newInvariants(r *run) *invariants {
	return &invariants{r: r, leaders: map[groupTerm]netx.NodeID{}, votes: map[nodeGroupTerm]uint64{}, durVotes: map[nodeGroupTerm]uint64{}, committed: map[groupTerm]uint64{},
		seen: map[nodeGroup]memberSeen{}, looks: map[netx.NodeID]*nodeLook{}, damaged: map[netx.NodeID]bool{}, reported: map[string]int{}}
}

// fail records a violated invariant: the first of each kind as a violation
// (so the seed fails with its replay command), later ones counted.
func (iv *invariants) fail(kind, format string, args ...any) {
	iv.failures++
	iv.reported[kind]++
	if iv.reported[kind] > 1 {
		return
	}
	iv.r.violation("invariant", kind+": "+fmt.Sprintf(format, args...)+fmt.Sprintf(" (at %v)", iv.r.now()))
}

func (iv *invariants) broker(id netx.NodeID) *node.Reactor {
	if b, ok := iv.r.w.Instance(id).(*Broker); ok && b != nil && b.R != nil && !b.R.Stopped() {
		return b.R
	}
	return nil
}

func (iv *invariants) noteDamage() {
	for _, f := range iv.r.corruptedFiles[iv.damagedSeen:] {
		var id int
		if _, err := fmt.Sscanf(f, "n%d:", &id); err == nil {
			iv.damaged[netx.NodeID(id)] = true
		}
	}
	iv.damagedSeen = len(iv.r.corruptedFiles)
}

// observe checks every up node's groups now.
func (iv *invariants) observe() {
	iv.checks++
	iv.noteDamage()
	iv.regrouped = iv.regrouped[:0]
	for _, id := range iv.r.w.IDs() {
		if rc := iv.broker(id); rc != nil {
			iv.look(id, rc)
		}
	}
	iv.forgetDeleted()
}

// look checks one up node's groups: a node that ran no code since the
// previous check (World.Ran) is not inspected again, only refreshed
// (lookQuiet); another is inspected (lookChanged). A view equal to the one the previous
// check saw of the same member, in the same incarnation, with the node's
// damage and lying-fsync marks unchanged, and whose checks then called no
// fail, is not checked again: member would find exactly what it found
// then. Its inputs are the view, the previous memberSeen (built from that
// same view) and the leaders, votes, durVotes and committed entries it
// recorded or matched then, which only forgetGroupIfDead and
// forgetDeleted remove, and only for a group or member absent from some
// check, while this member was present in both. So every comparison
// comes out as before, no fail is called, and seen is rewritten with the
// value it holds. Only the per-view coverage counts (coverSteady) change,
// and those are counted again.
func (iv *invariants) look(id netx.NodeID, rc *node.Reactor) {
	nl := iv.looks[id]
	if nl == nil {
		nl = &nodeLook{}
		iv.looks[id] = nl
	}
	inc := iv.r.w.Incarnation(id)
	damaged, lies := iv.damaged[id], iv.r.nem.more.lies(id)
	steady := nl.checked == iv.checks-1 && nl.inc == inc && nl.damaged == damaged && nl.lies == lies
	ran := iv.r.w.Ran(id)
	if steady && ran == nl.ran {
		iv.lookQuiet(id, rc, nl, inc)
	} else {
		iv.lookChanged(id, rc, nl, inc, steady)
	}
	nl.checked, nl.inc, nl.ran, nl.damaged, nl.lies = iv.checks, inc, ran, damaged, lies
}

// lookChanged inspects a node that ran code since the last check.
func (iv *invariants) lookChanged(id netx.NodeID, rc *node.Reactor, nl *nodeLook, inc uint64, steady bool) {
	cur := nl.insp.Inspect(rc, nl.spare, false)
	failed := nl.spareFailed[:0]
	sameGroups := steady && len(cur) == len(nl.views)
	for i := range cur {
		v := &cur[i]
		if steady && i < len(nl.views) && *v == nl.views[i] && !nl.failed[i] {
			iv.r.coverSteady(v)
			failed = append(failed, false)
			continue
		}
		if i >= len(nl.views) || nl.views[i].Group != v.Group {
			sameGroups = false
		}
		before := iv.failures
		iv.member(id, inc, *v)
		failed = append(failed, iv.failures != before)
	}
	nl.spare, nl.views = nl.views, cur
	nl.spareFailed, nl.failed = nl.failed, failed
	if !sameGroups {
		iv.regrouped = append(iv.regrouped, id)
	}
}

// lookQuiet looks at a node that ran nothing since the last check: its
// views are those, but for what they read from its clock
// (node.Inspector.RefreshView), so a view is unchanged when those fields
// are. A view that cannot change with the clock alone is not refreshed
// (mayChangeWithClock).
func (iv *invariants) lookQuiet(id netx.NodeID, rc *node.Reactor, nl *nodeLook, inc uint64) {
	for i := range nl.views {
		old := &nl.views[i]
		v := *old
		if mayChangeWithClock(old) {
			nl.insp.RefreshView(rc, i, &v)
		}
		if v.LeaseHeld == old.LeaseHeld && v.RetentionBound == old.RetentionBound && !nl.failed[i] {
			iv.r.coverSteady(old)
			continue
		}
		before := iv.failures
		iv.member(id, inc, v)
		*old, nl.failed[i] = v, iv.failures != before
	}
	if iv.r.o.checkQuiet {
		iv.checkRefreshed(id, rc, nl.views)
	}
}

// mayChangeWithClock reports whether RefreshView may find v's clock-read
// fields changed on a Reactor that ran nothing since v was taken. Not when
// both are constant in time: LeaseHeld is false (a lease is held only
// while its deadline is ahead of the node's monotonic clock, which only
// advances, and the rest of node.Reactor.leaseState reads memory only:
// time alone turns a held lease into an expired one, never the reverse),
// and the partition does not retain (RetentionBytes and RetentionMs are
// both -1 exactly then, and RetentionBound is 0). Skipping RefreshView for
// those views is about half of a long seed's look cost at quiet nodes;
// Options.checkQuiet (TestRefreshedLooksEqualFullOnes) compares the
// result with a full Inspect.
func mayChangeWithClock(v *node.ReplicaView) bool {
	return v.LeaseHeld || v.RetentionBytes >= 0 || v.RetentionMs >= 0
}

// checkRefreshed fails the run if a refreshed look at a quiet node
// differs from a full one (Options.checkQuiet).
func (iv *invariants) checkRefreshed(id netx.NodeID, rc *node.Reactor, refreshed []node.ReplicaView) {
	iv.quietLooks++
	full := rc.Inspect(false)
	if !slices.Equal(full, refreshed) {
		iv.fail("refreshed-view-differs", "n%d: a node that ran nothing since the last check: refreshed views %+v, inspected %+v", id, refreshed, full)
	}
}

// present reports whether this check saw node id up holding group g.
func (iv *invariants) present(id netx.NodeID, g uint64) bool {
	nl := iv.looks[id]
	if nl == nil || nl.checked != iv.checks {
		return false
	}
	for i := range nl.views {
		if nl.views[i].Group == g {
			return true
		}
	}
	return false
}

// forgetDeleted forgets the replicas an up node no longer holds (a
// membership change removed them): one added back later starts from an
// empty log, term 0, with no vote, and is a new member. Only a node whose
// groups may have changed since the previous check can have lost one: a
// node seen then and now with the same groups had its seen entries
// pruned to those groups at the previous check.
func (iv *invariants) forgetDeleted() {
	if len(iv.regrouped) == 0 {
		return
	}
	var gone []nodeGroup
	for k := range iv.seen {
		if slices.Contains(iv.regrouped, k.node) && !iv.present(k.node, k.group) {
			gone = append(gone, k)
		}
	}
	for _, k := range gone {
		delete(iv.seen, k)
	}
	// A deleted group's terms, commits and votes are not forgotten: a
	// broker that opens it again (a restart replaying the controller log
	// from before the deletion) starts from its tombstone, at the old term
	// and vote (node/tombstone.go), so they still hold.
	for _, k := range gone {
		for vk := range iv.durVotes {
			if vk.node == k.node && vk.group == k.group {
				delete(iv.durVotes, vk)
			}
		}
	}
}

func (iv *invariants) member(id netx.NodeID, inc uint64, v node.ReplicaView) {
	g := v.Group
	if v.Leader {
		k := groupTerm{g, v.Term}
		if other, ok := iv.leaders[k]; ok && other != id {
			iv.fail("two-leaders-in-a-term", "group %d term %d led by n%d and n%d", g, v.Term, other, id)
		} else if !ok {
			iv.leaders[k] = id
		}
	}
	if v.Vote != 0 {
		k := nodeGroupTerm{id, inc, g, v.Term}
		if prev, ok := iv.votes[k]; ok && prev != v.Vote {
			iv.fail("two-votes-in-a-term", "n%d.%d group %d term %d voted for %d, earlier for %d", id, inc, g, v.Term, v.Vote, prev)
		} else if !ok {
			iv.votes[k] = v.Vote
		}
	}
	if v.DurableVote != 0 && !iv.damaged[id] && !iv.r.nem.more.lies(id) {
		k := nodeGroupTerm{id, 0, g, v.DurableTerm}
		if prev, ok := iv.durVotes[k]; ok && prev != v.DurableVote {
			iv.fail("two-durable-votes-in-a-term", "n%d.%d group %d term %d durably voted for %d, earlier for %d",
				id, inc, g, v.DurableTerm, v.DurableVote, prev)
		} else if !ok {
			iv.durVotes[k] = v.DurableVote
		}
	}
	if v.Settled && !v.Damaged && !iv.damaged[id] && (v.Term != v.DurableTerm || v.Vote != v.DurableVote) {
		iv.fail("hard-state-not-durable", "n%d.%d group %d settled at term %d vote %d, durable term %d vote %d",
			id, inc, g, v.Term, v.Vote, v.DurableTerm, v.DurableVote)
	}
	if v.CommitTerm != 0 && !v.Damaged {
		k := groupTerm{g, v.CommitIndex} // (group, index)
		if t, ok := iv.committed[k]; ok && t != v.CommitTerm {
			iv.fail("committed-entry-changed", "group %d entry %d committed with term %d, n%d.%d now holds term %d there",
				g, v.CommitIndex, t, id, inc, v.CommitTerm)
		} else if !ok {
			iv.committed[k] = v.CommitTerm
		}
	}
	if v.Applied > v.Commit {
		iv.fail("applied-past-commit", "n%d.%d group %d applied %d > commit %d", id, inc, g, v.Applied, v.Commit)
	}
	if v.Term < v.DurableTerm {
		iv.fail("term-below-durable", "n%d.%d group %d term %d < durable term %d", id, inc, g, v.Term, v.DurableTerm)
	}
	k := nodeGroup{id, g}
	prev, ok := iv.seen[k]
	iv.r.coverView(prev, ok, v, inc)
	iv.r.retentionInvariants(id, inc, prev, ok && !prev.wiped, v)
	iv.r.leaseInvariant(id, inc, v)
	now := memberSeen{inc: inc, opening: v.Opening, term: v.Term, leader: v.Leader, damaged: v.Damaged, commit: v.Commit, last: v.LastIndex, durIdx: v.DurableAgreed, durTerm: v.DurableTerm, durVote: v.DurableVote, durCo: v.DurableCommit,
		first: v.FirstIndex, segRemoved: v.SegmentsRemoved, cleanerPasses: v.CleanerPasses}
	iv.seen[k] = now
	if ok && prev.inc != inc && !iv.r.nem.more.lies(id) {
		iv.heldAfterRestart(id, inc, prev, v)
	}
	if ok && prev.wiped {
		iv.openedFencedAfterWipe(id, inc, prev, v)
	}
	if prev.wiped {
		return // nothing durable carries over a replaced disk
	}
	if !ok || v.Damaged || iv.damaged[id] {
		return
	}
	// A replica closed and opened again within this run of the broker
	// (deleted and re-created by a membership change, or reopened after a
	// repair) is a new member: Raft does not make a member remember its
	// commit index, so only the durable checks below carry over.
	same := prev.inc == inc && prev.opening == v.Opening
	if same && prev.leader && v.Leader && prev.term == v.Term && v.Commit > prev.commit &&
		v.CommitTerm != 0 && v.CommitTerm < v.Term {
		iv.fail("leader-committed-old-term-entry", "n%d.%d group %d: leader of term %d advanced its commit %d -> %d onto an entry of term %d (Raft commits only its own term's entries by counting)",
			id, inc, g, v.Term, prev.commit, v.Commit, v.CommitTerm)
	}
	if same && v.Commit < prev.commit {
		iv.fail("commit-decreased", "n%d.%d group %d commit %d after %d", id, inc, g, v.Commit, prev.commit)
	}
	if prev.inc != inc && v.Commit < prev.durCo && !iv.r.nem.more.lies(id) {
		iv.fail("commit-lost-in-crash", "n%d.%d group %d restarted with commit %d, n%d.%d had made %d durable",
			id, inc, g, v.Commit, id, prev.inc, prev.durCo)
	}
	if v.DurableTerm < prev.durTerm && !iv.r.nem.more.lies(id) {
		iv.fail("durable-term-went-back", "n%d.%d group %d durable term %d after %d (incarnation %d)",
			id, inc, g, v.DurableTerm, prev.durTerm, prev.inc)
	}
	if v.DurableTerm == prev.durTerm && prev.durVote != 0 && v.DurableVote != prev.durVote {
		iv.fail("durable-vote-changed", "n%d.%d group %d durable vote in term %d is %d, was %d (incarnation %d)",
			id, inc, g, v.DurableTerm, v.DurableVote, prev.durVote, prev.inc)
	}
}

// afterHeal compares the replicas of every group: committed prefixes by
// hash, and partition state at equal applied indexes.
func (iv *invariants) afterHeal() {
	iv.observe()
	type member struct {
		id netx.NodeID
		rc *node.Reactor
		v  node.ReplicaView
	}
	byGroup := map[uint64][]node.ReplicaView{}
	members := map[uint64][]member{}
	for _, id := range iv.r.w.IDs() {
		rc := iv.broker(id)
		if rc == nil {
			continue
		}
		for _, v := range rc.Inspect(true) {
			if !v.Damaged {
				byGroup[v.Group] = append(byGroup[v.Group], v)
				members[v.Group] = append(members[v.Group], member{id, rc, v})
			}
		}
	}
	for _, g := range byGroupIDs(byGroup) {
		ms := members[g]
		if len(ms) < 2 {
			continue
		}
		lo, hi := uint64(1), ms[0].v.Commit
		for _, m := range ms {
			// Raft's commit may pass what the log has written (entries
			// still unstable on a follower).
			lo, hi = max(lo, m.v.FirstIndex), min(hi, m.v.Commit, m.v.LastIndex)
		}
		compacts := false
		for _, m := range ms {
			compacts = compacts || m.v.Compacts // cleaner counters restart with the process
		}
		if hi >= lo {
			var sums []string
			first, differ := uint64(0), false
			for i, m := range ms {
				hash := m.rc.CommittedHash
				if compacts {
					hash = m.rc.CommittedTermsHash // each replica compacts its own copy
				}
				h, err := hash(g, lo, hi)
				if err != nil {
					iv.fail("committed-prefix-unreadable", "%s on n%d: entries %d..%d: %v", m.v.Name, m.id, lo, hi, err)
					continue
				}
				sums = append(sums, fmt.Sprintf("n%d=%016x", m.id, h))
				if i == 0 {
					first = h
				} else if h != first {
					differ = true
				}
			}
			if differ {
				iv.fail("committed-prefix-differs", "%s (group %d) entries %d..%d: %s", ms[0].v.Name, g, lo, hi, strings.Join(sums, " "))
			}
		}
		for i := range ms {
			for j := i + 1; j < len(ms); j++ {
				a, b := ms[i].v, ms[j].v
				if a.Name != "controller" && a.Applied == b.Applied && a.StateHash != b.StateHash {
					iv.fail("replayed-state-differs", "%s at applied %d: n%d (hw %d) and n%d (hw %d) hold different partition state",
						a.Name, a.Applied, ms[i].id, a.HighWatermark, ms[j].id, b.HighWatermark)
				}
			}
		}
	}
	iv.committedEntries()
	iv.r.w.Tracef("invariants: %d checks, violations %v", iv.checks, iv.reported)
	if iv.r.o.checkQuiet {
		iv.r.w.Tracef("invariants: %d refreshed looks compared with full ones", iv.quietLooks)
	}
	if iv.r.o.checkBalanceSkips {
		iv.r.w.Tracef("balance: %d skipped looks checked to do nothing", iv.r.balance.skipped)
	}
}

func byGroupIDs[V any](m map[uint64]V) []uint64 {
	groups := make([]uint64, 0, len(m))
	for g := range m {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i] < groups[j] })
	return groups
}

// committedEntries checks every committed (index, term) seen during the
// run against every up member's log that holds the index below its own
// commit: a committed entry is never replaced (Figure 8 of the Raft paper).
func (iv *invariants) committedEntries() {
	keys := make([]groupTerm, 0, len(iv.committed))
	for k := range iv.committed {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].group < keys[j].group || keys[i].group == keys[j].group && keys[i].term < keys[j].term
	})
	for _, id := range iv.r.w.IDs() {
		rc := iv.broker(id)
		if rc == nil || iv.damaged[id] {
			continue
		}
		commit := map[uint64]uint64{}
		for _, v := range rc.Inspect(false) {
			if !v.Damaged {
				commit[v.Group] = v.CommitIndex
			}
		}
		for _, k := range keys {
			c, ok := commit[k.group]
			if !ok || k.term > c {
				continue
			}
			if t, ok := rc.TermAt(k.group, k.term); ok && t != iv.committed[k] {
				iv.fail("committed-entry-changed", "group %d entry %d was committed with term %d; after the heal n%d holds term %d there",
					k.group, k.term, iv.committed[k], id, t)
			}
		}
	}
}

// deposedReads fails reads that a leader answered while another broker
// already led in a later epoch (the history's deposed note): read leases
// (node/lease.go) promise this never happens.
func (iv *invariants) deposedReads(h history.History) {
	n := 0
	first := ""
	for _, op := range h {
		if op.Type == history.OK && op.Note == deposedNote {
			if n++; n == 1 {
				first = fmt.Sprintf("%s by n%d at %v", op.F, op.Node, time.Duration(op.Time))
			}
		}
	}
	if n > 0 {
		iv.fail("read-from-deposed-leader", "%d reads answered by a leader a later-epoch leader had replaced (first: %s)", n, first)
	}
}

// diskReplaced: node id's disk was wiped (replacedisk.go). What each of its
// members held is still what heldAfterRestart holds its next look to; the
// other durable checks no longer apply to it.
func (iv *invariants) diskReplaced(id netx.NodeID) {
	for k, s := range iv.seen { //floe:unordered marks every entry of one node
		if k.node == id {
			s.wiped = true
			iv.seen[k] = s
		}
	}
}

// openedFencedAfterWipe checks a member at its first look after its disk
// was replaced: it must have been opened with a fence over the entries
// it held durably and knew committed on the lost disk, whether or not it
// has caught up (and lifted the fence) by the time of the look.
func (iv *invariants) openedFencedAfterWipe(id netx.NodeID, inc uint64, prev memberSeen, v node.ReplicaView) {
	held := min(prev.commit, prev.durIdx)
	if held == 0 || held <= v.OpenFence.Index {
		return
	}
	iv.fail("acknowledged-entries-unfenced", "n%d.%d group %d opened on a replaced disk with vote fence %v; n%d.%d held entries to %d durably and knew them committed",
		id, inc, v.Group, v.OpenFence, id, prev.inc, held)
}

// heldAfterRestart checks a member at its first look after a restart: the
// entries it held durably and knew committed before the crash (it may
// have acknowledged them) are in its log, or its vote fence covers them.
// Damage may take them from the log (the corruption fault), but then the
// replica must vote as if it still held them until the leader has sent
// them back (consensus/fence.go): a fence whose index is below them lets
// it vote for a candidate that lacks a committed entry. Every fence the
// node sets bounds the log it held (its last index, or no bound), so its
// index is at least theirs; the check needs no election to go wrong to
// see a fence set too low (sim seed 911081: a controller log cut below
// its snapshot at 76, fenced at 76, had held and known committed entries
// to 94).
func (iv *invariants) heldAfterRestart(id netx.NodeID, inc uint64, prev memberSeen, v node.ReplicaView) {
	held := min(prev.commit, prev.durIdx)
	if held <= v.LastIndex {
		return
	}
	if held <= v.Fence.Index {
		iv.r.cover(covFencedOverLoss)
		return
	}
	iv.fail("acknowledged-entries-unfenced", "n%d.%d group %d restarted with its log at %d and vote fence %v; n%d.%d held entries to %d durably and knew them committed",
		id, inc, v.Group, v.LastIndex, v.Fence, id, prev.inc, held)
}
