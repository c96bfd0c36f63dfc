package node

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/consensus"
)

// Controller voter changes (voters.go) on whole brokers.

// voterChange sends AddRaftVoter or RemoveRaftVoter for id to broker via,
// and returns the error code and message.
func voterChange(c *cluster, via int32, add bool, id int32) (int16, string) {
	c.t.Helper()
	var req kmsg.Request
	if add {
		a := kmsg.NewPtrAddRaftVoterRequest()
		a.VoterID = id
		req = a
	} else {
		rm := kmsg.NewPtrRemoveRaftVoterRequest()
		rm.VoterID = id
		req = rm
	}
	var code int16
	var msg *string
	switch resp := c.request(via, req).(type) {
	case *kmsg.AddRaftVoterResponse:
		code, msg = resp.ErrorCode, resp.ErrorMessage
	case *kmsg.RemoveRaftVoterResponse:
		code, msg = resp.ErrorCode, resp.ErrorMessage
	}
	if msg == nil {
		return code, ""
	}
	return code, *msg
}

// voterChangeRetry retries a change refused for a passing reason (another
// change in progress, a learner still catching up) for up to 30 s.
func voterChangeRetry(t *testing.T, c *cluster, via int32, add bool, id int32) {
	t.Helper()
	deadline := c.clk.Monotonic() + 30*time.Second
	for {
		code, msg := voterChange(c, via, add, id)
		if code == 0 {
			return
		}
		if code != kerr.RequestTimedOut.Code || c.clk.Monotonic() > deadline {
			t.Fatalf("voter change (add %v) of %d via %d: %v: %s", add, id, via, kerr.ErrorForCode(code), msg)
		}
		c.runFor(200 * time.Millisecond)
	}
}

// ctlConf is the controller membership broker id has applied.
func ctlConf(c *cluster, id int32) (voters, learners []uint64) {
	return c.nodes[id].r.controllerVoters()
}

// TestReplaceEveryControllerVoter replaces all three original controller
// voters, one at a time, while a producer writes: brokers 4, 5 and 6
// join, each is added as a voter and an original one removed, then the
// originals are decommissioned and stopped. The cluster keeps serving on
// the new voters alone, and every acknowledged record is read back.
func TestReplaceEveryControllerVoter(t *testing.T) {
	c := newCluster(t, 3, 53)
	c.waitReady()
	createTopic(t, c, 1, "v", 2, 3, nil)
	waitLeaders(t, c, "v", 2)
	for id := int32(4); id <= 6; id++ {
		c.addNode(id).boot()
	}
	c.waitReady()
	p := startProducer(c, "v", 2)
	for i := int32(1); i <= 3; i++ {
		voterChangeRetry(t, c, 2, true, i+3) // any broker takes the request
		voterChangeRetry(t, c, i+3, false, i)
		// Every broker that answered saw the change applied; wait for all.
		want := sortedIDs(append(ids(4, i+3), ids(i+1, 3)...))
		if !c.runUntil(10*time.Second, func() bool { return c.allConf(want) }) {
			v, l := ctlConf(c, 1)
			t.Fatalf("after replacing %d: voters %v learners %v, want voters %s", i, v, l, want)
		}
	}
	for i := int32(1); i <= 3; i++ {
		decommission(t, c, i)
	}
	for i := int32(1); i <= 3; i++ {
		c.nodes[i].crash()
		delete(c.nodes, i)
	}
	acked := p.stop()
	// The new quorum alone elects, commits and serves.
	createTopic(t, c, 4, "after", 1, 3, nil)
	waitLeaders(t, c, "after", 1)
	if sp := produce(c, leaderOf(c, "after", 0), "after", 0, -1, batchOf("x")); sp.ErrorCode != 0 {
		t.Fatalf("produce on the new quorum: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	waitLeaders(t, c, "v", 2)
	got := map[string]bool{}
	for part := int32(0); part < 2; part++ {
		vals, _ := fetchAll(t, c, leaderOf(c, "v", part), "v", part)
		for _, v := range vals {
			got[v] = true
		}
	}
	lost := 0
	for _, v := range acked {
		if !got[v] {
			lost++
		}
	}
	if len(acked) < 50 || lost > 0 {
		t.Fatalf("%d records acknowledged, %d of them lost", len(acked), lost)
	}
	t.Logf("%d records acknowledged across the replacement, none lost", len(acked))
}

func ids(lo, hi int32) []int32 {
	var out []int32
	for i := lo; i <= hi; i++ {
		out = append(out, i)
	}
	return out
}

func sortedIDs(v []int32) string {
	slices.Sort(v)
	return fmt.Sprint(v)
}

// allConf reports whether every up broker has applied voters as the
// controller's voter set.
func (c *cluster) allConf(voters string) bool {
	for _, n := range c.nodes {
		if n.r == nil {
			continue
		}
		v, _ := n.r.controllerVoters()
		got := make([]int32, len(v))
		for i, id := range v {
			got[i] = int32(id)
		}
		if fmt.Sprint(got) != voters {
			return false
		}
	}
	return true
}

// decommission drains broker id and waits until no partition is placed on
// it.
func decommission(t *testing.T, c *cluster, id int32) {
	t.Helper()
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	if code := c.request(4, req).(*kmsg.UnregisterBrokerResponse).ErrorCode; code != 0 {
		t.Fatalf("decommission %d: %v", id, kerr.ErrorForCode(code))
	}
	if !c.runUntil(60*time.Second, func() bool {
		for _, tp := range c.nodes[4].r.Metadata().Topics {
			for _, p := range tp.Partitions {
				if slices.Contains(p.Replicas, id) || p.Target != nil || !p.Settled() {
					return false
				}
			}
		}
		return true
	}) {
		t.Fatalf("broker %d still holds replicas after 60s", id)
	}
}

// producer writes one record every 20 ms to a partition of topic, through
// its leader, and keeps the values acknowledged with acks=all.
type producer struct {
	c       *cluster
	topic   string
	parts   int32
	n       int
	acked   []string
	stopped bool
}

func startProducer(c *cluster, topic string, parts int32) *producer {
	p := &producer{c: c, topic: topic, parts: parts}
	p.next()
	return p
}

func (p *producer) next() {
	p.c.clk.After(20*time.Millisecond, func() {
		if p.stopped {
			return
		}
		p.next()
		part := int32(p.n) % p.parts
		lead := leaderOf(p.c, p.topic, part)
		if lead == 0 || p.c.nodes[lead] == nil || p.c.nodes[lead].r == nil {
			return
		}
		p.n++
		val := fmt.Sprintf("r%d", p.n)
		p.c.nodes[lead].r.HandleRequest(Client{ClientID: "producer"}, produceReq(p.topic, part, -1, batchOf(val)), func(resp kmsg.Response) {
			if pr, ok := resp.(*kmsg.ProduceResponse); ok && pr.Topics[0].Partitions[0].ErrorCode == 0 {
				p.acked = append(p.acked, val)
			}
		})
	})
}

// stop ends the producer after letting its last requests answer.
func (p *producer) stop() []string {
	p.stopped = true
	p.c.runFor(2 * time.Second)
	return p.acked
}

// TestVoterChangeBadInput: each refusal says why and changes nothing.
func TestVoterChangeBadInput(t *testing.T) {
	c := newCluster(t, 3, 54)
	c.waitReady()
	c.addNode(4).boot()
	c.waitReady()
	before := sortedIDs([]int32{1, 2, 3})
	cases := []struct {
		add      bool
		id       int32
		code     *kerr.Error
		contains string
	}{
		{true, 99, kerr.BrokerNotAvailable, "not registered"},
		{true, 2, kerr.DuplicateVoter, "already a voter"},
		{false, 4, kerr.VoterNotFound, "not a voter"},
		{false, 77, kerr.VoterNotFound, "not a voter"},
		{true, -1, kerr.InvalidRequest, "bad broker id"},
	}
	for _, tc := range cases {
		code, msg := voterChange(c, 4, tc.add, tc.id)
		if code != tc.code.Code || !strings.Contains(msg, tc.contains) {
			t.Errorf("add=%v %d: got %v %q, want %v %q", tc.add, tc.id, kerr.ErrorForCode(code), msg, tc.code, tc.contains)
		}
	}
	// Two changes at once: the second is refused while the first is in
	// flight. The refusal comes back first, the promotion once committed.
	answers := map[string]string{}
	answer := func(kind string) func(kmsg.Response) {
		return func(resp kmsg.Response) {
			code, msg := int16(0), (*string)(nil)
			switch r := resp.(type) {
			case *kmsg.AddRaftVoterResponse:
				code, msg = r.ErrorCode, r.ErrorMessage
			case *kmsg.RemoveRaftVoterResponse:
				code, msg = r.ErrorCode, r.ErrorMessage
			}
			answers[kind] = fmt.Sprint(kerr.ErrorForCode(code))
			if msg != nil {
				answers[kind] += ": " + *msg
			}
		}
	}
	lead := int32(c.nodes[1].r.controllerLeader())
	if !c.runUntil(10*time.Second, func() bool {
		st := c.nodes[lead].r.ctl.rep.Status()
		for _, pr := range st.Progress {
			if pr.ID == 4 && pr.Match >= st.Commit && pr.RecentActive {
				return true
			}
		}
		return false
	}) {
		t.Fatal("broker 4 never caught up as a learner")
	}
	add := kmsg.NewPtrAddRaftVoterRequest()
	add.VoterID = 4
	rm := kmsg.NewPtrRemoveRaftVoterRequest()
	rm.VoterID = 1
	c.nodes[lead].r.HandleRequest(Client{}, add, answer("add"))
	c.nodes[lead].r.HandleRequest(Client{}, rm, answer("remove"))
	if !c.runUntil(20*time.Second, func() bool { return len(answers) == 2 }) {
		t.Fatal("no answers to two voter changes at once")
	}
	if answers["add"] != "<nil>" || !strings.Contains(answers["remove"], "REQUEST_TIMED_OUT") ||
		!strings.Contains(answers["remove"], "remove-voter 1: a membership change is still in progress") {
		t.Fatalf("two changes at once: %v; want the first done and the second refused", answers)
	}
	before = sortedIDs([]int32{1, 2, 3, 4})
	if !c.runUntil(5*time.Second, func() bool { return c.allConf(before) }) {
		t.Fatalf("voters changed by refused requests: %v", fmt.Sprint(ctlConf(c, 1)))
	}
}

// A voter change that names another cluster's id (KIP-853's ClusterId) is
// INCONSISTENT_CLUSTER_ID, added or removed, and changes nothing.
func TestVoterChangeOtherClusterID(t *testing.T) {
	c := newCluster(t, 3, 54)
	c.waitReady()
	c.addNode(4).boot()
	c.waitReady()
	other := "not-" + c.nodes[1].r.ctl.state.ClusterID
	add := kmsg.NewPtrAddRaftVoterRequest()
	add.VoterID, add.ClusterID = 4, &other
	rm := kmsg.NewPtrRemoveRaftVoterRequest()
	rm.VoterID, rm.ClusterID = 3, &other
	if code := c.request(1, add).(*kmsg.AddRaftVoterResponse).ErrorCode; code != kerr.InconsistentClusterID.Code {
		t.Errorf("add with another cluster's id: %v", kerr.ErrorForCode(code))
	}
	if code := c.request(1, rm).(*kmsg.RemoveRaftVoterResponse).ErrorCode; code != kerr.InconsistentClusterID.Code {
		t.Errorf("remove with another cluster's id: %v", kerr.ErrorForCode(code))
	}
	c.runFor(2 * time.Second)
	if want := sortedIDs([]int32{1, 2, 3}); !c.allConf(want) {
		t.Fatalf("voters changed by refused requests: %v", fmt.Sprint(ctlConf(c, 1)))
	}
}

// TestRemoveVoterBreakingQuorum: with one of three voters down, removing
// another live one would leave the leader and the dead one, no live
// majority: refused, and nothing changes.
func TestRemoveVoterBreakingQuorum(t *testing.T) {
	c := newCluster(t, 3, 56)
	lead, dead, other := crashOneFollower(c)
	if got := int32(c.nodes[lead].r.controllerLeader()); got != lead {
		t.Fatalf("leader %d lost its leadership (now %d)", lead, got)
	}
	code, msg := voterChange(c, other, false, other)
	if code != kerr.RequestTimedOut.Code || !strings.Contains(msg, "without a live quorum") {
		t.Fatalf("removing %d with %d down: %v %q", other, dead, kerr.ErrorForCode(code), msg)
	}
	t.Logf("removing %d with %d down: %q", other, dead, msg)
	c.nodes[dead].boot()
	c.waitReady()
	if !c.allConf("[1 2 3]") {
		t.Fatalf("voters changed by a refused request: %v", fmt.Sprint(ctlConf(c, 1)))
	}
}

// TestRemoveLastVoter: a single broker's only voter cannot be removed.
func TestRemoveLastVoter(t *testing.T) {
	c := newCluster(t, 1, 55)
	c.waitReady()
	code, msg := voterChange(c, 1, false, 1)
	if code != kerr.InvalidRequest.Code || !strings.Contains(msg, "last voter") {
		t.Fatalf("removing the last voter: %v %q", kerr.ErrorForCode(code), msg)
	}
	if v, _ := ctlConf(c, 1); fmt.Sprint(v) != "[1]" {
		t.Fatalf("voters after a refused removal: %v", v)
	}
}

// TestVoterAnswerCodes: an answer over the peer network decodes to no
// error for code 0 and to the Kafka error otherwise, never a panic.
func TestVoterAnswerCodes(t *testing.T) {
	if err := answerError(0, ""); err != nil {
		t.Fatalf("code 0: %v", err)
	}
	if code, msg := errParts(answerError(kerr.DuplicateVoter.Code, "add-voter 2: already a voter")); code != kerr.DuplicateVoter.Code || msg == nil || *msg != "add-voter 2: already a voter" {
		t.Fatalf("DUPLICATE_VOTER: %d %v", code, msg)
	}
	if code, _ := errParts(answerError(31000, "")); code != kerr.UnknownServerError.Code {
		t.Fatalf("an unknown code: %d", code)
	}
}

// TestVoterResendAfterApplyIsDone: a request whose answer was lost comes
// back (the asking broker resends it each second) after its change was
// applied; the leader answers it as done, not as a new change that would
// be refused as a duplicate of itself.
func TestVoterResendAfterApplyIsDone(t *testing.T) {
	c := newCluster(t, 3, 57)
	c.waitReady()
	c.addNode(4).boot()
	c.waitReady()
	voterChangeRetry(t, c, 2, true, 4)
	lead := c.nodes[2].r.controllerLeader()
	r := c.nodes[int32(lead)].r
	if len(r.voters.applied) == 0 {
		t.Fatal("the leader remembers no applied voter change")
	}
	reqID := r.voters.applied[len(r.voters.applied)-1]
	var got error
	answered := false
	if r.voters.pending == nil { // only a broker that asked for a change has made it
		r.voters.pending = map[string]*voterReq{}
	}
	r.voters.pending[reqID] = &voterReq{op: consensus.VoterAdd, id: 4, deadline: c.clk.Monotonic() + time.Second,
		done: func(err error) { got, answered = err, true }}
	r.planVoterChange(r.self, reqID, consensus.VoterAdd, 4)
	if !answered || got != nil {
		t.Fatalf("resend of an applied change: answered %v, err %v", answered, got)
	}
	// A new request for the same change is a duplicate.
	if code, msg := voterChange(c, 1, true, 4); code != kerr.DuplicateVoter.Code {
		t.Fatalf("a new add-voter 4: %v %q", kerr.ErrorForCode(code), msg)
	}
}

// TestVoterRefusalIsFinal: a copy of a refused request (a duplicate on
// the link, or a resend that crossed the refusal) reaches the leader
// again once the reason has passed. The client was told the change was
// refused and changes nothing, so the copy must be refused again, not
// proposed (seed 954449 --all-faults on 135883d: remove-voter 1 answered
// "without a live quorum", its duplicate proposed and committed).
func TestVoterRefusalIsFinal(t *testing.T) {
	c := newCluster(t, 3, 56)
	lead, dead, other := crashOneFollower(c)
	r := c.nodes[lead].r
	if r.controllerLeader() != r.self {
		t.Fatalf("leader %d lost its leadership", lead)
	}
	const reqID = "test-refused-copy"
	var answers []error
	ask := func() {
		if r.voters.pending == nil {
			r.voters.pending = map[string]*voterReq{}
		}
		r.voters.pending[reqID] = &voterReq{op: consensus.VoterRemove, id: uint64(other), deadline: c.clk.Monotonic() + time.Second,
			done: func(err error) { answers = append(answers, err) }}
		r.planVoterChange(r.self, reqID, consensus.VoterRemove, uint64(other))
	}
	ask()
	c.runFor(time.Second) // the refusal is answered once the log holds it
	if len(answers) != 1 || answers[0] == nil {
		t.Fatalf("removing %d with %d down: answers %v", other, dead, answers)
	}
	// The reason passes: the dead voter comes back. Then a copy arrives.
	c.nodes[dead].boot()
	c.waitReady()
	if int32(r.controllerLeader()) != lead {
		t.Skipf("leadership moved from %d; the copy would reach another leader", lead)
	}
	ask()
	c.runFor(2 * time.Second)
	if len(answers) != 2 || answers[1] == nil {
		t.Fatalf("a copy of the refused removal of %d: answers %v", other, answers)
	}
	if !c.allConf("[1 2 3]") {
		t.Fatalf("a copy of a refused request changed the voters: %v", fmt.Sprint(ctlConf(c, 1)))
	}
}

// A refused voter change stays refused across a restart of the leader
// that refused it and a change of leader: the refusal is in the
// controller log, and a copy of the request (one still in flight from
// before) that reaches whichever broker leads next is refused the same
// way. Before, only the refusing leader remembered it, in memory, and the
// copy was proposed and committed.
func TestVoterRefusalSurvivesLeaderRestart(t *testing.T) {
	c := newCluster(t, 3, 57)
	lead, dead, other := crashOneFollower(c)
	const reqID = "test-refused-copy-after-restart"
	var answers []error
	ask := func(r *Reactor) {
		if r.voters.pending == nil {
			r.voters.pending = map[string]*voterReq{}
		}
		r.voters.pending[reqID] = &voterReq{op: consensus.VoterRemove, id: uint64(other), deadline: c.clk.Monotonic() + 5*time.Second,
			done: func(err error) { answers = append(answers, err) }}
		r.planVoterChange(r.self, reqID, consensus.VoterRemove, uint64(other))
	}
	r := c.nodes[lead].r
	if r.controllerLeader() != r.self {
		t.Fatalf("leader %d lost its leadership", lead)
	}
	ask(r)
	c.runFor(time.Second)
	if len(answers) != 1 || answers[0] == nil {
		t.Fatalf("removing %d with %d down: answers %v", other, dead, answers)
	}
	// The reason passes (the dead voter comes back), the refusing leader
	// restarts, and a copy reaches the controller's leader then.
	c.nodes[dead].boot()
	c.waitReady()
	c.nodes[lead].crash()
	c.runFor(time.Second)
	c.nodes[lead].boot()
	c.waitReady()
	c.runFor(2 * time.Second) // every member heard from: a removal would be allowed now
	nl := c.controllerLeaderNode()
	if nl == nil {
		t.Fatal("no controller leader after the restart")
	}
	ask(nl.r)
	c.runFor(2 * time.Second)
	if len(answers) != 2 || answers[1] == nil {
		t.Fatalf("a copy of the refused removal of %d at leader %d: answers %v", other, nl.id, answers)
	}
	if !c.allConf("[1 2 3]") {
		t.Fatalf("a copy of a refused request changed the voters after a leader restart: %v", fmt.Sprint(ctlConf(c, 1)))
	}
}

// crashOneFollower waits for a 3-broker cluster's controller, crashes one
// of its two followers and runs a check-quorum period, so the dead one is
// no longer live. It returns the leader, the crashed follower and the
// live one.
func crashOneFollower(c *cluster) (lead, dead, other int32) {
	c.waitReady()
	lead = int32(c.nodes[1].r.controllerLeader())
	var others []int32
	for id := int32(1); id <= 3; id++ {
		if id != lead {
			others = append(others, id)
		}
	}
	dead, other = others[0], others[1]
	c.nodes[dead].crash()
	c.runFor(2 * time.Second)
	return lead, dead, other
}
