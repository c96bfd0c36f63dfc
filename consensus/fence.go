package consensus

import (
	"math"
	"slices"
)

// A vote fence protects Raft's safety when a member loses entries it had
// acknowledged — a checksum caught a flipped bit, or recovery found the log
// shorter than it was, and the application discarded the damaged entries
// so the leader can send them again. Raft assumes a member never forgets
// what it acknowledged: a committed entry may be held by a bare majority
// that includes this member, and if the member then voted for a candidate
// that lacks the entry (its shortened log now looks no more up to date than
// the candidate's), that candidate could win and the committed entry be
// lost. (Alagappan et al., "Protocol-Aware Recovery for Consensus-Based
// Storage", FAST 2018, describe the problem and this kind of remedy.)
//
// The fence (Index, Term) bounds the log the member held before it lost
// entries, its "old log": Index is at least the old log's last index, Term
// at least the term of its last entry (the largest term in it). While
// fenced the member:
//
//   - votes as if it still held its old log: it grants a vote (or pre-vote)
//     only to a candidate whose log is at least as up to date as
//     (Index, Term) in Raft's order (a later last term, or the same last
//     term and a last index at least Index), which is at least as up to
//     date as the old log. Raft's election restriction is thus applied to
//     the log the member acknowledged, which is all its proof needs. A
//     fenced member never blocks an election that a member with its old
//     log would have allowed, so two fenced members of three do not keep
//     a partition leaderless once the third campaigns.
//   - does not campaign (its own log is behind its fence: its vote for
//     itself would break the rule above).
//   - accepts entries from the leader, which is how the fence is lifted.
//
// The fence lifts once the log is one a member that had kept its old log
// could have now: once its last index reaches Index (the leader's entries
// then cover every index of the old log, matching or replacing it), or once
// its last term exceeds Term (an entry of a term the old log lacks sits at
// or below the old log's end, so a member with the old log would have
// dropped everything from there on: a leader replaced an uncommitted tail).
// The second case is what keeps an idle partition from staying fenced when
// its new leader's log is shorter than the fenced member's old one. A fence
// of the member's own term also gives way to the log end of the leader of
// that term (sameTermLeaderLog), as a lost-log fence does (below): a fence
// of unknown extent (Index math.MaxUint64) would otherwise lift only once a
// new leader, elected without this member's vote, wrote an entry of a later
// term, which a group that needs its vote (two voters) never gets.
//
// A member that lost its whole disk (a broker replaced under the same id:
// node/disk.go) does not know its old log, nor its term and vote. Its fence
// is LostLog(): it admits no candidate and does not campaign, whatever its
// log. It still accepts a leader's entries, and the first heartbeat of a
// leader L that carries L's log end (lastIndex, lastTerm) — a leader puts
// it in its heartbeats to a member that told it it lost entries
// (progress.lostEntries) — turns the fence into VoteFence{lastIndex,
// lastTerm}: L's log at that moment stands in for the old log, and the
// rules above apply. Why that is enough: an entry of the old log can be or
// become committed only if it is in L's log then. An entry committed
// before is in L's log (Leader Completeness: every vote that elected L came
// from a member that kept what it acknowledged, since this member cast
// none after its loss); an entry the old log held from L itself is in L's
// log (L wrote it before this member acknowledged it); any other entry of
// the old log that is not in L's log can only be committed by a leader of
// a later term, which counts acknowledgements of its own term, not the
// ones this member gave before the loss. Until the fence lifts, this
// member's vote goes only to a candidate at least as up to date as L's log
// was, so such a candidate holds every entry of the old log that counts.
//
// What this assumes: L is the leader of the latest term any member that
// voted with this one before its loss reached — not a leader deposed
// without knowing it, which would have this member (its term forgotten)
// acknowledge entries of a stale term. The term probe below makes sure of
// it: the member takes no leader's messages until it learned, from enough
// voters, a term at least that of every committed entry. A brand-new
// group's replicas are never fenced (node/disk.go): with every member
// empty there is nothing to lose, and a fenced majority would never elect.
// Where the application cannot tell a new group from a lost disk (the
// controller group: node/disk.go), Config.LostLogBootstrapTerm lets the
// fenced member vote for, and campaign with, a log holding only the
// group's bootstrap entries, once its term probe found the group new: a
// majority of the voters, itself included, whose logs hold bootstrap
// entries only (see the term probe below). A member that the probe finds
// replaced (some voter's log went past the bootstrap term) loses the
// exception and catches up like any other.
// A member that wins an election under the lost-log fence drops it: its
// log is the log of the leader it would have waited to hear from.

// lostEntriesContext marks a fenced member's refusal of an append: the
// leader lowers its record of what the member holds (step_leader.go).
const lostEntriesContext = "LostEntries"

// VoteFence bounds the log a member held before it lost entries it may
// have acknowledged. Index is at least the last index that log held (and
// the member may have acknowledged), Term at least the term of every entry
// in it: the exact last (index, term) is best; when the term is unknown,
// the member's hard-state term is a safe bound (no entry is of a later term
// than the term its member was in when it stored it), at the price of a
// fence that lifts later. When the last index is unknown (entries lost with
// the file that held them), Index is math.MaxUint64: the fence then lifts
// only once the log holds an entry of a later term than Term, and meanwhile
// the member votes only for candidates whose log does. The zero value is no
// fence.
type VoteFence struct {
	Index, Term uint64
}

// LostLog is the fence of a member that lost its whole log and hard state:
// it admits no candidate and never lifts by itself; the first heartbeat of
// a leader that carries the leader's log end replaces it (see above).
func LostLog() VoteFence { return VoteFence{Index: math.MaxUint64, Term: math.MaxUint64} }

// IsLostLog reports whether f is LostLog().
func (f VoteFence) IsLostLog() bool { return f == LostLog() }

// IsZero reports whether f is no fence.
func (f VoteFence) IsZero() bool { return f == VoteFence{} }

// Merge returns a fence at least as strict as f and g.
func (f VoteFence) Merge(g VoteFence) VoteFence {
	return VoteFence{Index: max(f.Index, g.Index), Term: max(f.Term, g.Term)}
}

// LiftedBy reports whether a log whose last entry is (lastIndex, lastTerm)
// no longer needs the fence (see above). An application uses it with its
// durable log end to know when it may drop its durable record of the fence.
func (f VoteFence) LiftedBy(lastIndex, lastTerm uint64) bool {
	return f.IsZero() || lastIndex >= f.Index || lastTerm > f.Term
}

// admits reports whether a candidate whose log ends at (index, term) is at
// least as up to date as the fenced member's old log.
func (f VoteFence) admits(index, term uint64) bool {
	return term > f.Term || (term == f.Term && index >= f.Index)
}

// fenced reports whether the member is fenced, lifting the fence once the
// log no longer needs it.
func (r *raft) fenced() bool {
	if r.voteFence.IsZero() {
		return false
	}
	if r.voteFence.LiftedBy(r.log.lastIndex(), r.log.lastTerm()) {
		r.voteFence = VoteFence{}
		return false
	}
	return true
}

// learnLeaderLog turns a lost-log fence into the fence of the log the
// leader of m (a heartbeat carrying its log end) holds now; so too a fence
// of this member's current term (sameTermLeaderLog).
func (r *raft) learnLeaderLog(m Message) {
	if m.Index == 0 || r.voteFence.IsZero() {
		return
	}
	if !r.voteFence.IsLostLog() && !r.sameTermLeaderLog(m) {
		return
	}
	r.voteFence = VoteFence{Index: m.Index, Term: m.LogTerm}
	r.leaderLogFence = r.voteFence
}

// sameTermLeaderLog reports whether m, a heartbeat of the leader of this
// member's current term carrying that leader's log end, may replace a
// fence of that same term which its log end is below. Such a fence lifts
// by the rules above only once the log reaches its Index or holds an entry
// of a later term; with an Index of unknown extent (MaxUint64) only the
// latter, which needs a new leader, which needs the votes the fence
// refuses to every log whose last term is the fence's. Where this member
// is needed for a majority (two voters, or a third down) and the leader of
// its term steps down (a transfer to the fenced member, which cannot
// campaign, failed; check-quorum), the group elects nobody for ever: sim
// seed 2900308 with --all-faults, sim-0 on voters [2 3], n2 fenced
// {MaxUint64 3} after a lying fsync lost a segment file, caught up in full
// from n3, leader of term 3; n3 handed leadership to n2 (the preferred
// replica), stepped down when the transfer failed, and n2 refused every
// vote of n3 (last term 3) for the 30 s of the liveness phase.
//
// Why the leader L of term T, the fence's term and this member's, may
// stand in for the old log, as it does for a lost-log fence: the fence's
// Term is at least this member's term when it lost the entries (its hard
// state's, node/replicas.go recoveryFence), which is at most its term now,
// T; so every acknowledgement it gave before the loss was given in a term
// of T or less. An entry of the old log of term T came from L, the only
// leader of term T, and L never drops its own entries: it is in L's log.
// An entry committed in a term before T is in L's log by Leader
// Completeness; the argument needs each vote that elected L to come from a
// member holding what it had acknowledged, and this member's vote for L,
// if any, came before its loss: since then its fence admitted only a log
// whose last term is past T, and a candidate of term T holds no entry of
// term T. Any other entry of the old log can only be committed by a leader
// of a later term, which counts acknowledgements of its own term, not
// those this member gave before the loss. So a candidate at least as up to
// date as L's log end holds every entry of the old log that counts, and
// the member, caught up to that log end, is one that kept its old log
// could be. A fence of an earlier term than the member's is not replaced:
// the member's log then lifts it by its leader's first entry of a later
// term.
func (r *raft) sameTermLeaderLog(m Message) bool {
	f := r.voteFence
	if f.Term != r.term || m.Term != r.term || m.From != r.lead {
		return false
	}
	return m.LogTerm < f.Term || (m.LogTerm == f.Term && m.Index < f.Index)
}

// bootstrapOnly reports whether a log whose last term is term holds only
// bootstrap entries, for a member under the lost-log fence that may take
// part in a first election (Config.LostLogBootstrapTerm): only once its
// term probe found the group new (see the term probe below).
func (r *raft) bootstrapOnly(term uint64) bool {
	return r.lostLogBootstrapTerm > 0 && term <= r.lostLogBootstrapTerm && r.voteFence.IsLostLog() &&
		r.probe.learned && !r.probe.replaced
}

// fenceAdmits reports whether the fence lets this member vote for a
// candidate whose log ends at (index, term).
func (r *raft) fenceAdmits(index, term uint64) bool {
	return !r.fenced() || r.voteFence.admits(index, term) || r.bootstrapOnly(term)
}

// fenceBlocksCampaign reports whether the fence keeps this member from
// campaigning.
func (r *raft) fenceBlocksCampaign() bool {
	return r.fenced() && !r.bootstrapOnly(r.log.lastTerm())
}

// leadLiftsLostLog: a member that wins an election under the lost-log
// fence holds the log of the leader it would have waited to hear from.
func (r *raft) leadLiftsLostLog() {
	if r.voteFence.IsLostLog() {
		r.voteFence = VoteFence{Index: r.log.lastIndex(), Term: r.log.lastTerm()}
		r.leaderLogFence = r.voteFence
	}
}

// SetVoteFence records that this member lost entries of the log f bounds:
// until the fence lifts, it votes only for candidates at least as up to date
// as f and does not campaign. A fence already set is merged with f. The
// caller must make the fence durable before it discards anything (and pass
// it back as Config.VoteFence after a restart).
func (rn *RawNode) SetVoteFence(f VoteFence) {
	if f.IsZero() {
		return
	}
	rn.raft.voteFence = rn.raft.voteFence.Merge(f)
}

// VoteFence returns the fence still in force, or the zero fence once the
// log no longer needs it (the caller may then drop its durable record of
// it, once its durable log also lifts it: VoteFence.LiftedBy).
func (rn *RawNode) VoteFence() VoteFence {
	rn.raft.fenced()
	return rn.raft.voteFence
}

// LeaderLogFence returns the fence a lost-log fence turned into on the
// first heartbeat that carried a leader's log end (zero until then). The
// application records it in place of its durable lost-log fence, so that
// the durable record can be dropped once the durable log lifts it.
func (rn *RawNode) LeaderLogFence() VoteFence { return rn.raft.leaderLogFence }

// The term probe closes the lost-log fence's stale-leader window. A member
// under the lost-log fence forgot its term, so a leader deposed without
// knowing it (cut off from the others, before check-quorum steps it down)
// could reach it first: the member would take that leader's stale term,
// its log end as the fence's target, and acknowledge its entries, letting
// it commit at indexes a later term already committed. Before it takes
// any leader's appends, heartbeats or snapshot, the member asks the voters
// for their current term (MsgTermQuery, on ticks, through the ordinary
// message path) until enough of them answered that every majority of the
// voters holds one of them (n - (n/2+1) + 1 of n voters, itself excluded):
// some answering member then holds every committed entry and is in a term
// at least that entry's. It moves to the largest term answered; a leader
// of an earlier term is then refused by the ordinary term rules, and the
// first leader it takes is of that term or later, which by Leader
// Completeness holds every entry committed before (Alagappan et al.,
// "Protocol-Aware Recovery", FAST 2018). The answers are kept in memory:
// a restart asks again.
//
// "The voters" are those of the newest membership in the member's log
// (probeVoters; newestconf.go), not its applied voters: the majorities the
// answers must meet are those that elect and commit, majorities of the
// newest membership in a leader's log, and a member's applied membership
// can lag its own log's newest by any number of changes. Until h-probe the
// probe counted the applied voters. A partition replica opened on a
// replaced disk holds the group's bootstrap entries (node/replicas.go:
// add-voter changes, committed, applied in its first Ready); ticked before
// that Ready it had no voters, asked nobody, took a stale leader's term
// and acknowledged its entries, which then committed over an entry a later
// term had committed (TestLostLogProbeCountsVotersInLog). Two changes
// behind was enough too: applied [1 2 3], [1 2 3 4 5] in the log, the
// answers of 2 and 3 ended member 1's probe, though {1, 4, 5} is a
// majority and 1's acknowledgements are forgotten
// (TestLostLogProbeTwoChangesBehind).
//
// Why this membership. The argument above needs the answers to meet every
// majority that can have committed an entry, the member itself aside: a
// majority of the membership deciding in the committing leader's log. The
// member's log is fixed while it probes (it takes nothing from a leader).
// When the newest membership N of its log is the group's, any
// n-(n/2+1)+1 voters of N other than the member meet every majority of
// N without it (the two sets, within N less the member, hold more than
// its n-1 voters). That is the case of a partition replica on a replaced
// disk: its log is the bootstrap entries, the group's only membership
// ever (a group that was moved opens its replica empty instead). Counting
// the applied voters is wrong wherever they differ from N. Not covered: a
// log whose newest membership is not the deciding one -- it misses a
// committed change, or ends in an uncommitted one (then a majority of the
// membership before it may also have committed; the member's own term,
// which learnProbedTerm keeps when it is larger, covers the
// acknowledgements it gave since its loss, not those before).
//
// A log with no membership at all. A replaced disk's replica of a group
// that was moved onto its broker opens empty (it is not an initial voter,
// so it writes no bootstrap entries). Until h-novoter it knew no voters,
// asked nobody, ended its probe at once, took a stale leader's term and
// acknowledged its entries, which then committed over an entry a later
// term had committed (TestLostLogProbeWithoutVotersInLog). Such a member
// now asks Config.ProbeVoters: the node gives the partition's replicas in
// the metadata it applied (node/replicas.go probeVotersOf, the target of a
// reassignment in progress added). When that list is the group's deciding
// membership (the group is settled and the metadata current), the
// argument above holds for it as for a log's. Not shown: metadata that
// lags a later membership change, or a reassignment in progress, where
// the deciding membership is one step of the walk and n-(n/2+1)+1 of the
// union need not meet its majorities (docs/architecture.md, "A replaced
// disk"). A controller voter started with --join still asks nobody
// (below).
//
// A member with the bootstrap exception (Config.LostLogBootstrapTerm: the
// controller replica on a fresh data directory) cannot tell a new group
// from a replaced voter by itself; the answers tell it. Each answer also
// carries the last term of the answering member's log. A member whose log
// holds an entry past the bootstrap term has heard from a leader (a
// leader's first entry is of its own term, and a log's last term never
// goes down), and every entry committed past the bootstrap entries is held
// by a majority, each of whose logs then ends past the bootstrap term. So:
//
//   - an answer whose last term is past the bootstrap term makes the member
//     a replaced voter for good (until a restart): the bootstrap exception
//     no longer applies, and it learns the term as above (from enough
//     voters that one holds every committed entry), then catches up from a
//     leader like any lost-log member;
//   - answers from enough voters that, with the member itself, they make a
//     majority, all with logs of bootstrap entries only, mean no entry past
//     bootstrap was committed: a majority that held one would share a
//     member with them, the member itself aside, whose old log is gone; a
//     majority whose only other members are such answerers is the case
//     below. The group is new, and the member may vote and campaign under
//     the exception without waiting for the other voters, so a new group
//     with a voter still down elects (with the full probe's rule it waited
//     for that voter forever). It decides so only an election timeout
//     after it started asking, so that every voter it can reach has had
//     time to answer: one whose log went past the bootstrap term, if
//     reachable, is heard before the decision.
//
// Until one of the two holds, the member neither votes nor campaigns under
// the exception: a replaced voter must not help elect, nor win with, a log
// of bootstrap entries only. The answer is the peer's log's last term, not
// its commit index: a member that acknowledged a committed entry may not
// know yet that it was committed. The one case this does not cover is a
// replaced voter that reaches, within the election timeout, only voters
// that never heard from a leader (down since the group was created) while
// those holding the committed entries are down or cut off; and a member
// that knows no voters yet (a broker started with --join, which learns the
// configuration from the leader's snapshot) cannot ask anyone (docs/
// architecture.md, "A replaced disk").

// termProbe is the state of a lost-log member's term probe.
type termProbe struct {
	learned bool
	// replaced: some voter's log went past the bootstrap term, so this
	// member is not in a new group and the bootstrap exception is off.
	replaced bool
	// answers are the voters that answered and their terms, in arrival
	// order (a slice, not a map: nothing here depends on map order).
	answers []probeAnswer
	// wait counts the ticks until the next round of queries.
	wait int
	// elapsed counts the ticks since the probe started.
	elapsed int
}

// probeAnswer is voter id's current term and its log's last term.
type probeAnswer struct{ id, term, lastTerm uint64 }

// awaitingTerm reports whether this member is under the lost-log fence
// and has not yet learned the group's term.
func (r *raft) awaitingTerm() bool {
	return r.voteFence.IsLostLog() && !r.probe.learned && r.state != StateLeader
}

// probeVoters are the voters the probe counts: those of the newest
// membership in the log (newestconf.go), the one whose majorities elect
// and commit, not the applied voters, which may lag it by any number of
// changes (a replaced replica's bootstrap entries not yet applied: no
// voters at all; or a restart with the applied index before changes its
// log holds). ok is false when the log cannot be read: the probe then
// waits, it cannot tell whom it must hear from.
func (r *raft) probeVoters() (voters []uint64, ok bool) {
	cs, err := r.newestConf()
	if err != nil {
		return nil, false
	}
	if len(cs.Voters) == 0 {
		// No membership in the log at all: a replaced disk's replica of
		// a group it was moved into. Ask the voters the application
		// gave (Config.ProbeVoters: the group's replicas in its
		// metadata), not nobody.
		return r.probeVotersGiven, true
	}
	return sortedUnique(cs.Voters), true
}

// probeNeeds is how many of voters other than this member must answer:
// enough that every majority of voters includes one of them.
func probeNeeds(voters []uint64) int {
	n := len(voters)
	return n - (n/2 + 1) + 1
}

// tickTermProbe queries, once a heartbeat interval, the voters that have
// not answered yet.
func (r *raft) tickTermProbe() {
	if !r.awaitingTerm() {
		return
	}
	r.probe.elapsed++
	voters, ok := r.probeVoters()
	if !ok {
		return
	}
	if r.probeFindsNewGroup(voters) {
		r.learnProbedTerm()
		return
	}
	if r.probe.wait > 0 {
		r.probe.wait--
		return
	}
	r.probe.wait = r.heartbeatTicks
	others := 0
	for _, id := range voters {
		if id == r.id {
			continue
		}
		others++
		if !r.probeAnswered(id) {
			r.send(Message{To: id, Type: MsgTermQuery})
		}
	}
	if others == 0 || others < probeNeeds(voters) {
		// No other voter that could hold a committed entry (a group of
		// one), or no configuration known yet (a broker joining the
		// controller group learns it from the leader's snapshot): there
		// is nobody to ask.
		r.probe.learned = true
	}
}

func (r *raft) probeAnswered(id uint64) bool {
	for _, a := range r.probe.answers {
		if a.id == id {
			return true
		}
	}
	return false
}

// stepTermProbe answers term queries, takes answers, and drops a leader's
// messages while the term is unknown. It reports whether m was handled.
// It runs before the term rules: a query or answer carries the sender's
// term as information, and must not move the receiver's.
func (r *raft) stepTermProbe(m Message) bool {
	switch m.Type {
	case MsgTermQuery:
		r.send(Message{To: m.From, Type: MsgTermQueryResp, Index: r.log.lastIndex(), LogTerm: r.log.lastTerm()})
		return true
	case MsgTermQueryResp:
		r.takeProbeAnswer(probeAnswer{id: m.From, term: m.Term, lastTerm: m.LogTerm})
		return true
	case MsgApp, MsgHeartbeat, MsgSnap:
		// Unanswered: the leader sends heartbeats again, and the first
		// after the probe gets the LostEntries refusal that starts the
		// fence's lifting.
		return r.awaitingTerm()
	}
	return false
}

// takeProbeAnswer records a voter's answer; once enough voters answered,
// the member moves to the largest term.
func (r *raft) takeProbeAnswer(a probeAnswer) {
	if a.id == r.id || !r.voteFence.IsLostLog() {
		return
	}
	voters, ok := r.probeVoters()
	if !ok {
		return
	}
	if _, isVoter := slices.BinarySearch(voters, a.id); !isVoter {
		return
	}
	if a.lastTerm > r.lostLogBootstrapTerm {
		// Even once the probe is over: a late answer can only turn the
		// exception off, never on.
		r.probe.replaced = true
	}
	if !r.awaitingTerm() || r.probeAnswered(a.id) {
		return
	}
	r.probe.answers = append(r.probe.answers, a)
	if len(r.probe.answers) >= probeNeeds(voters) {
		r.learnProbedTerm()
	}
}

// learnProbedTerm ends the probe: the member moves to the largest term
// answered.
func (r *raft) learnProbedTerm() {
	top := uint64(0)
	for _, a := range r.probe.answers {
		top = max(top, a.term)
	}
	r.probe.learned, r.probe.answers = true, nil
	if top > r.term {
		r.becomeFollower(top, 0)
	}
}

// probeFindsNewGroup reports whether the answers show a new group to a
// member with the bootstrap exception: an election timeout after it
// started asking, a majority of the voters with this member, none of
// whose logs went past the bootstrap term.
func (r *raft) probeFindsNewGroup(voters []uint64) bool {
	if r.lostLogBootstrapTerm == 0 || r.probe.replaced || r.probe.elapsed <= r.electionTicks {
		return false
	}
	return len(r.probe.answers)+1 >= len(voters)/2+1
}

// TermProbeVoters returns the voters a lost-log member's term probe asks
// (probeVoters): those of the newest membership in its log or, when its
// log holds none, Config.ProbeVoters. Nil when the log cannot be read.
func (rn *RawNode) TermProbeVoters() []uint64 {
	voters, _ := rn.raft.probeVoters()
	return slices.Clone(voters)
}
