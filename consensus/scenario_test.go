package consensus

import (
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/floe-broker/floe/internal/datadriven"
)

// TestScenarios runs the scripts in testdata/*.txt: scripted clusters of
// RawNodes on a hand-driven network (see scenarioEnv for the commands).
// Regenerate the expected output with: go test ./consensus -run TestScenarios -rewrite
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenario files")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			env := &scenarioEnv{cut: map[[2]uint64]bool{}}
			datadriven.Run(t, f, env.handle)
		})
	}
}

// scenarioEnv is a cluster whose every step is explicit. Storage is
// MemoryStorage and a Ready's persist is instantly durable; the network
// is a queue of messages delivered only when a command says so.
//
// Commands:
//
//	add-nodes N [voters=(..)] [learners=(..)] [index=I] [prevote=true]
//	          [checkquorum=true] [max-size-per-msg=B] [max-inflight-msgs=N]
//	          [election-ticks=N] [heartbeat-ticks=N]
//	campaign ID | tick ID N | tick-heartbeat ID | tick-election ID
//	propose ID DATA | propose-conf-change ID add-voter|add-learner|remove NODE
//	transfer-leader ID TO | read-index ID CTX | compact ID INDEX
//	restart ID [applied=I voters=(..) learners=(..)] (with applied=, the
//	    member restarts as one whose durable commit index and membership
//	    checkpoint are those of index I, behind its log)
//	process-ready ID... | deliver-msgs ID... | drop-msgs [from=..] [to=..]
//	stabilize [ID...] | isolate ID | cut ID ID (both ways)
//	heal (drops what was sent across a cut)
//	set-randomized-election-timeout ID TICKS
//	raft-state | raft-log ID | status ID | transfer-state ID
//	heard ID (the leader's ticks since it heard from, and last saw caught
//	    up, each member)
//	lose-entries ID INDEX [unknown-extent=true] (the member loses its entries
//	    after INDEX and restarts with a vote fence, as node/repair.go does;
//	    or as node/replicas.go does for a log found truncated) | vote-fence ID
type scenarioEnv struct {
	nodes   []*scenarioNode // nodes[i] has id i+1
	pending []Message       // the network, in send order
	cut     map[[2]uint64]bool
}

type scenarioNode struct {
	id      uint64
	cfg     Config
	rn      *RawNode
	storage *scenarioStorage
	applied uint64
	// readStates collects the reads its Readys confirmed.
	readStates []ReadState
}

// scenarioStorage makes snapshots on demand, as an application would: a
// snapshot of the applied state with the current membership.
type scenarioStorage struct {
	*MemoryStorage
	node *scenarioNode
}

func (s *scenarioStorage) Snapshot() (Snapshot, error) {
	snap, err := s.MemoryStorage.Snapshot()
	if err != nil || s.node.applied <= snap.Meta.Index {
		return snap, err
	}
	_, cs, _ := s.InitialState()
	return s.CreateSnapshot(s.node.applied, &cs, []byte(fmt.Sprintf("snap@%d", s.node.applied)))
}

func (env *scenarioEnv) handle(t *testing.T, c *datadriven.Cmd) string {
	switch c.Name {
	case "add-nodes":
		return env.addNodes(t, c)
	case "campaign":
		env.node(t, c, 0).rn.Campaign()
	case "tick":
		n := env.node(t, c, 0)
		for i := 0; i < env.intArg(t, c, 1); i++ {
			n.rn.Tick()
		}
	case "tick-heartbeat":
		n := env.node(t, c, 0)
		for i := 0; i < n.cfg.HeartbeatTicks; i++ {
			n.rn.Tick()
		}
	case "tick-election":
		env.tickElection(env.node(t, c, 0))
	case "propose":
		index, term, err := env.node(t, c, 0).rn.Propose(EntryNormal, []byte(c.Positional()[1]))
		return proposeResult(index, term, err)
	case "propose-conf-change":
		return env.proposeConfChange(t, c)
	case "voter-change":
		return env.voterChange(t, c)
	case "transfer-leader":
		env.node(t, c, 0).rn.TransferLeader(uint64(env.intArg(t, c, 1)))
	case "read-index":
		env.node(t, c, 0).rn.ReadIndex([]byte(c.Positional()[1]))
	case "compact":
		return env.compact(t, c)
	case "restart":
		n := env.node(t, c, 0)
		if v, ok := c.Key("applied"); ok {
			env.rewindApplied(t, c, n, parseIDs(t, v)[0])
		}
		return env.restart(t, n)
	case "process-ready":
		return env.processReadyCmd(t, c)
	case "deliver-msgs":
		var b strings.Builder
		for _, id := range env.ids(t, c) {
			b.WriteString(env.deliver(id))
		}
		return b.String()
	case "drop-msgs":
		return env.dropMsgs(t, c)
	case "stabilize":
		return env.stabilize(env.ids(t, c))
	case "isolate":
		id := env.node(t, c, 0).id
		for _, n := range env.nodes {
			env.cut[[2]uint64{id, n.id}] = true
			env.cut[[2]uint64{n.id, id}] = true
		}
	case "cut":
		a, b := env.node(t, c, 0).id, env.node(t, c, 1).id
		env.cut[[2]uint64{a, b}] = true
		env.cut[[2]uint64{b, a}] = true
	case "heal":
		return env.heal()
	case "set-randomized-election-timeout":
		env.node(t, c, 0).rn.raft.randomizedElectionTicks = env.intArg(t, c, 1)
	case "raft-state":
		return env.raftState()
	case "raft-log":
		return env.raftLog(env.node(t, c, 0))
	case "status":
		return env.status(env.node(t, c, 0))
	case "heard":
		return env.heard(env.node(t, c, 0))
	case "lose-entries":
		_, unknown := c.Key("unknown-extent")
		return env.loseEntries(env.node(t, c, 0), uint64(env.intArg(t, c, 1)), unknown)
	case "vote-fence":
		f := env.node(t, c, 0).rn.VoteFence()
		switch {
		case f.IsZero():
			return "no fence"
		case f.Index == math.MaxUint64:
			return fmt.Sprintf("fence %d/any", f.Term)
		}
		return fmt.Sprintf("fence %d/%d", f.Term, f.Index)
	case "transfer-state":
		st := env.node(t, c, 0).rn.BasicStatus()
		return fmt.Sprintf("LeadTransferee:%d TimeoutNowSent:%v", st.LeadTransferee, st.TimeoutNowSent)
	default:
		t.Fatalf("%s: unknown command %q", c.Pos, c.Name)
	}
	return ""
}

func proposeResult(index, term uint64, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("proposed %d/%d", term, index)
}

func (env *scenarioEnv) intArg(t *testing.T, c *datadriven.Cmd, i int) int {
	pos := c.Positional()
	if i >= len(pos) {
		t.Fatalf("%s: missing argument %d", c.Pos, i+1)
	}
	v, err := strconv.Atoi(pos[i])
	if err != nil {
		t.Fatalf("%s: %v", c.Pos, err)
	}
	return v
}

func (env *scenarioEnv) node(t *testing.T, c *datadriven.Cmd, i int) *scenarioNode {
	id := env.intArg(t, c, i)
	if id < 1 || id > len(env.nodes) {
		t.Fatalf("%s: no node %d", c.Pos, id)
	}
	return env.nodes[id-1]
}

// ids are the node ids given, or all of them.
func (env *scenarioEnv) ids(t *testing.T, c *datadriven.Cmd) []uint64 {
	var ids []uint64
	for i := range c.Positional() {
		ids = append(ids, env.node(t, c, i).id)
	}
	if len(ids) == 0 {
		for _, n := range env.nodes {
			ids = append(ids, n.id)
		}
	}
	return ids
}

func parseIDs(t *testing.T, vals []string) []uint64 {
	var ids []uint64
	for _, v := range vals {
		id, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func (env *scenarioEnv) addNodes(t *testing.T, c *datadriven.Cmd) string {
	voterVals, _ := c.Key("voters")
	learnerVals, _ := c.Key("learners")
	cs := ConfState{Voters: parseIDs(t, voterVals), Learners: parseIDs(t, learnerVals)}
	var index uint64
	if v, ok := c.Key("index"); ok {
		index = parseIDs(t, v)[0]
	}
	flag := func(k string) bool { v, ok := c.Key(k); return ok && v[0] == "true" }
	maxSize := uint64(1 << 20)
	if v, ok := c.Key("max-size-per-msg"); ok {
		maxSize = parseIDs(t, v)[0]
	}
	electionTicks, heartbeatTicks := 10, 1
	if v, ok := c.Key("election-ticks"); ok {
		electionTicks = int(parseIDs(t, v)[0])
	}
	if v, ok := c.Key("heartbeat-ticks"); ok {
		heartbeatTicks = int(parseIDs(t, v)[0])
	}
	maxInflight := 256
	if v, ok := c.Key("max-inflight-msgs"); ok {
		maxInflight = int(parseIDs(t, v)[0])
	}
	for i := 0; i < env.intArg(t, c, 0); i++ {
		n := &scenarioNode{id: uint64(len(env.nodes) + 1)}
		n.storage = &scenarioStorage{MemoryStorage: NewMemoryStorage(), node: n}
		if index > 0 {
			if err := n.storage.ApplySnapshot(Snapshot{Meta: SnapshotMeta{Index: index, Term: 1, ConfState: cs}}); err != nil {
				t.Fatal(err)
			}
			n.applied = index
		} else {
			n.storage.SetConfState(cs)
		}
		n.cfg = Config{
			ID: n.id, ElectionTicks: electionTicks, HeartbeatTicks: heartbeatTicks,
			MaxSizePerMsg: maxSize, MaxInflightMsgs: maxInflight,
			CheckQuorum: flag("checkquorum"), PreVote: flag("prevote"),
			Rand: rand.New(rand.NewSource(int64(n.id))),
		}
		env.nodes = append(env.nodes, n)
		if out := env.restart(t, n); out != "" {
			return out
		}
	}
	return ""
}

// restart makes a fresh RawNode from the node's storage, as after a crash
// (the scenario storage is always durable).
func (env *scenarioEnv) restart(t *testing.T, n *scenarioNode) string {
	cfg := n.cfg
	cfg.Storage = n.storage
	cfg.Applied = n.applied
	rn, err := NewRawNode(cfg)
	if err != nil {
		return "error: " + err.Error()
	}
	n.rn = rn
	return ""
}

// rewindApplied sets n's applied index, durable commit index and
// membership back to those of index applied (the membership given by the
// command), as a replica restarted from an older checkpoint finds them.
func (env *scenarioEnv) rewindApplied(t *testing.T, c *datadriven.Cmd, n *scenarioNode, applied uint64) {
	voterVals, _ := c.Key("voters")
	learnerVals, _ := c.Key("learners")
	ms := n.storage.MemoryStorage
	if applied < ms.firstIndex()-1 || applied > n.applied {
		t.Fatalf("%s: cannot rewind applied %d to %d", c.Pos, n.applied, applied)
	}
	n.applied = applied
	hs := ms.hardState
	hs.Commit = min(hs.Commit, applied)
	ms.hardState = hs
	ms.SetConfState(ConfState{Voters: parseIDs(t, voterVals), Learners: parseIDs(t, learnerVals)})
}

// loseEntries makes n lose every entry after index, as a replica whose
// damaged entries are discarded does (node/repair.go): it records a vote
// fence of its last index and term, cuts its log (and the commit index it
// holds) to index, and restarts. With unknownExtent the fence is that of a
// log found truncated on recovery (node/replicas.go): any index, and the
// hard state's term.
func (env *scenarioEnv) loseEntries(n *scenarioNode, index uint64, unknownExtent bool) string {
	ms := n.storage.MemoryStorage
	last := ms.lastIndex()
	term, err := ms.Term(last)
	if err != nil || index < ms.ents[0].Index || index >= last {
		return fmt.Sprintf("error: cannot cut the log (%d..%d) after %d", ms.firstIndex(), last, index)
	}
	f := VoteFence{Index: last, Term: term}
	if unknownExtent {
		f = VoteFence{Index: math.MaxUint64, Term: ms.hardState.Term}
	}
	n.cfg.VoteFence = n.cfg.VoteFence.Merge(f)
	ms.ents = ms.ents[:index-ms.ents[0].Index+1]
	hs := ms.hardState
	hs.Commit = min(hs.Commit, index)
	ms.hardState = hs
	n.applied = min(n.applied, index)
	return env.restart(nil, n)
}

// tickElection ticks until the member's election timer fires: its
// randomized timeout as a follower or candidate, the (check-quorum)
// election timeout as a leader.
func (env *scenarioEnv) tickElection(n *scenarioNode) {
	r := n.rn.raft
	timeout := r.randomizedElectionTicks
	if r.state == StateLeader {
		timeout = r.electionTicks
	}
	for i := max(timeout-r.electionElapsedTicks, 1); i > 0; i-- {
		n.rn.Tick()
	}
}

func (env *scenarioEnv) proposeConfChange(t *testing.T, c *datadriven.Cmd) string {
	n := env.node(t, c, 0)
	pos := c.Positional()
	types := map[string]ConfChangeType{"add-voter": ConfAddVoter, "add-learner": ConfAddLearner, "remove": ConfRemove}
	typ, ok := types[pos[1]]
	if !ok {
		t.Fatalf("%s: unknown change %q", c.Pos, pos[1])
	}
	index, term, err := n.rn.ProposeConfChange(ConfChange{Type: typ, NodeID: uint64(env.intArg(t, c, 2))})
	return proposeResult(index, term, err)
}

// voterChange asks as an operator would (PlanVoterChange), and proposes
// the change if it is allowed: voter-change LEADER add|remove ID.
func (env *scenarioEnv) voterChange(t *testing.T, c *datadriven.Cmd) string {
	n := env.node(t, c, 0)
	ops := map[string]VoterOp{"add": VoterAdd, "remove": VoterRemove}
	op, ok := ops[c.Positional()[1]]
	if !ok {
		t.Fatalf("%s: unknown voter change %q", c.Pos, c.Positional()[1])
	}
	cc, err := PlanVoterChange(n.rn.Status(), op, uint64(env.intArg(t, c, 2)))
	if err != nil {
		return "refused: " + err.Error()
	}
	index, term, err := n.rn.ProposeConfChange(cc)
	return cc.Type.String() + " " + proposeResult(index, term, err)
}

func (env *scenarioEnv) compact(t *testing.T, c *datadriven.Cmd) string {
	n := env.node(t, c, 0)
	index := uint64(env.intArg(t, c, 1))
	_, cs, _ := n.storage.InitialState()
	if _, err := n.storage.CreateSnapshot(index, &cs, []byte(fmt.Sprintf("snap@%d", index))); err != nil {
		return "error: " + err.Error()
	}
	if err := n.storage.Compact(index); err != nil {
		return "error: " + err.Error()
	}
	return env.raftLog(n)
}

func (env *scenarioEnv) processReadyCmd(t *testing.T, c *datadriven.Cmd) string {
	ids := env.ids(t, c)
	if len(ids) == 1 {
		return env.processReady(env.nodes[ids[0]-1])
	}
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(fmt.Sprintf("> %d handling Ready\n", id))
		b.WriteString(indent(env.processReady(env.nodes[id-1])))
	}
	return b.String()
}

// processReady does what a node does with a Ready: persist, send, apply
// (configuration changes included), advance.
func (env *scenarioEnv) processReady(n *scenarioNode) string {
	if !n.rn.HasReady() {
		return "no Ready"
	}
	rd := n.rn.Ready()
	out := []string{describeReady(rd)}
	if !rd.Snapshot.IsEmpty() {
		if err := n.storage.ApplySnapshot(rd.Snapshot); err != nil {
			out = append(out, "error: "+err.Error())
		}
		n.applied = rd.Snapshot.Meta.Index
	}
	if rd.HardState != (HardState{}) {
		n.storage.SetHardState(rd.HardState)
	}
	if err := n.storage.Append(rd.Entries); err != nil {
		out = append(out, "error: "+err.Error())
	}
	env.pending = append(env.pending, rd.Messages...)
	env.pending = append(env.pending, rd.MessagesAfterPersist...)
	n.readStates = append(n.readStates, rd.ReadStates...)
	for _, e := range rd.CommittedEntries {
		if e.Type == EntryConfChange {
			cc, err := UnmarshalConfChange(e.Data)
			if err != nil {
				out = append(out, "error: "+err.Error())
				continue
			}
			cs := n.rn.ApplyConfChange(cc)
			n.storage.SetConfState(cs)
			out = append(out, fmt.Sprintf("applied %s: %s", describeConfChange(cc), describeConfState(cs)))
		}
		n.applied = e.Index
	}
	n.rn.Advance(rd)
	return strings.Join(out, "\n") + "\n"
}

// deliver steps every pending message addressed to id, in order; messages
// on a cut link are dropped.
func (env *scenarioEnv) deliver(id uint64) string {
	var b strings.Builder
	var keep []Message
	var msgs []Message
	for _, m := range env.pending {
		if m.To == id {
			msgs = append(msgs, m)
		} else {
			keep = append(keep, m)
		}
	}
	env.pending = keep
	for _, m := range msgs {
		if env.cut[[2]uint64{m.From, m.To}] {
			b.WriteString(describeMessage(m) + " DROPPED\n")
			continue
		}
		b.WriteString(describeMessage(m) + "\n")
		if err := env.nodes[id-1].rn.Step(m); err != nil {
			b.WriteString("error: " + err.Error() + "\n")
		}
	}
	return b.String()
}

// heal reconnects everyone; messages sent across a cut link while it was
// cut were lost in flight.
func (env *scenarioEnv) heal() string {
	var b strings.Builder
	var keep []Message
	for _, m := range env.pending {
		if env.cut[[2]uint64{m.From, m.To}] {
			b.WriteString(describeMessage(m) + " DROPPED\n")
			continue
		}
		keep = append(keep, m)
	}
	env.pending = keep
	clear(env.cut)
	return b.String()
}

func (env *scenarioEnv) dropMsgs(t *testing.T, c *datadriven.Cmd) string {
	fromVals, _ := c.Key("from")
	toVals, _ := c.Key("to")
	from, to := parseIDs(t, fromVals), parseIDs(t, toVals)
	var b strings.Builder
	var keep []Message
	for _, m := range env.pending {
		if (len(from) == 0 || slices.Contains(from, m.From)) && (len(to) == 0 || slices.Contains(to, m.To)) {
			b.WriteString(describeMessage(m) + " DROPPED\n")
			continue
		}
		keep = append(keep, m)
	}
	env.pending = keep
	return b.String()
}

// stabilize handles Readies and delivers messages among ids until there is
// nothing left to do.
func (env *scenarioEnv) stabilize(ids []uint64) string {
	var b strings.Builder
	for {
		done := true
		for _, id := range ids {
			if env.nodes[id-1].rn.HasReady() {
				done = false
				fmt.Fprintf(&b, "> %d handling Ready\n", id)
				b.WriteString(indent(env.processReady(env.nodes[id-1])))
			}
		}
		for _, id := range ids {
			if slices.ContainsFunc(env.pending, func(m Message) bool { return m.To == id }) {
				done = false
				fmt.Fprintf(&b, "> %d receiving messages\n", id)
				b.WriteString(indent(env.deliver(id)))
			}
		}
		if done {
			return b.String()
		}
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = "  " + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

func (env *scenarioEnv) raftState() string {
	var b strings.Builder
	for _, n := range env.nodes {
		st := n.rn.Status()
		role := "Voter"
		switch {
		case slices.Contains(st.Config.Learners, n.id):
			role = "Learner"
		case !slices.Contains(st.Config.Voters, n.id):
			role = "NonMember"
		}
		fmt.Fprintf(&b, "%d: %s (%s) Term:%d Lead:%d Commit:%d Last:%d\n",
			n.id, st.RaftState, role, st.Term, st.Lead, st.Commit, st.LastIndex)
	}
	return b.String()
}

func (env *scenarioEnv) raftLog(n *scenarioNode) string {
	l := n.rn.raft.log
	ents, err := l.slice(l.firstIndex(), l.lastIndex()+1, noLimit)
	if err != nil {
		return "error: " + err.Error()
	}
	if len(ents) == 0 {
		return fmt.Sprintf("log is empty: first index=%d, last index=%d", l.firstIndex(), l.lastIndex())
	}
	var b strings.Builder
	for _, e := range ents {
		b.WriteString(describeEntry(e) + "\n")
	}
	return b.String()
}

func (env *scenarioEnv) heard(n *scenarioNode) string {
	st := n.rn.Status()
	if len(st.Progress) == 0 {
		return fmt.Sprintf("%d is %s, no progress", n.id, st.RaftState)
	}
	var b strings.Builder
	for _, p := range st.Progress {
		fmt.Fprintf(&b, "%d: match=%d heard=%d caughtUp=%d\n", p.ID, p.Match, p.HeardTicksAgo, p.CaughtUpTicksAgo)
	}
	return b.String()
}

func (env *scenarioEnv) status(n *scenarioNode) string {
	st := n.rn.Status()
	if len(st.Progress) == 0 {
		return fmt.Sprintf("%d is %s, no progress", n.id, st.RaftState)
	}
	var b strings.Builder
	for _, p := range st.Progress {
		role := ""
		if p.IsLearner {
			role = " learner"
		}
		fmt.Fprintf(&b, "%d: %s match=%d next=%d%s", p.ID, p.State, p.Match, p.Next, role)
		if p.PendingSnapshot > 0 {
			fmt.Fprintf(&b, " pendingSnapshot=%d", p.PendingSnapshot)
		}
		if p.InflightMsgs > 0 {
			fmt.Fprintf(&b, " inflight=%d", p.InflightMsgs)
		}
		b.WriteString("\n")
	}
	return b.String()
}
