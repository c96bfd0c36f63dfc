package consensus

import (
	"errors"
	"math/rand"
)

// EntryType says what an entry's Data is. Raft interprets only
// EntryConfChange; every other value is application data, replicated and
// committed like EntryNormal. Applications number their own kinds from
// EntryAppFirst.
type EntryType uint8

const (
	EntryNormal     EntryType = 0 // opaque data; empty Data is the leader's no-op
	EntryConfChange EntryType = 1 // Data is an encoded ConfChange
	EntryAppFirst   EntryType = 16
)

// Entry is one log entry. Invariant: in any log, Index is dense (each entry's
// Index is the previous one's plus one) and Term never decreases.
type Entry struct {
	Term  uint64
	Index uint64
	Type  EntryType
	Data  []byte
}

// HardState is what must be durable before a node answers a vote or an
// append: its current term, its vote in that term, and a commit index (the
// commit index is an optimisation on restart; losing it is safe).
type HardState struct {
	Term   uint64
	Vote   uint64
	Commit uint64
}

// ConfState is a group's membership: voters and learners, by node id, sorted.
type ConfState struct {
	Voters   []uint64
	Learners []uint64
}

// SnapshotMeta describes a snapshot: the log up to and including Index (at
// Term) is replaced by it, and ConfState is the membership at Index.
type SnapshotMeta struct {
	Index     uint64
	Term      uint64
	ConfState ConfState
}

// Snapshot is a snapshot's metadata and the application's opaque state.
type Snapshot struct {
	Meta SnapshotMeta
	Data []byte
}

// IsEmpty says whether s carries nothing (Index 0).
func (s Snapshot) IsEmpty() bool { return s.Meta.Index == 0 }

// ConfChangeType is the single-server membership change kind.
type ConfChangeType uint8

const (
	ConfAddVoter   ConfChangeType = 1 // add as voter, or promote a learner
	ConfAddLearner ConfChangeType = 2 // add as non-voting learner
	ConfRemove     ConfChangeType = 3 // remove a voter or learner
)

// ConfChange changes membership by one server at a time.
type ConfChange struct {
	Type   ConfChangeType
	NodeID uint64
	// Context is opaque application data carried with the change (for
	// example the new member's address).
	Context []byte
}

// MessageType enumerates Raft messages.
type MessageType uint8

const (
	MsgApp MessageType = iota + 1
	MsgAppResp
	MsgVote
	MsgVoteResp
	MsgPreVote
	MsgPreVoteResp
	MsgHeartbeat
	MsgHeartbeatResp
	MsgSnap
	MsgSnapStatus
	MsgTimeoutNow
	MsgTransferLeader
	MsgReadIndex
	MsgReadIndexResp
	MsgProp
	// MsgTermQuery and MsgTermQueryResp: a member under the lost-log
	// fence asks the others for their term (fence.go).
	MsgTermQuery
	MsgTermQueryResp
)

// Message is one Raft message between members of the same group. Which
// fields are meaningful depends on Type, as in the Raft paper and etcd raft.
type Message struct {
	Type       MessageType
	To         uint64
	From       uint64
	Term       uint64
	LogTerm    uint64
	Index      uint64
	Entries    []Entry
	Commit     uint64
	Snapshot   *Snapshot
	Reject     bool
	RejectHint uint64
	Context    []byte
}

// Storage is the stable log a RawNode reads. node implements it over
// logstore; tests implement it in memory.
//
// Contract (each method reflects what was persisted and acknowledged with
// Advance; entries still in a Ready not yet advanced are not expected here):
//   - InitialState returns the saved HardState and the ConfState of the
//     latest snapshot or configuration.
//   - Entries returns entries in [lo, hi), at most maxBytes of Data in all
//     but always at least one entry if any is in range. It returns
//     ErrCompacted if lo <= the snapshot index, ErrUnavailable if hi-1 >
//     LastIndex.
//   - Term returns the term of entry i. For i equal to the snapshot index it
//     returns the snapshot's term; below it ErrCompacted; above LastIndex
//     ErrUnavailable.
//   - FirstIndex is the index of the first entry that may be read
//     (snapshot index + 1); LastIndex the last one (snapshot index if empty).
//     Neither may fail once InitialState has succeeded (an implementation
//     keeps them in memory).
//   - Snapshot returns the most recent snapshot. ErrSnapshotTemporarilyUnavailable
//     means "not ready yet, ask again later".
type Storage interface {
	InitialState() (HardState, ConfState, error)
	Entries(lo, hi, maxBytes uint64) ([]Entry, error)
	Term(i uint64) (uint64, error)
	FirstIndex() (uint64, error)
	LastIndex() (uint64, error)
	Snapshot() (Snapshot, error)
}

// TypeScanner is a Storage that can list entries' types without reading
// their data. Raft asks it, when the Storage implements it, where only the
// types matter: a restarted replica's first campaign looks for a
// configuration change among every committed entry not yet applied (all
// of them after a restart), which through Entries read and copied the
// whole log once more before the replay read it again.
type TypeScanner interface {
	// EntryTypes returns the type of each entry in [lo, hi), in order,
	// with the errors of Entries (ErrCompacted, ErrUnavailable).
	EntryTypes(lo, hi uint64) ([]EntryType, error)
}

// Storage errors.
var (
	ErrCompacted                      = errors.New("consensus: requested index is compacted")
	ErrUnavailable                    = errors.New("consensus: requested entry is unavailable")
	ErrSnapshotTemporarilyUnavailable = errors.New("consensus: snapshot temporarily unavailable")
)

// Proposal errors.
var (
	ErrNotLeader        = errors.New("consensus: not the leader")
	ErrProposalDropped  = errors.New("consensus: proposal dropped")
	ErrStepLocalMsg     = errors.New("consensus: cannot step a local message")
	ErrStepPeerNotFound = errors.New("consensus: peer not found")
)

// Config configures one group's RawNode.
type Config struct {
	// ID is this node's id in the group; never 0.
	ID uint64
	// ElectionTicks is the minimum election timeout in ticks; each election
	// timeout is drawn uniformly from [ElectionTicks, 2*ElectionTicks) with
	// Rand. HeartbeatTicks must be smaller.
	ElectionTicks  int
	HeartbeatTicks int
	Storage        Storage
	// Applied is the last index the application has applied (0 on a fresh
	// group); entries at or below it are never returned for applying again.
	Applied uint64
	// Flow control: the byte budget (entry data) of one MsgApp, and caps
	// on MsgApps in flight to one follower, by count and by bytes. An MsgApp
	// always carries at least one entry; MaxSizePerMsg 0 means exactly one.
	// MaxInflightMsgs 0 means 256; MaxInflightBytes 0 means no byte cap.
	MaxSizePerMsg    uint64
	MaxInflightMsgs  int
	MaxInflightBytes uint64
	// MaxUncommittedEntriesBytes caps what a leader accepts before dropping
	// proposals (ErrProposalDropped); 0 means no cap.
	MaxUncommittedEntriesBytes uint64
	// MaxCommittedBytesPerReady caps the entry data of one Ready's
	// CommittedEntries (at least one entry is always handed out), so that
	// a member far behind its commit index applies in bounded steps; 0
	// means no cap.
	MaxCommittedBytesPerReady uint64
	CheckQuorum               bool
	PreVote                   bool
	// Rand is the only source of randomness. Required.
	Rand *rand.Rand
	// VoteFence restarts a member that lost entries of its log (read back
	// from the application's durable record of it): see fence.go and
	// RawNode.SetVoteFence. Zero: none.
	VoteFence VoteFence
	// LostLogBootstrapTerm, when set, lets a member under the lost-log
	// fence (LostLog) take part in its group's first election: it grants
	// a vote to a candidate whose last term is at most this (a log that
	// holds only the group's bootstrap entries), and campaigns while its
	// own log is such a log (fence.go). 0: the lost-log fence admits no
	// candidate and forbids campaigning.
	LostLogBootstrapTerm uint64
	// ProbeVoters are the voters the term probe of a member under the
	// lost-log fence asks when its log holds no membership at all (a
	// replaced disk's replica of a group it was moved into opens empty):
	// the application's best knowledge of the group's voters, such as
	// the replicas its metadata lists (fence.go, probeVoters). Ignored
	// once the log holds a membership. Nil: such a member asks nobody.
	ProbeVoters []uint64
	// Fresh says this member cannot have acknowledged any leader before
	// this start (its group was just bootstrapped and has held no
	// election). Otherwise a member started with CheckQuorum at a term
	// above 0 neither grants a vote in a later term nor campaigns for an
	// election timeout after it starts: it may have promised a leader, in
	// an acknowledgement before a restart, not to (read leases rest on
	// that promise). A member at term 0 is known to be fresh.
	Fresh bool
	// ElectionDelayTicks holds back this member's first election timeout
	// by that many ticks beyond the usual one. Only the first: whatever
	// resets the timer (a vote granted, a leader heard, a role change)
	// drops what is left of it. Members of a new group given different
	// delays campaign in that order, which is how the application names
	// who should lead first without any other member being unable to
	// lead. It changes no safety property, only when elections start.
	// 0: none.
	ElectionDelayTicks int
	// Counters, when set, counts this member's role changes by cause
	// (for monitoring; several groups of a node may share one). Nothing
	// in Raft reads it.
	Counters *RoleCounters
}

// RoleCounters counts why members start elections and why leaders step
// down: what a "leader changed" is made of, for monitoring.
type RoleCounters struct {
	// Campaigns started: after an election timeout (pre-vote or vote),
	// and on a leader's transfer (MsgTimeoutNow).
	CampaignsTimeout, CampaignsTransfer uint64
	// Leaders that stepped down: check-quorum found no majority heard
	// from within an election timeout; a message of a later term; a
	// transfer that did not finish within an election timeout.
	StepDownsCheckQuorum, StepDownsHigherTerm, StepDownsTransferTimeout uint64
}

// StateType is a node's role.
type StateType uint8

const (
	StateFollower StateType = iota
	StateCandidate
	StateLeader
	StatePreCandidate
)

// SoftState is volatile state worth reporting: the known leader and our role.
type SoftState struct {
	Lead      uint64
	RaftState StateType
}

// ReadState answers a ReadIndex request: once the application has applied
// Index, a read tagged RequestCtx is linearizable.
type ReadState struct {
	Index      uint64
	RequestCtx []byte
}

// Ready is the work a RawNode hands its caller, in order of obligation:
//
//  1. Persist HardState (if not empty), then Entries (an entry whose index is
//     at or below the stored last index replaces that suffix), and install
//     Snapshot (if not empty). Writes may be issued at once; durability
//     comes with the caller's sync.
//  2. Send Messages at any time (a leader's appends and heartbeats go out
//     in parallel with its own fsync; pre-votes, snapshots, MsgTimeoutNow
//     and ReadIndex traffic reveal nothing persisted).
//  3. Once step 1 is durable: send MessagesAfterPersist (vote requests and
//     grants, append and heartbeat acknowledgements: everything that
//     reveals the term, vote or log), apply CommittedEntries (applying an
//     EntryConfChange includes calling ApplyConfChange), then call Advance.
//
// A RawNode hands out no new Ready until the previous one is advanced; in
// between, Step, Tick and Propose may be called, and their effects wait for
// the next Ready. A leader counts its own log towards the commit quorum
// only once Advance reports it durable.
type Ready struct {
	SoftState            *SoftState // nil if unchanged
	HardState            HardState  // zero if unchanged
	Entries              []Entry
	Snapshot             Snapshot
	Messages             []Message
	MessagesAfterPersist []Message
	CommittedEntries     []Entry
	ReadStates           []ReadState
	// MustSync says whether step 1 needs an fsync before step 3.
	MustSync bool
}

// The RawNode method set the node relies on (implemented in rawnode.go):
//
//	NewRawNode(cfg Config) (*RawNode, error)
//	(*RawNode).Tick()
//	(*RawNode).Campaign()   // start an election now (tests, bootstrap)
//	(*RawNode).Step(m Message) error
//	(*RawNode).Propose(typ EntryType, data []byte) (index, term uint64, err error)
//	    appends at once on a leader and returns the entry's index and term;
//	    ErrNotLeader on a follower (no forwarding), ErrProposalDropped when
//	    flow control or a leader transfer refuses it.
//	(*RawNode).ProposeConfChange(cc ConfChange) (index, term uint64, err error)
//	(*RawNode).TransferLeader(to uint64)
//	(*RawNode).ReadIndex(ctx []byte)
//	(*RawNode).HasReady() bool
//	(*RawNode).Ready() Ready
//	(*RawNode).Advance(rd Ready)
//	(*RawNode).Status() Status // id, term, lead, role, commit, applied, last index,
//	    membership, and on a leader each member's progress (status.go)
//	(*RawNode).ReportUnreachable(id uint64)
//	(*RawNode).ReportSnapshot(id uint64, ok bool)
//	(*RawNode).ApplyConfChange(cc ConfChange) ConfState // after applying a committed EntryConfChange
//
// Messages cross the network encoded by (Message).Marshal and
// UnmarshalMessage; Host (host.go) runs many groups and frames all of a
// node's messages to one peer, with coalesced heartbeats, into one buffer.
