package group

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kclient is a classic (JoinGroup/SyncGroup) consumer as the migration
// tests model it: cooperative, it reports what it owns in its
// subscription, owns what its last SyncGroup gave it, and drops what a
// SyncGroup no longer lists at once.
type kclient struct {
	id       string
	instance *string // group.instance.id; nil: dynamic
	gen      int32
	owned    assignment
}

func (h *harness) classicJoinReq(group string, cl *kclient) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.Group, req.MemberID, req.ProtocolType = group, cl.id, "consumer"
	req.InstanceID = cl.instance
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 20000
	md := kmsg.NewConsumerMemberMetadata()
	md.Version = 1
	md.Topics = []string{"t"}
	for _, tp := range sortedTopics(cl.owned) {
		md.OwnedPartitions = append(md.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: tp, Partitions: cl.owned[tp]})
	}
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "cooperative-sticky", Metadata: md.AppendTo(nil)}}
	return req
}

// classicJoin sends cl's JoinGroup (with the KIP-394 round for a new
// member) and returns the reply, which may be parked (a classic group).
func (h *harness) classicJoin(group string, cl *kclient) *reply[kmsg.JoinGroupResponse] {
	h.t.Helper()
	r := &reply[kmsg.JoinGroupResponse]{t: h.t, label: "classic join " + cl.id}
	h.c.JoinGroup(h.now, Client{ID: "k", Host: "h"}, h.classicJoinReq(group, cl), r.set)
	if !r.parked() && r.resp.ErrorCode == kerr.MemberIDRequired.Code {
		cl.id = r.resp.MemberID
		r = &reply[kmsg.JoinGroupResponse]{t: h.t, label: "classic join " + cl.id}
		h.c.JoinGroup(h.now, Client{ID: "k", Host: "h"}, h.classicJoinReq(group, cl), r.set)
	}
	if !r.parked() && r.resp.ErrorCode == 0 {
		cl.id = r.resp.MemberID // a static member learns its id here
	}
	return r
}

// classicSync sends cl's SyncGroup at gen (assign: the leader's, or nil)
// and applies the answer.
func (h *harness) classicSync(group string, cl *kclient, gen int32, assign map[string]assignment) *reply[kmsg.SyncGroupResponse] {
	enc := map[string]string{}
	for id, as := range assign {
		enc[id] = string(encodeAssignment(as, 1))
	}
	r := h.sync(group, cl.id, gen, enc)
	if !r.parked() {
		h.applySync(cl, gen, r.resp)
	}
	return r
}

func (h *harness) applySync(cl *kclient, gen int32, resp *kmsg.SyncGroupResponse) {
	if resp.ErrorCode != 0 {
		return
	}
	as, err := decodeAssignment(resp.MemberAssignment)
	if err != nil {
		h.t.Fatalf("%s: assignment %x: %v", cl.id, resp.MemberAssignment, err)
	}
	cl.owned, cl.gen = as, gen
}

// classicRound rejoins and syncs a classic member of a consumer group, as
// a cooperative client told REBALANCE_IN_PROGRESS does.
func (h *harness) classicRound(group string, cl *kclient) {
	h.t.Helper()
	jr := h.classicJoin(group, cl).must()
	if jr.ErrorCode != 0 {
		h.t.Fatalf("%s join: %v", cl.id, kerr.ErrorForCode(jr.ErrorCode))
	}
	if jr.LeaderID == cl.id || len(jr.Members) != 0 {
		h.t.Fatalf("%s: a classic member of a consumer group led (leader %q, %d members)", cl.id, jr.LeaderID, len(jr.Members))
	}
	h.classicSync(group, cl, jr.Generation, nil).must()
}

func overlap(ks []*kclient, cs []*cclient) error {
	var all []*cclient
	for _, k := range ks {
		all = append(all, &cclient{id: k.id, owned: k.owned})
	}
	return clientOverlap(append(all, cs...), "owned")
}

// settleMixed runs classic and consumer members until the consumer group
// is stable and no classic member is asked to rejoin, checking after every
// step that no partition is owned twice.
func (h *harness) settleMixed(group string, ks []*kclient, cs []*cclient) {
	h.t.Helper()
	for round := 0; round < 30; round++ {
		for _, k := range ks {
			switch code := h.heartbeat(group, k.id, k.gen); code {
			case 0:
			case kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code:
				h.classicRound(group, k)
			default:
				h.t.Fatalf("%s heartbeat: %v", k.id, kerr.ErrorForCode(code))
			}
			if err := overlap(ks, cs); err != nil {
				h.t.Fatal(err)
			}
		}
		for _, c := range cs {
			h.cgHeartbeat(group, c, nil)
			if err := overlap(ks, cs); err != nil {
				h.t.Fatal(err)
			}
		}
		cg := h.consumerGroup(group)
		if cg == nil {
			h.t.Fatalf("group %s is not a consumer group", group)
		}
		quiet := cg.stateName() == "Stable"
		for _, k := range ks {
			if m := cg.Members[k.id]; m == nil || cg.mustRejoin(m) || !m.Assigned.equal(k.owned) {
				quiet = false
			}
		}
		if quiet {
			return
		}
		h.advance(time.Second)
	}
	cg := h.consumerGroup(group)
	for _, id := range cg.memberIDs() {
		m := cg.Members[id]
		h.t.Logf("member %s classic %v epoch %d/%d state %s assigned %v revoking %v target %v", id, m.Classic != nil, m.Epoch, cg.Epoch, m.State, m.Assigned, m.Revoking, m.Target)
	}
	for _, k := range ks {
		h.t.Logf("classic client %s gen %d owns %v", k.id, k.gen, k.owned)
	}
	for _, c := range cs {
		h.t.Logf("consumer client %s epoch %d owns %v", c.id, c.epoch, c.owned)
	}
	h.t.Fatalf("group %s did not settle: %s", group, cg.stateName())
}

// classicGroupOfTwo makes classic group g of two cooperative members
// sharing topic t's four partitions, at generation 1, with offsets
// committed.
func classicGroupOfTwo(t *testing.T, cfg Config) (*harness, *kclient, *kclient) {
	h := newHarness(t, cfg)
	h.setTopic("t", 4)
	a, b := &kclient{owned: assignment{}}, &kclient{owned: assignment{}}
	ra, rb := h.classicJoin("g", a), h.classicJoin("g", b)
	h.advance(3*h.c.cfg.InitialRebalanceDelay + time.Second) // the delay, extended once
	ja, jb := ra.must(), rb.must()
	if ja.ErrorCode != 0 || jb.ErrorCode != 0 || ja.Generation != 1 {
		t.Fatalf("classic joins: %d %d gen %d", ja.ErrorCode, jb.ErrorCode, ja.Generation)
	}
	leader, follower := a, b
	if ja.LeaderID != a.id {
		leader, follower = b, a
	}
	plan := map[string]assignment{
		leader.id:   {"t": {0, 1}},
		follower.id: {"t": {2, 3}},
	}
	rf := h.classicSync("g", follower, 1, nil)
	h.classicSync("g", leader, 1, plan).must()
	h.applySync(follower, 1, rf.must())
	if a.owned.count() != 2 || b.owned.count() != 2 || h.state("g") != "Stable" {
		t.Fatalf("classic group: a %v b %v state %s", a.owned, b.owned, h.state("g"))
	}
	for p := int32(0); p < 4; p++ {
		owner := a
		if b.owned.has(topicPartition{"t", p}) {
			owner = b
		}
		if code := commitCode(h.commit("g", owner.id, 1, "t", p, int64(100+p)).must()); code != 0 {
			t.Fatalf("classic commit of t-%d: %v", p, kerr.ErrorForCode(code))
		}
	}
	return h, a, b
}

func checkOffsets(t *testing.T, h *harness, what string) {
	t.Helper()
	for p := int32(0); p < 4; p++ {
		off, code := h.fetch("g", "t", p, false)
		if code != 0 || off < int64(100+p) {
			t.Fatalf("%s: t-%d committed %d (code %d), want at least %d", what, p, off, code, 100+p)
		}
	}
}

// TestMigrationUpgradeAndDowngrade is the scripted round trip: a classic
// group of two, a consumer-protocol member joins (upgrade), all three
// consume disjoint partitions, a classic member leaves, the consumer
// member leaves (downgrade), the classic member goes on alone; a failover
// in the middle keeps the mixed group. Offsets survive every conversion
// and stale generations are fenced.
func TestMigrationUpgradeAndDowngrade(t *testing.T) {
	h, a, b := classicGroupOfTwo(t, Config{})

	k := newClient("k", "t")
	r := h.cgHeartbeat("g", k, nil)
	wantCode(t, "consumer member joins the classic group", r.ErrorCode, nil)
	cg := h.consumerGroup("g")
	if cg == nil || len(cg.Members) != 3 || cg.Epoch <= 1 {
		t.Fatalf("after the upgrade: %+v, want 3 members past epoch 1", cg)
	}
	if k.owned.count() != 0 {
		t.Fatalf("k took %v while the classic members still own everything", k.owned)
	}
	if err := overlap([]*kclient{a, b}, []*cclient{k}); err != nil {
		t.Fatal(err)
	}
	checkOffsets(t, h, "after the upgrade")
	// a classic member still at generation 1 may commit what it owns
	p := a.owned["t"][0]
	if code := commitCode(h.commit("g", a.id, 1, "t", p, 200).must()); code != 0 {
		t.Fatalf("classic commit at its epoch: %v", kerr.ErrorForCode(code))
	}
	wantCode(t, "classic heartbeat after the upgrade", h.heartbeat("g", a.id, 1), kerr.RebalanceInProgress)

	h.settleMixed("g", []*kclient{a, b}, []*cclient{k})
	if a.owned.count() == 0 || b.owned.count() == 0 || k.owned.count() == 0 || a.owned.count()+b.owned.count()+k.owned.count() != 4 {
		t.Fatalf("after settling: a %v b %v k %v", a.owned, b.owned, k.owned)
	}
	// the generation fences: the classic members moved on from epoch 1
	wantCode(t, "commit at the pre-upgrade generation", commitCode(h.commit("g", a.id, 1, "t", a.owned["t"][0], 300).must()), kerr.IllegalGeneration)
	if code := commitCode(h.commit("g", a.id, a.gen, "t", a.owned["t"][0], 300).must()); code != 0 {
		t.Fatalf("classic commit at its new generation %d: %v", a.gen, kerr.ErrorForCode(code))
	}

	// the mixed group survives a failover
	h.failover()
	cg = h.consumerGroup("g")
	if cg == nil || len(cg.Members) != 3 || cg.Members[a.id].Classic == nil {
		t.Fatalf("after failover: %+v", cg)
	}
	h.settleMixed("g", []*kclient{a, b}, []*cclient{k})

	// a classic member leaves: the other two share the four partitions
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 5
	lr.Group = "g"
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: b.id}}
	if resp := h.c.LeaveGroup(h.now, lr); resp.Members[0].ErrorCode != 0 {
		t.Fatalf("classic leave: %v", kerr.ErrorForCode(resp.Members[0].ErrorCode))
	}
	b.owned = assignment{}
	h.settleMixed("g", []*kclient{a}, []*cclient{k})
	if a.owned.count()+k.owned.count() != 4 {
		t.Fatalf("after b left: a %v k %v", a.owned, k.owned)
	}

	// the last consumer-protocol member leaves: the group is classic again
	k.owned = assignment{}
	k.epoch = epochLeave
	if r := h.cgHeartbeat("g", k, nil); r.ErrorCode != 0 {
		t.Fatalf("consumer leave: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	g := h.c.groups["g"]
	if g.cons != nil || len(g.members) != 1 || g.state != PreparingRebalance {
		t.Fatalf("after the downgrade: cons %v, %d members, state %s", g.cons != nil, len(g.members), g.state)
	}
	// told to rejoin (ILLEGAL_GENERATION when its epoch was behind the
	// group's, which becomes the generation, as in Kafka)
	if code := h.heartbeat("g", a.id, a.gen); code != kerr.RebalanceInProgress.Code && code != kerr.IllegalGeneration.Code {
		t.Fatalf("classic heartbeat after the downgrade: %v", kerr.ErrorForCode(code))
	}
	jr := h.classicJoin("g", a).must()
	if jr.ErrorCode != 0 || jr.LeaderID != a.id {
		t.Fatalf("classic rejoin after the downgrade: code %d leader %q", jr.ErrorCode, jr.LeaderID)
	}
	h.classicSync("g", a, jr.Generation, map[string]assignment{a.id: {"t": {0, 1, 2, 3}}}).must()
	if h.state("g") != "Stable" || a.owned.count() != 4 {
		t.Fatalf("after the classic rebalance: %s, a owns %v", h.state("g"), a.owned)
	}
	checkOffsets(t, h, "after the downgrade")
	// the downgrade survives a failover too
	h.failover()
	if g := h.c.groups["g"]; g.cons != nil || len(g.members) != 1 {
		t.Fatalf("after failover: cons %v members %d", g.cons != nil, len(g.members))
	}
	checkOffsets(t, h, "after the last failover")
}

// TestMigrationRefused: the policy, the group's size and its protocol type
// can refuse an upgrade (GROUP_ID_NOT_FOUND, the group unchanged); a
// downgrade the policy forbids leaves a consumer group of classic members.
func TestMigrationRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"policy disabled", Config{ConsumerMigrationPolicy: MigrationDisabled}},
		{"policy downgrade only", Config{ConsumerMigrationPolicy: MigrationDowngrade}},
		{"group too large", Config{ConsumerMaxSize: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _, _ := classicGroupOfTwo(t, tc.cfg)
			before := string(groupValue(h.c.groups["g"], nil))
			r := h.cgHeartbeat("g", newClient("k", "t"), nil)
			wantCode(t, tc.name, r.ErrorCode, kerr.GroupIDNotFound)
			if g := h.c.groups["g"]; g.cons != nil || string(groupValue(g, nil)) != before {
				t.Fatal("a refused upgrade changed the classic group")
			}
			checkOffsets(t, h, "after a refused upgrade")
		})
	}
	t.Run("upgrade only keeps classic members in the consumer group", func(t *testing.T) {
		h, a, b := classicGroupOfTwo(t, Config{ConsumerMigrationPolicy: MigrationUpgrade})
		k := newClient("k", "t")
		h.cgHeartbeat("g", k, nil)
		h.settleMixed("g", []*kclient{a, b}, []*cclient{k})
		k.epoch, k.owned = epochLeave, assignment{}
		h.cgHeartbeat("g", k, nil)
		if cg := h.consumerGroup("g"); cg == nil || len(cg.Members) != 2 {
			t.Fatalf("with downgrades off the group must stay a consumer group of 2: %+v", cg)
		}
		h.settleMixed("g", []*kclient{a, b}, nil)
		if a.owned.count()+b.owned.count() != 4 {
			t.Fatalf("a %v b %v", a.owned, b.owned)
		}
	})
}

// TestMigrationClassicMemberFenced: a classic member of a consumer group
// that does not rejoin within its rebalance timeout when told to is
// removed, and its partitions go to the others; one silent for its session
// timeout too.
func TestMigrationClassicMemberFenced(t *testing.T) {
	h, a, b := classicGroupOfTwo(t, Config{})
	k := newClient("k", "t")
	h.cgHeartbeat("g", k, nil)
	h.settleMixed("g", []*kclient{a, b}, []*cclient{k})
	// a new consumer member: a and b are told to rejoin; b never does
	k2 := newClient("k2", "t")
	h.cgHeartbeat("g", k2, nil)
	wantCode(t, "b told to rejoin", h.heartbeat("g", b.id, b.gen), kerr.RebalanceInProgress)
	for i := 0; i < 25; i++ {
		h.advance(time.Second)
		h.heartbeat("g", b.id, b.gen) // alive, but does not rejoin
		if h.heartbeat("g", a.id, a.gen) != 0 {
			h.classicRound("g", a)
		}
		h.cgHeartbeat("g", k, nil)
		h.cgHeartbeat("g", k2, nil)
	}
	if m := h.consumerGroup("g").Members[b.id]; m != nil {
		t.Fatalf("b never rejoined and is still a member: %+v", m)
	}
	b.owned = assignment{}
	h.settleMixed("g", []*kclient{a}, []*cclient{k, k2})
	if n := a.owned.count() + k.owned.count() + k2.owned.count(); n != 4 {
		t.Fatalf("%d of 4 partitions owned", n)
	}
	// a goes silent past its 10 s session
	h.advance(11 * time.Second)
	h.cgHeartbeat("g", k, nil)
	h.cgHeartbeat("g", k2, nil)
	if h.consumerGroup("g").Members[a.id] != nil {
		t.Fatal("a silent classic member outlived its session")
	}
	wantCode(t, "fenced classic member's heartbeat", h.heartbeat("g", a.id, a.gen), kerr.UnknownMemberID)
}

// TestMigrationMixedModel runs random schedules of classic and consumer
// members of one group (joins, leaves, crashes, failovers) and checks
// after every step that no partition is owned by two members, and that in
// the end everything is owned.
func TestMigrationMixedModel(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		if err := mixedRun(t, seed, false); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// TestMigrationStaticReplacementModel is the mixed model with static
// consumer-protocol members that now and then restart as classic members
// under the same instance id (a downgrade when it was the last one).
func TestMigrationStaticReplacementModel(t *testing.T) {
	downgrades := 0
	for seed := int64(1); seed <= 40; seed++ {
		if err := mixedRun(t, seed, true); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		downgrades += replacedDowngrades
	}
	if downgrades == 0 {
		t.Fatal("no static replacement downgraded the group in 40 seeds")
	}
	t.Logf("40 seeds: %d downgrades by a static replacement", downgrades)
}

// replacedDowngrades counts, in the last mixedRun, the static
// replacements that turned the group classic.
var replacedDowngrades int

// mixedRun is one random schedule; with replace, the consumer-protocol
// members are static and one is now and then replaced by a classic member
// with its instance id.
func mixedRun(t *testing.T, seed int64, replace bool) (err error) {
	replacedDowngrades = 0
	h, a, b := classicGroupOfTwo(t, Config{})
	rng := rand.New(rand.NewSource(seed))
	ks := []*kclient{a, b}
	var cs []*cclient
	next := 0
	// reupgrade: classic again, or empty: a consumer member (re)starts it
	reupgrade := func(step int) error {
		if cg := h.consumerGroup("g"); cg != nil && len(cg.Members) > 0 {
			return nil
		}
		next++
		c := newClient(fmt.Sprintf("c%d", next), "t")
		if replace {
			c.instance = kmsg.StringPtr("i-" + c.id)
		}
		cs = append(cs, c)
		if len(ks) == 0 {
			ks = append(ks, &kclient{owned: assignment{}})
		}
		if r := h.cgHeartbeat("g", c, nil); r.ErrorCode != 0 {
			// a classic group mid-rebalance converts too; a refusal is a bug here
			return fmt.Errorf("step %d: upgrade refused: %v", step, kerr.ErrorForCode(r.ErrorCode))
		}
		for _, k := range ks {
			k.owned = k.owned.clone() // still owned: it must give it up
		}
		return nil
	}
	// replaceOne: static consumer member cs[i] restarts as a classic one
	replaceOne := func(step, i int) error {
		c := cs[i]
		cs = append(cs[:i], cs[i+1:]...)
		k := &kclient{instance: c.instance, owned: assignment{}}
		ks = append(ks, k)
		jr := h.classicJoin("g", k).must()
		if jr.ErrorCode != 0 {
			return fmt.Errorf("step %d: static replacement join: %v", step, kerr.ErrorForCode(jr.ErrorCode))
		}
		if h.consumerGroup("g") == nil {
			replacedDowngrades++
		}
		h.classicSync("g", k, jr.Generation, nil).must()
		if err := overlap(ks, cs); err != nil {
			return fmt.Errorf("step %d: after %s replaced %s: %w", step, k.id, c.id, err)
		}
		return nil
	}
	for step := 0; step < 60; step++ {
		switch n := rng.Intn(20); {
		case n == 0 && len(cs) > 0: // a consumer member leaves
			i := rng.Intn(len(cs))
			c := cs[i]
			c.owned, c.epoch = assignment{}, epochLeave
			h.cgHeartbeat("g", c, nil)
			cs = append(cs[:i], cs[i+1:]...)
		case n == 1 && len(ks) > 0: // a classic member leaves
			i := rng.Intn(len(ks))
			k := ks[i]
			lr := kmsg.NewPtrLeaveGroupRequest()
			lr.Version, lr.Group = 5, "g"
			lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: k.id}}
			k.owned = assignment{}
			h.c.LeaveGroup(h.now, lr)
			ks = append(ks[:i], ks[i+1:]...)
		case n == 2 && len(cs) < 3:
			next++
			c := newClient(fmt.Sprintf("c%d", next), "t")
			if replace {
				c.instance = kmsg.StringPtr("i-" + c.id)
			}
			cs = append(cs, c)
		case n >= 5 && n <= 7 && replace && len(cs) > 0:
			if err := replaceOne(step, rng.Intn(len(cs))); err != nil {
				return err
			}
		case n == 3 && len(ks) < 3 && h.consumerGroup("g") != nil:
			ks = append(ks, &kclient{owned: assignment{}})
		case n == 4:
			h.failover()
		}
		cg := h.consumerGroup("g")
		rejoined := cg == nil || len(cg.Members) == 0
		if err := reupgrade(step); err != nil {
			return err
		}
		if replace && rejoined && rng.Intn(2) == 0 {
			// the member that just joined restarts as a classic one at
			// once, before the classic members heard of its join
			if err := replaceOne(step, len(cs)-1); err != nil {
				return err
			}
			if err := reupgrade(step); err != nil {
				return err
			}
		}
		for _, k := range ks {
			if k.id == "" || h.consumerGroup("g").Members[k.id] == nil {
				k.id, k.owned = "", assignment{}
				h.classicRound("g", k)
			} else if h.heartbeat("g", k.id, k.gen) != 0 {
				h.classicRound("g", k)
			}
			if err := overlap(ks, cs); err != nil {
				return fmt.Errorf("step %d: %w", step, err)
			}
		}
		for _, c := range cs {
			h.cgHeartbeat("g", c, nil)
			if err := overlap(ks, cs); err != nil {
				return fmt.Errorf("step %d: %w", step, err)
			}
		}
		h.advance(500 * time.Millisecond)
	}
	if len(ks)+len(cs) > 0 && h.consumerGroup("g") != nil {
		h.settleMixed("g", ks, cs)
		n := 0
		for _, k := range ks {
			n += k.owned.count()
		}
		for _, c := range cs {
			n += c.owned.count()
		}
		if n != 4 {
			return fmt.Errorf("settled with %d of 4 partitions owned", n)
		}
	}
	return nil
}

// TestMigrationSilentClassicMembersExpire: classic members that never
// speak again after the upgrade are fenced at the end of their (classic)
// session, and the consumer member gets everything.
func TestMigrationSilentClassicMembersExpire(t *testing.T) {
	h, a, b := classicGroupOfTwo(t, Config{})
	k := newClient("k", "t")
	h.cgHeartbeat("g", k, nil)
	if k.owned.count() != 0 || a.owned.count()+b.owned.count() != 4 {
		t.Fatalf("k took %v while the classic members own %v and %v", k.owned, a.owned, b.owned)
	}
	for i := 0; i < 12; i++ {
		h.advance(time.Second)
		h.cgHeartbeat("g", k, nil)
	}
	cg := h.consumerGroup("g")
	if len(cg.Members) != 1 {
		t.Fatalf("%d members 12 s after the classic ones went silent (session 10 s)", len(cg.Members))
	}
	h.settle("g", []*cclient{k})
	if k.owned.count() != 4 {
		t.Fatalf("k owns %v", k.owned)
	}
}

// upgradedWithStatic makes the classic group of two upgraded by a static
// consumer-protocol member (instance "i1") and settled.
func upgradedWithStatic(t *testing.T, cfg Config) (*harness, *kclient, *kclient, *cclient) {
	h, a, b := classicGroupOfTwo(t, cfg)
	k := newClient("k", "t")
	k.instance = kmsg.StringPtr("i1")
	wantCode(t, "static consumer member joins", h.cgHeartbeat("g", k, nil).ErrorCode, nil)
	h.settleMixed("g", []*kclient{a, b}, []*cclient{k})
	if k.owned.count() == 0 {
		t.Fatalf("k owns nothing after settling: a %v b %v", a.owned, b.owned)
	}
	return h, a, b, k
}

// TestMigrationDowngradeByStaticReplacement: a classic member with the
// instance id of the last consumer-protocol member replaces it (its
// process restarted with the classic protocol), and the group becomes
// classic (Kafka's validateOnlineDowngradeWithReplacedMemberId). Settled,
// it stays Stable with no rebalance: the new member's SyncGroup hands it
// what the replaced member owned, the others go on at their generation.
// The classic group survives a failover.
func TestMigrationDowngradeByStaticReplacement(t *testing.T) {
	h, a, b, k := upgradedWithStatic(t, Config{})
	epoch := h.consumerGroup("g").Epoch
	n := &kclient{instance: kmsg.StringPtr("i1"), owned: assignment{}}
	jr := h.classicJoin("g", n).must()
	wantCode(t, "classic static replacement join", jr.ErrorCode, nil)
	g := h.c.groups["g"]
	if g.cons != nil || len(g.members) != 3 || g.state != Stable || g.generation != epoch {
		t.Fatalf("after the replacement: consumer group %v, %d members, %s at generation %d (want classic, 3, Stable at %d)",
			g.cons != nil, len(g.members), g.state, g.generation, epoch)
	}
	if jr.Generation != epoch || jr.Protocol == nil || *jr.Protocol != *g.protocol {
		t.Fatalf("join answered generation %d protocol %v; group at %d with %v", jr.Generation, jr.Protocol, epoch, g.protocol)
	}
	h.classicSync("g", n, jr.Generation, nil).must()
	if !n.owned.equal(k.owned) {
		t.Fatalf("the replacing member got %v, the replaced one owned %v", n.owned, k.owned)
	}
	k.owned = assignment{} // the old process is gone
	if err := overlap([]*kclient{a, b, n}, nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*kclient{a, b, n} {
		wantCode(t, m.id+" heartbeat in the classic group", h.heartbeat("g", m.id, m.gen), nil)
	}
	if a.owned.count()+b.owned.count()+n.owned.count() != 4 {
		t.Fatalf("a %v b %v n %v: not all four owned", a.owned, b.owned, n.owned)
	}
	// the consumer-protocol member's old id is gone
	k.epoch = epochLeave
	wantCode(t, "the replaced member's heartbeat on the classic group", h.cgHeartbeat("g", k, nil).ErrorCode, kerr.GroupIDNotFound)
	checkOffsets(t, h, "after the downgrade")
	h.failover()
	if g := h.c.groups["g"]; g.cons != nil || len(g.members) != 3 || g.byID[n.id] == nil {
		t.Fatalf("after failover: consumer group %v, %d members", g.cons != nil, len(g.members))
	}
}

// TestMigrationDowngradeByStaticReplacementReconciling: the replacement
// comes while the group still reconciles (a classic member just left):
// the group becomes classic with what each member owns, and rebalances at
// once; after the classic rebalance no partition is owned twice.
func TestMigrationDowngradeByStaticReplacementReconciling(t *testing.T) {
	h, a, b, k := upgradedWithStatic(t, Config{})
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version, lr.Group = 5, "g"
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: b.id}}
	h.c.LeaveGroup(h.now, lr)
	b.owned = assignment{}
	if s := h.consumerGroup("g").stateName(); s == "Stable" {
		t.Fatalf("after a leave the group is %s", s)
	}
	n := &kclient{instance: kmsg.StringPtr("i1"), owned: assignment{}}
	jr := h.classicJoin("g", n).must()
	wantCode(t, "classic static replacement join", jr.ErrorCode, nil)
	g := h.c.groups["g"]
	if g.cons != nil || g.state != PreparingRebalance {
		t.Fatalf("after the replacement: consumer group %v, state %s (want classic, PreparingRebalance)", g.cons != nil, g.state)
	}
	k.owned = assignment{}
	if code := h.classicSync("g", n, jr.Generation, nil).must().ErrorCode; code == 0 {
		t.Fatal("a sync during the downgrade's rebalance was answered")
	}
	// the classic rebalance: both rejoin, the leader assigns
	ra, rn := h.classicJoin("g", a), h.classicJoin("g", n)
	ja, jn := ra.must(), rn.must()
	if ja.ErrorCode != 0 || jn.ErrorCode != 0 || ja.Generation != jn.Generation {
		t.Fatalf("rejoins: %d %d at %d %d", ja.ErrorCode, jn.ErrorCode, ja.Generation, jn.Generation)
	}
	leader, other := a, n
	if ja.LeaderID != a.id {
		leader, other = n, a
	}
	plan := map[string]assignment{leader.id: {"t": {0, 1}}, other.id: {"t": {2, 3}}}
	ro := h.classicSync("g", other, ja.Generation, nil)
	h.classicSync("g", leader, ja.Generation, plan).must()
	h.applySync(other, ja.Generation, ro.must())
	if h.state("g") != "Stable" || a.owned.count()+n.owned.count() != 4 {
		t.Fatalf("after the classic rebalance: %s, a %v n %v", h.state("g"), a.owned, n.owned)
	}
	if err := overlap([]*kclient{a, n}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestMigrationStaticReplacementNoDowngrade: with downgrades off, or with
// another consumer-protocol member left, the replacing classic member
// stays in the consumer group with the replaced member's assignment.
func TestMigrationStaticReplacementNoDowngrade(t *testing.T) {
	t.Run("policy upgrade", func(t *testing.T) {
		h, a, b, k := upgradedWithStatic(t, Config{ConsumerMigrationPolicy: MigrationUpgrade})
		n := &kclient{instance: kmsg.StringPtr("i1"), owned: assignment{}}
		h.classicRound("g", n)
		cg := h.consumerGroup("g")
		if cg == nil || len(cg.Members) != 3 || cg.Members[n.id] == nil || cg.Members[n.id].Classic == nil {
			t.Fatalf("with downgrades off the group must stay a consumer group of 3 classic members: %+v", cg)
		}
		if !n.owned.equal(k.owned) {
			t.Fatalf("n got %v, k owned %v", n.owned, k.owned)
		}
		k.owned = assignment{}
		h.settleMixed("g", []*kclient{a, b, n}, nil)
	})
	t.Run("another consumer member", func(t *testing.T) {
		h, a, b, k := upgradedWithStatic(t, Config{})
		k2 := newClient("k2", "t")
		h.cgHeartbeat("g", k2, nil)
		h.settleMixed("g", []*kclient{a, b}, []*cclient{k, k2})
		n := &kclient{instance: kmsg.StringPtr("i1"), owned: assignment{}}
		h.classicRound("g", n)
		if cg := h.consumerGroup("g"); cg == nil || cg.Members[k2.id] == nil || cg.Members[n.id] == nil {
			t.Fatalf("with a consumer member left the group must stay a consumer group: %+v", cg)
		}
		k.owned = assignment{}
		h.settleMixed("g", []*kclient{a, b, n}, []*cclient{k2})
	})
}

// TestMigrationStaticConsumerReplacesClassic: a consumer-protocol member
// with the instance id of a live classic member replaces it at once (the
// classic protocol has no static leave; Kafka does the same), upgrading
// the classic group; the new member takes over what the classic one owned.
func TestMigrationStaticConsumerReplacesClassic(t *testing.T) {
	h := newHarness(t, Config{})
	h.setTopic("t", 4)
	a := &kclient{instance: kmsg.StringPtr("s1"), owned: assignment{}}
	ra := h.classicJoin("g", a)
	h.advance(3*h.c.cfg.InitialRebalanceDelay + time.Second)
	ja := ra.must()
	wantCode(t, "static classic join", ja.ErrorCode, nil)
	a.id = ja.MemberID
	wantCode(t, "static classic sync", h.classicSync("g", a, ja.Generation, map[string]assignment{a.id: {"t": {0, 1, 2, 3}}}).must().ErrorCode, nil)
	k := newClient("k", "t")
	k.instance = kmsg.StringPtr("s1")
	wantCode(t, "consumer member replaces the classic one", h.cgHeartbeat("g", k, nil).ErrorCode, nil)
	cg := h.consumerGroup("g")
	if cg == nil || len(cg.Members) != 1 || cg.Members[k.id] == nil || cg.Members[k.id].Classic != nil {
		t.Fatalf("after the replacement: %+v", cg)
	}
	if k.owned.count() != 4 {
		t.Fatalf("k took over %v, want all four (a owned %v; member %+v)", k.owned, a.owned, cg.Members[k.id])
	}
	wantCode(t, "the replaced classic member's heartbeat", h.heartbeat("g", a.id, a.gen), kerr.UnknownMemberID)
}
