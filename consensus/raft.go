package consensus

import (
	"errors"
	"math/rand"
	"slices"

	"github.com/floe-broker/floe/internal/plant"
)

// raft is one member of one group: its role, term, log and, on a leader,
// what it knows of every other member. It does no I/O: outgoing messages
// collect in msgs and msgsAfterPersist and leave through a Ready.
type raft struct {
	id uint64
	// voteFence, when set, bounds the log this member held before it lost
	// entries (see fence.go): until it lifts, the member votes only for
	// candidates at least as up to date as it, and does not campaign.
	voteFence VoteFence
	// leaderLogFence is what a lost-log fence became (fence.go), zero if none.
	leaderLogFence VoteFence
	// probe is the lost-log fence's term probe (fence.go).
	probe termProbe
	// lostLogBootstrapTerm: Config.LostLogBootstrapTerm.
	lostLogBootstrapTerm uint64
	// probeVotersGiven: Config.ProbeVoters, sorted.
	probeVotersGiven []uint64
	// term and vote are the persistent state; vote is 0 or the member we
	// voted for in term.
	term uint64
	vote uint64

	log   *raftLog
	trk   tracker
	state StateType
	// lead is the leader of term as far as we know, 0 if unknown.
	lead uint64
	// leadTransferee is the member a leadership transfer is handing to.
	leadTransferee uint64
	// timeoutNowSent: as leader of term, we told a member to campaign at
	// once (MsgTimeoutNow). Its campaign overrides the followers' leases,
	// and the message may arrive at any time in this term, so we hold no
	// read lease for the rest of the term (transfer.go).
	timeoutNowSent bool
	// quietTicks counts down the ticks after a restart during which this
	// member neither grants a vote in a later term nor campaigns: before the
	// restart it may have heard from a leader and promised it exactly that
	// (see inLease).
	quietTicks int
	// pendingConfIndex: no new configuration change is accepted until
	// the entry at this index is applied (one change at a time).
	pendingConfIndex uint64
	// uncommittedBytes is the data a leader appended and has not yet seen
	// committed and applied (for MaxUncommittedEntriesBytes).
	uncommittedBytes uint64

	readOnly readOnly
	// pendingReadIndex holds reads asked for before this leader committed
	// an entry of its own term (it cannot know the commit index until then).
	pendingReadIndex []readRequest
	readStates       []ReadState

	// ticks counts every Tick this member has seen since it started (not
	// persisted): the clock of the leader's heard/caught-up notes
	// (heard.go), for monitoring only.
	ticks uint64
	// leadHeardAt is the tick this member last heard from the leader it
	// follows (lead), for LeadHeardTicksAgo: a follower, and above all a
	// learner, which never campaigns, keeps lead until it hears of a later
	// term, however long that leader has been silent.
	leadHeardAt uint64

	electionElapsedTicks  int
	heartbeatElapsedTicks int
	electionTicks         int
	heartbeatTicks        int
	// randomizedElectionTicks is drawn from [electionTicks, 2*electionTicks)
	// each time the timer is reset.
	randomizedElectionTicks int

	checkQuorum         bool
	preVote             bool
	maxMsgBytes         uint64
	maxUncommittedBytes uint64
	maxInflightMsgs     int
	maxInflightBytes    uint64
	rand                *rand.Rand
	counters            *RoleCounters // never nil (Config.Counters or a private one)
	// sendBudget holds the members whose entry traffic from this leader
	// is rate-limited (throttle.go), with the bytes each may still be
	// sent; a member not in it is not limited.
	sendBudget map[uint64]int64

	// msgs may be sent at once; msgsAfterPersist only once the state they
	// reveal (term, vote, log) is durable.
	msgs             []Message
	msgsAfterPersist []Message
}

const defaultMaxInflightMsgs = 256

func validateConfig(c *Config) error {
	switch {
	case c.ID == 0:
		return errors.New("consensus: config: ID must not be 0")
	case c.HeartbeatTicks <= 0:
		return errors.New("consensus: config: HeartbeatTicks must be positive")
	case c.ElectionTicks <= c.HeartbeatTicks:
		return errors.New("consensus: config: ElectionTicks must exceed HeartbeatTicks")
	case c.Storage == nil:
		return errors.New("consensus: config: Storage is required")
	case c.Rand == nil:
		return errors.New("consensus: config: Rand is required")
	case c.MaxInflightMsgs < 0:
		return errors.New("consensus: config: MaxInflightMsgs must not be negative")
	case c.ElectionDelayTicks < 0:
		return errors.New("consensus: config: ElectionDelayTicks must not be negative")
	}
	return nil
}

func newRaft(c Config) (*raft, error) {
	if err := validateConfig(&c); err != nil {
		return nil, err
	}
	hs, cs, err := c.Storage.InitialState()
	if err != nil {
		return nil, err
	}
	log, err := newRaftLog(c.Storage)
	if err != nil {
		return nil, err
	}
	r := &raft{
		id:                   c.ID,
		log:                  log,
		trk:                  newTracker(cs),
		electionTicks:        c.ElectionTicks,
		heartbeatTicks:       c.HeartbeatTicks,
		checkQuorum:          c.CheckQuorum,
		preVote:              c.PreVote,
		maxMsgBytes:          c.MaxSizePerMsg,
		maxUncommittedBytes:  c.MaxUncommittedEntriesBytes,
		maxInflightMsgs:      c.MaxInflightMsgs,
		maxInflightBytes:     c.MaxInflightBytes,
		rand:                 c.Rand,
		voteFence:            c.VoteFence,
		lostLogBootstrapTerm: c.LostLogBootstrapTerm,
		probeVotersGiven:     sortedUnique(c.ProbeVoters),
		readOnly:             newReadOnly(),
		counters:             c.Counters,
	}
	if r.counters == nil {
		r.counters = &RoleCounters{}
	}
	if r.maxInflightMsgs == 0 {
		r.maxInflightMsgs = defaultMaxInflightMsgs
	}
	if c.MaxCommittedBytesPerReady > 0 {
		log.maxApplyBytes = c.MaxCommittedBytesPerReady
	}
	if err := r.loadState(hs, c.Applied); err != nil {
		return nil, err
	}
	r.becomeFollower(r.term, 0)
	if r.checkQuorum && r.term > 0 && !c.Fresh {
		r.quietTicks = r.electionTicks
	}
	// A negative elapsed count: the first timeout fires that much later.
	r.electionElapsedTicks = -c.ElectionDelayTicks
	return r, nil
}

// loadState restores the persisted term, vote and commit index and the
// application's applied index.
func (r *raft) loadState(hs HardState, applied uint64) error {
	r.term, r.vote = hs.Term, hs.Vote
	last := r.log.lastIndex()
	if applied > last {
		return errors.New("consensus: config: Applied is past the last log index")
	}
	// The commit index is only a hint: an entry the application applied
	// was committed, and we can never know more than we hold.
	r.log.committed = min(max(hs.Commit, applied, r.log.committed), last)
	r.log.applied = max(applied, r.log.applied)
	return nil
}

func (r *raft) hardState() HardState {
	return HardState{Term: r.term, Vote: r.vote, Commit: r.log.committed}
}

func (r *raft) softState() SoftState { return SoftState{Lead: r.lead, RaftState: r.state} }

// promotable says whether this member may campaign: it must be a voter,
// of its applied membership or of the newest membership in its log
// (newestconf.go). A learner whose log holds the uncommitted change that
// promotes it is one: the group's decisions already count its vote, and
// its log may be the only one a majority of the newest membership accepts
// (sim seed 1071630: see votesInNewestConf).
func (r *raft) promotable() bool { return r.trk.isVoter(r.id) || r.votesInNewestConf() }

// votesInNewestConf reports whether this member, not a voter of its
// applied membership, is one in the newest membership of its log. Only a
// log with entries past the applied index can hold such a change.
//
// Why it is needed: a candidate wins only with a majority of the newest
// membership in its log (newestconf.go). When that membership adds
// voter X, X's log may be the only one that majority accepts: in seed
// 1071630 (voters [1 3 5], learner 4, 5 leading) 5 proposed "add voter 4",
// was re-elected in a new term with the votes of 1 and 4, wrote its first
// entry of that term to 4 only and lost it in a crash before its fsync; 3
// had lost entries (a lying fsync) and, fenced, admitted only a log of a
// later term than its own. 4 alone held such a log: 5 and 1 were refused
// by 4 (a newer log) and 3 (its fence), so neither had a majority of
// [1 3 4 5], and 4, a learner of its applied membership, never campaigned.
// The group had no leader for good. Campaigning as a voter of the newest
// membership is what the Raft dissertation's rule (a server uses the
// latest configuration in its log) allows; once its first entry is
// committed it applies the change and is a voter of both.
func (r *raft) votesInNewestConf() bool {
	if r.log.lastIndex() <= r.log.applied {
		return false
	}
	cs, err := r.newestConf()
	return err == nil && slices.Contains(cs.Voters, r.id)
}

// send stamps m with our id (and term, except on vote messages whose term
// the caller chose) and queues it by when it may leave.
func (r *raft) send(m Message) {
	m.From = r.id
	switch m.Type {
	case MsgVote, MsgVoteResp, MsgPreVote, MsgPreVoteResp:
	default:
		m.Term = r.term
	}
	if sendsAfterPersist(m.Type) {
		r.msgsAfterPersist = append(r.msgsAfterPersist, m)
	} else {
		r.msgs = append(r.msgs, m)
	}
}

// sendsAfterPersist lists the messages that reveal durable state: a vote
// request (our vote for ourselves), vote grants, and acknowledgements of
// our log. They wait for the Ready's persist. A leader's appends and
// heartbeats need not: the leader counts its own log only once durable.
func sendsAfterPersist(t MessageType) bool {
	switch t {
	case MsgVote, MsgVoteResp, MsgPreVoteResp, MsgAppResp, MsgHeartbeatResp:
		return true
	}
	return false
}

// reset prepares for a new role in term.
func (r *raft) reset(term uint64) {
	if r.term != term {
		r.term = term
		r.vote = 0
	}
	r.lead = 0
	r.electionElapsedTicks = 0
	r.heartbeatElapsedTicks = 0
	r.resetRandomizedElectionTimeout()
	r.leadTransferee = 0
	r.timeoutNowSent = false
	r.trk.resetVotes()
	r.resetProgress()
	r.pendingConfIndex = 0
	r.uncommittedBytes = 0
	r.readOnly = newReadOnly()
	r.pendingReadIndex = nil
}

// resetProgress forgets what we knew of the other members' logs.
func (r *raft) resetProgress() {
	next := r.log.lastIndex() + 1
	prs := make(map[uint64]*progress, len(r.trk.voters)+len(r.trk.learners))
	for _, id := range r.trk.ids() {
		pr := &progress{
			next:      next,
			inflights: newInflights(r.maxInflightMsgs, r.maxInflightBytes),
			isLearner: r.trk.isLearner(id),
		}
		if id == r.id {
			pr.match = r.log.persistedIndex()
			pr.next = max(pr.next, pr.match+1)
		}
		prs[id] = pr
	}
	r.trk.progress = prs
}

func (r *raft) resetRandomizedElectionTimeout() {
	r.randomizedElectionTicks = r.electionTicks + r.rand.Intn(r.electionTicks)
}

func (r *raft) becomeFollower(term, lead uint64) {
	r.forgetLogConf()
	r.reset(term)
	r.lead = lead
	if lead != 0 {
		r.leadHeardAt = r.ticks // a message from lead made us its follower
	}
	r.state = StateFollower
}

func (r *raft) becomeCandidate() {
	r.reset(r.term + 1)
	r.vote = r.id
	r.state = StateCandidate
}

// becomePreCandidate starts a pre-election: term and vote stay as they are,
// so a member that cannot win disturbs nobody.
func (r *raft) becomePreCandidate() {
	r.trk.resetVotes()
	r.lead = 0
	r.state = StatePreCandidate
}

func (r *raft) becomeLeader() {
	r.reset(r.term)
	r.lead = r.id
	r.state = StateLeader
	r.leadLiftsLostLog()
	if pr := r.trk.progress[r.id]; pr != nil {
		pr.becomeReplicate()
		pr.recentActive = true
	}
	// The empty entry commits everything before it: a leader never counts
	// replicas of an older term's entries (Figure 8 of the Raft paper).
	r.appendEntries(Entry{Type: EntryNormal})
	// No configuration change until this term's first entry is applied,
	// so a change never overlaps one from an earlier term.
	r.pendingConfIndex = r.log.lastIndex()
	if plant.Enabled(plant.ConfBeforeOwnTerm) {
		r.pendingConfIndex = 0
	}
}

// tick advances the role's timer by one tick.
func (r *raft) tick() {
	r.ticks++
	r.tickTermProbe()
	if r.quietTicks > 0 {
		r.quietTicks--
	}
	if r.state == StateLeader {
		r.tickHeartbeat()
		return
	}
	r.tickElection()
}

func (r *raft) tickElection() {
	r.electionElapsedTicks++
	// The timeout first: promotable may read the log's unapplied tail.
	if r.electionElapsedTicks >= r.randomizedElectionTicks && r.promotable() {
		r.electionElapsedTicks = 0
		if r.hup(r.defaultCampaign()) {
			r.counters.CampaignsTimeout++
		}
	}
}

func (r *raft) tickHeartbeat() {
	r.heartbeatElapsedTicks++
	r.electionElapsedTicks++
	r.tickSnapshots()
	if r.electionElapsedTicks >= r.electionTicks {
		r.electionElapsedTicks = 0
		if r.checkQuorum && !r.checkQuorumActive() {
			r.counters.StepDownsCheckQuorum++
			r.becomeFollower(r.term, 0)
			return
		}
		if r.timeoutNowSent {
			// A transfer that did not finish within an election timeout
			// failed, but the MsgTimeoutNow may still arrive and start
			// an election that ignores leases: without a lease for the
			// rest of the term, we step down and let the group elect
			// again (transfer.go).
			r.counters.StepDownsTransferTimeout++
			r.becomeFollower(r.term, 0)
			return
		}
		// A transfer that did not finish within an election timeout failed.
		r.leadTransferee = 0
	}
	if r.heartbeatElapsedTicks >= r.heartbeatTicks {
		r.heartbeatElapsedTicks = 0
		r.bcastHeartbeat(nil)
	}
}

// checkQuorumActive reports whether a majority was heard from since the
// last check, and starts the next check period.
func (r *raft) checkQuorumActive() bool {
	active := r.trk.quorumActive()
	for _, id := range r.trk.ids() {
		if id != r.id {
			r.trk.progress[id].recentActive = false
		}
	}
	return active
}

// Step handles one message from another member.
func (r *raft) step(m Message) {
	if r.stepTermProbe(m) {
		return
	}
	switch {
	case m.Term == 0:
		// No term to compare: a rejected pre-vote from a member at term 0.
	case m.Term > r.term:
		if !r.stepHigherTerm(m) {
			return
		}
	case m.Term < r.term:
		r.stepLowerTerm(m)
		return
	}
	switch m.Type {
	case MsgVote, MsgPreVote:
		r.handleVoteRequest(m)
		return
	}
	switch r.state {
	case StateLeader:
		r.stepLeader(m)
	case StateCandidate, StatePreCandidate:
		r.stepCandidate(m)
	default:
		r.stepFollower(m)
	}
}

// stepHigherTerm handles a message from a later term. It reports whether
// the message should be processed further.
func (r *raft) stepHigherTerm(m Message) bool {
	if m.Type == MsgVote || m.Type == MsgPreVote {
		forced := string(m.Context) == campaignTransferContext
		if !forced && r.inLease() {
			return false
		}
	}
	if r.state == StateLeader && m.Type != MsgPreVote && (m.Type != MsgPreVoteResp || m.Reject) {
		r.counters.StepDownsHigherTerm++
	}
	switch {
	case m.Type == MsgPreVote:
		// A pre-vote never changes our term.
	case m.Type == MsgPreVoteResp && !m.Reject:
		// A grant for the term our pre-vote proposed; the election proper
		// will move the term.
	case m.Type == MsgApp || m.Type == MsgHeartbeat || m.Type == MsgSnap:
		r.becomeFollower(m.Term, m.From)
	default:
		r.becomeFollower(m.Term, 0)
	}
	return true
}

// inLease reports whether this member ignores campaigns for a later term.
// With check-quorum, a member that heard from a leader within the election
// timeout ignores them: the leader is alive. Read leases rest on this
// promise (an acknowledged heartbeat means no vote in a later term for an
// election timeout), so a member keeps it across a restart, when it no
// longer knows whom it heard from: for an election timeout after it starts
// it ignores every campaign. Only a leader's own transfer (MsgTimeoutNow)
// overrides the promise, and that leader gives up its lease for it.
func (r *raft) inLease() bool {
	if !r.checkQuorum {
		return false
	}
	return r.quietTicks > 0 || (r.lead != 0 && r.electionElapsedTicks < r.electionTicks)
}

// stepLowerTerm answers a message from an earlier term, or ignores it.
func (r *raft) stepLowerTerm(m Message) {
	switch {
	case (r.checkQuorum || r.preVote) && (m.Type == MsgHeartbeat || m.Type == MsgApp):
		// A stale leader (perhaps just healed from a partition): tell it
		// our term so it steps down. Without this, with pre-vote or
		// check-quorum, it could keep a member from ever campaigning.
		r.send(Message{To: m.From, Type: MsgAppResp})
	case m.Type == MsgPreVote:
		r.send(Message{To: m.From, Term: r.term, Type: MsgPreVoteResp, Reject: true})
	}
}
