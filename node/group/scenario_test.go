package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testConfig has a short initial delay and session minimum so scenarios
// stay small; the timing rules are the same as with Kafka's defaults.
var testConfig = Config{InitialRebalanceDelay: 100 * time.Millisecond, SessionTimeoutMin: time.Second}

// stableGroup brings n dynamic members into a Stable group and returns
// their ids (the first is the leader) and the generation. Member i is
// assigned "a<i>".
func stableGroup(t *testing.T, h *harness, name string, n int) ([]string, int32) {
	t.Helper()
	ids := make([]string, n)
	joins := make([]*reply[kmsg.JoinGroupResponse], n)
	for i := range ids {
		ids[i], joins[i] = h.joinNew(name)
	}
	h.advance(time.Second)
	gen := joins[0].must().Generation
	for i, j := range joins {
		r := j.must()
		wantCode(t, "join", r.ErrorCode, nil)
		if r.Generation != gen || r.LeaderID != ids[0] || r.MemberID != ids[i] {
			t.Fatalf("join %d: gen %d leader %q member %q; want gen %d leader %q member %q", i, r.Generation, r.LeaderID, r.MemberID, gen, ids[0], ids[i])
		}
	}
	assign := map[string]string{}
	for i, id := range ids {
		assign[id] = fmt.Sprintf("a%d", i)
	}
	syncs := make([]*reply[kmsg.SyncGroupResponse], n)
	for i := n - 1; i >= 0; i-- { // followers first, leader last
		var a map[string]string
		if i == 0 {
			a = assign
		}
		syncs[i] = h.sync(name, ids[i], gen, a)
	}
	for i, s := range syncs {
		r := s.must()
		wantCode(t, "sync", r.ErrorCode, nil)
		if string(r.MemberAssignment) != assign[ids[i]] {
			t.Fatalf("member %d assignment %q, want %q", i, r.MemberAssignment, assign[ids[i]])
		}
	}
	if got := h.state(name); got != "Stable" {
		t.Fatalf("state %s, want Stable", got)
	}
	return ids, gen
}

func TestThreeMembersJoinSyncStable(t *testing.T) {
	h := newHarness(t, testConfig)
	var ids []string
	var joins []*reply[kmsg.JoinGroupResponse]
	for i := 0; i < 3; i++ {
		id, j := h.joinNew("g")
		ids, joins = append(ids, id), append(joins, j)
		h.advance(10 * time.Millisecond)
	}
	if got := h.state("g"); got != "PreparingRebalance" {
		t.Fatalf("state %s, want PreparingRebalance", got)
	}
	// The initial delay (100ms) was extended once because members kept
	// arriving: nobody is answered at 150ms, everybody by 200ms.
	h.advance(120 * time.Millisecond)
	for i, j := range joins {
		if !j.parked() {
			t.Fatalf("join %d answered during the initial delay", i)
		}
	}
	h.advance(50 * time.Millisecond)
	for i, j := range joins {
		r := j.must()
		wantCode(t, "join", r.ErrorCode, nil)
		if r.Generation != 1 || r.LeaderID != ids[0] || *r.Protocol != "range" || *r.ProtocolType != "consumer" {
			t.Fatalf("join %d: %+v", i, r)
		}
		wantMembers := 0
		if i == 0 {
			wantMembers = 3
		}
		if len(r.Members) != wantMembers {
			t.Fatalf("join %d got %d members, want %d", i, len(r.Members), wantMembers)
		}
	}
	if got := h.state("g"); got != "CompletingRebalance" {
		t.Fatalf("state %s, want CompletingRebalance", got)
	}
	// Followers park until the leader's assignment is written.
	h.log.Hold = true
	s2, s3 := h.sync("g", ids[1], 1, nil), h.sync("g", ids[2], 1, nil)
	wantCode(t, "heartbeat during CompletingRebalance", h.heartbeat("g", ids[1], 1), nil)
	s1 := h.sync("g", ids[0], 1, map[string]string{ids[0]: "p0", ids[1]: "p1", ids[2]: "p2"})
	if !s1.parked() || !s2.parked() || !s3.parked() {
		t.Fatal("a sync was answered before the assignment was written")
	}
	h.log.CommitAll()
	for i, s := range []*reply[kmsg.SyncGroupResponse]{s1, s2, s3} {
		r := s.must()
		wantCode(t, "sync", r.ErrorCode, nil)
		if want := fmt.Sprintf("p%d", i); string(r.MemberAssignment) != want {
			t.Fatalf("member %d got %q, want %q", i, r.MemberAssignment, want)
		}
	}
	if got := h.state("g"); got != "Stable" {
		t.Fatalf("state %s, want Stable", got)
	}
	for _, id := range ids {
		wantCode(t, "heartbeat", h.heartbeat("g", id, 1), nil)
	}
	d := h.c.DescribeGroup("g", false)
	if d.State != "Stable" || d.Protocol != "range" || len(d.Members) != 3 || string(d.Members[1].MemberAssignment) != "p1" {
		t.Fatalf("describe: %+v", d)
	}
}

func TestHeartbeatRebalanceInProgressThenRejoin(t *testing.T) {
	h := newHarness(t, testConfig)
	ids, gen := stableGroup(t, h, "g", 3)
	id4, j4 := h.joinNew("g")
	if got := h.state("g"); got != "PreparingRebalance" {
		t.Fatalf("state %s, want PreparingRebalance", got)
	}
	for _, id := range ids {
		wantCode(t, "heartbeat", h.heartbeat("g", id, gen), kerr.RebalanceInProgress)
	}
	// A commit is still accepted while the group prepares (members commit
	// before they rejoin).
	wantCode(t, "commit while preparing", commitCode(h.commit("g", ids[1], gen, "t", 0, 5).must()), nil)
	rejoins := []*reply[kmsg.JoinGroupResponse]{}
	for i, id := range ids {
		rejoins = append(rejoins, h.join(joinSpec{group: "g", member: id}))
		if i < 2 && !rejoins[i].parked() {
			t.Fatal("rejoin answered before every member rejoined")
		}
	}
	// The last rejoin completes the phase at once: no initial delay for a
	// group that was not empty.
	all := append(rejoins, j4)
	for i, j := range all {
		r := j.must()
		wantCode(t, "rejoin", r.ErrorCode, nil)
		if r.Generation != gen+1 || r.LeaderID != ids[0] {
			t.Fatalf("rejoin %d: gen %d leader %s", i, r.Generation, r.LeaderID)
		}
	}
	if n := len(all[0].must().Members); n != 4 {
		t.Fatalf("leader sees %d members, want 4 (with %s)", n, id4)
	}
	wantCode(t, "old generation heartbeat", h.heartbeat("g", ids[1], gen), kerr.IllegalGeneration)
}

func TestSessionExpiryRemovesSilentMember(t *testing.T) {
	h := newHarness(t, testConfig)
	ids, gen := stableGroup(t, h, "g", 3)
	// Members 0 and 1 heartbeat every 3s; member 2 is silent. Its session
	// (10s) ends and the group rebalances without it.
	for i := 0; i < 4; i++ {
		h.advance(3 * time.Second)
		codes := []int16{h.heartbeat("g", ids[0], gen), h.heartbeat("g", ids[1], gen)}
		if i < 3 && (codes[0] != 0 || codes[1] != 0) {
			t.Fatalf("heartbeat at %v: %v", h.now, codes)
		}
		if i == 3 && (codes[0] != kerr.RebalanceInProgress.Code || codes[1] != kerr.RebalanceInProgress.Code) {
			t.Fatalf("after member 2's session ended, heartbeats got %v, want REBALANCE_IN_PROGRESS", codes)
		}
	}
	wantCode(t, "expired member heartbeat", h.heartbeat("g", ids[2], gen), kerr.UnknownMemberID)
	j0 := h.join(joinSpec{group: "g", member: ids[0]})
	j1 := h.join(joinSpec{group: "g", member: ids[1]})
	if r := j0.must(); r.Generation != gen+1 || len(r.Members) != 2 {
		t.Fatalf("leader rejoin: gen %d, %d members", r.Generation, len(r.Members))
	}
	wantCode(t, "follower rejoin", j1.must().ErrorCode, nil)
}

func TestStaticMemberRestartCausesNoRebalance(t *testing.T) {
	h := newHarness(t, testConfig)
	joins := map[string]*reply[kmsg.JoinGroupResponse]{}
	for _, inst := range []string{"i0", "i1", "i2"} {
		// Static members get no MEMBER_ID_REQUIRED round trip.
		joins[inst] = h.join(joinSpec{group: "g", instance: inst})
	}
	h.advance(time.Second)
	ids := map[string]string{}
	for inst, j := range joins {
		r := j.must()
		wantCode(t, "static join", r.ErrorCode, nil)
		ids[inst] = r.MemberID
	}
	leader := joins["i0"].must().LeaderID
	if leader != ids["i0"] {
		t.Fatalf("leader %s, want i0's %s", leader, ids["i0"])
	}
	h.sync("g", ids["i1"], 1, nil)
	h.sync("g", ids["i2"], 1, nil)
	h.sync("g", ids["i0"], 1, map[string]string{ids["i0"]: "A", ids["i1"]: "B", ids["i2"]: "C"}).must()
	writes := h.log.Writes

	// i1 restarts within its session timeout: a fresh JoinGroup with no
	// member id. It is answered at once with the generation in force.
	r := h.join(joinSpec{group: "g", instance: "i1", version: 8}).must()
	wantCode(t, "restart join", r.ErrorCode, nil)
	if r.Generation != 1 || r.MemberID == ids["i1"] || r.LeaderID != leader || len(r.Members) != 0 {
		t.Fatalf("restart join: %+v", r)
	}
	if got := h.state("g"); got != "Stable" {
		t.Fatalf("state %s after a static restart, want Stable (no rebalance)", got)
	}
	if h.log.Writes != writes+1 {
		t.Fatalf("%d writes for the replacement, want 1", h.log.Writes-writes)
	}
	for _, inst := range []string{"i0", "i2"} {
		wantCode(t, "other member heartbeat", h.heartbeat("g", ids[inst], 1), nil)
	}
	wantCode(t, "old incarnation heartbeat", h.c.Heartbeat(h.now, staticHeartbeat("g", ids["i1"], "i1", 1)).ErrorCode, kerr.FencedInstanceID)
	s := h.sync("g", r.MemberID, 1, nil).must()
	if string(s.MemberAssignment) != "B" {
		t.Fatalf("restarted member's assignment %q, want B (kept)", s.MemberAssignment)
	}

	// The leader restarts with v9: it is told to skip the assignment but
	// gets the member list, and it still leads.
	r0 := h.join(joinSpec{group: "g", instance: "i0", version: 9}).must()
	if !r0.SkipAssignment || r0.LeaderID != r0.MemberID || len(r0.Members) != 3 || h.state("g") != "Stable" {
		t.Fatalf("leader restart v9: skip=%v leader=%s member=%s members=%d state=%s", r0.SkipAssignment, r0.LeaderID, r0.MemberID, len(r0.Members), h.state("g"))
	}
}

func staticHeartbeat(group, member, inst string, gen int32) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.Generation, req.InstanceID = group, member, gen, &inst
	return req
}

func TestStaticMemberSessionExpiryRebalances(t *testing.T) {
	h := newHarness(t, testConfig)
	j0 := h.join(joinSpec{group: "g", instance: "i0"})
	j1 := h.join(joinSpec{group: "g", instance: "i1"})
	h.advance(time.Second)
	id0, id1 := j0.must().MemberID, j1.must().MemberID
	h.sync("g", id1, 1, nil)
	h.sync("g", id0, 1, map[string]string{id0: "A", id1: "B"})
	// i1 is gone for longer than its session timeout: it is removed.
	for i := 0; i < 4; i++ {
		h.advance(3 * time.Second)
		h.heartbeat("g", id0, 1)
	}
	if code := h.heartbeat("g", id0, 1); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat %v, want REBALANCE_IN_PROGRESS after i1's session ended", kerr.ErrorForCode(code))
	}
}

func TestLeaveGroup(t *testing.T) {
	h := newHarness(t, testConfig)
	ids, gen := stableGroup(t, h, "g", 3)
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 4
	req.Group = "g"
	for _, id := range []string{ids[1], "nobody"} {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		req.Members = append(req.Members, m)
	}
	resp := h.c.LeaveGroup(h.now, req)
	wantCode(t, "leave top-level", resp.ErrorCode, nil)
	wantCode(t, "leave member", resp.Members[0].ErrorCode, nil)
	wantCode(t, "leave unknown", resp.Members[1].ErrorCode, kerr.UnknownMemberID)
	wantCode(t, "heartbeat after leave", h.heartbeat("g", ids[0], gen), kerr.RebalanceInProgress)

	// v0 leaves name one member, errors at the top level.
	v0 := kmsg.NewPtrLeaveGroupRequest()
	v0.Group, v0.MemberID = "g", ids[2]
	wantCode(t, "v0 leave", h.c.LeaveGroup(h.now, v0).ErrorCode, nil)
	v0.MemberID = ids[2]
	wantCode(t, "v0 leave again", h.c.LeaveGroup(h.now, v0).ErrorCode, kerr.UnknownMemberID)

	// The last member leaves: the group turns Empty in a new generation,
	// written to the log.
	v0.MemberID = ids[0]
	before := len(h.log.Committed)
	wantCode(t, "last leave", h.c.LeaveGroup(h.now, v0).ErrorCode, nil)
	h.advance(time.Millisecond)
	if got := h.state("g"); got != "Empty" {
		t.Fatalf("state %s, want Empty", got)
	}
	if len(h.log.Committed) != before+1 {
		t.Fatalf("empty generation not written")
	}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(h.log.Committed[before].Value); err != nil || v.Generation != gen+1 || len(v.Members) != 0 {
		t.Fatalf("empty group record: gen %d, %d members, err %v", v.Generation, len(v.Members), err)
	}
}

func TestLeaveByInstanceID(t *testing.T) {
	h := newHarness(t, testConfig)
	j := h.join(joinSpec{group: "g", instance: "i0"})
	h.advance(time.Second)
	id := j.must().MemberID
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 5
	req.Group = "g"
	m := kmsg.NewLeaveGroupRequestMember()
	inst := "i0"
	m.InstanceID = &inst
	req.Members = []kmsg.LeaveGroupRequestMember{m}
	wantCode(t, "leave by instance", h.c.LeaveGroup(h.now, req).Members[0].ErrorCode, nil)
	wantCode(t, "heartbeat after", h.heartbeat("g", id, 1), kerr.UnknownMemberID)
}

func TestOffsetCommitChecks(t *testing.T) {
	h := newHarness(t, testConfig)
	h.known = map[string]int32{"t": 2}

	// Simple commits (generation -1) to a group nobody joined.
	wantCode(t, "simple commit", commitCode(h.commit("simple", "", -1, "t", 0, 7).must()), nil)
	if off, code := h.fetch("simple", "t", 0, false); off != 7 || code != 0 {
		t.Fatalf("fetch %d %d", off, code)
	}
	wantCode(t, "commit to unknown group with a generation", commitCode(h.commit("nogroup", "m", 3, "t", 0, 1).must()), kerr.IllegalGeneration)
	wantCode(t, "unknown partition", commitCode(h.commit("simple", "", -1, "t", 9, 1).must()), kerr.UnknownTopicOrPartition)

	ids, gen := stableGroup(t, h, "g", 2)
	wantCode(t, "member commit", commitCode(h.commit("g", ids[1], gen, "t", 1, 42).must()), nil)
	wantCode(t, "stale generation", commitCode(h.commit("g", ids[1], gen-1, "t", 1, 1).must()), kerr.IllegalGeneration)
	wantCode(t, "unknown member", commitCode(h.commit("g", "stranger", gen, "t", 1, 1).must()), kerr.UnknownMemberID)
	wantCode(t, "simple commit to a group with members", commitCode(h.commit("g", "", -1, "t", 1, 1).must()), kerr.UnknownMemberID)

	// During CompletingRebalance a member must finish the rebalance first.
	for _, id := range ids {
		h.join(joinSpec{group: "g", member: id}) // leader rejoin: rebalance
	}
	wantCode(t, "commit while completing", commitCode(h.commit("g", ids[1], gen+1, "t", 1, 1).must()), kerr.RebalanceInProgress)

	// A commit is answered only once written; until then a stable fetch
	// says the offset is unstable.
	h.log.Hold = true
	h.sync("g", ids[1], gen+1, nil)
	h.sync("g", ids[0], gen+1, map[string]string{ids[0]: "x", ids[1]: "y"})
	h.log.CommitAll()
	c := h.commit("g", ids[1], gen+1, "t", 1, 50)
	if !c.parked() {
		t.Fatal("commit answered before it was written")
	}
	if _, code := h.fetch("g", "t", 1, true); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("stable fetch during a pending commit: %v", kerr.ErrorForCode(code))
	}
	if off, _ := h.fetch("g", "t", 1, false); off != 42 {
		t.Fatalf("fetch during a pending commit: %d, want the previous 42", off)
	}
	h.log.CommitAll()
	wantCode(t, "commit", commitCode(c.must()), nil)
	if off, code := h.fetch("g", "t", 1, true); off != 50 || code != 0 {
		t.Fatalf("fetch after commit: %d %v", off, kerr.ErrorForCode(code))
	}
	// A failed write leaves the offset as it was.
	c = h.commit("g", ids[1], gen+1, "t", 1, 60)
	h.log.FailAll(kerr.NotLeaderForPartition)
	wantCode(t, "commit on a lost partition", commitCode(c.must()), kerr.NotCoordinator)
	if off, _ := h.fetch("g", "t", 1, false); off != 50 {
		t.Fatalf("offset after failed commit %d, want 50", off)
	}
	if off, _ := h.fetch("g", "t", 0, false); off != -1 {
		t.Fatalf("uncommitted partition offset %d, want -1", off)
	}
}

func TestOffsetMetadataTooLarge(t *testing.T) {
	h := newHarness(t, Config{OffsetMetadataBytesMax: 4, SessionTimeoutMin: time.Second})
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 2
	req.Group = "g"
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	for i, md := range []string{"ok", "too long"} {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.Metadata = int32(i), 1, &md
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	var resp *kmsg.OffsetCommitResponse
	h.c.OffsetCommit(h.now, req, func(r *kmsg.OffsetCommitResponse) { resp = r })
	wantCode(t, "small metadata", resp.Topics[0].Partitions[0].ErrorCode, nil)
	wantCode(t, "large metadata", resp.Topics[0].Partitions[1].ErrorCode, kerr.OffsetMetadataTooLarge)
}

func TestFailoverRebuildsGroupsAndOffsets(t *testing.T) {
	h := newHarness(t, testConfig)
	ids, gen := stableGroup(t, h, "g", 2)
	h.commit("g", ids[0], gen, "t", 0, 10).must()
	h.commit("g", ids[1], gen, "t", 1, 20).must()
	h.commit("g", ids[1], gen, "t", 1, 21).must()
	h.commit("simple", "", -1, "u", 3, 33).must()

	h.failover()

	if off, _ := h.fetch("g", "t", 1, true); off != 21 {
		t.Fatalf("offset after failover %d, want the last commit 21", off)
	}
	if off, _ := h.fetch("simple", "u", 3, true); off != 33 {
		t.Fatalf("simple group offset after failover %d, want 33", off)
	}
	d := h.c.DescribeGroup("g", false)
	if d.State != "Stable" || len(d.Members) != 2 || string(d.Members[1].MemberAssignment) != "a1" {
		t.Fatalf("group after failover: %+v", d)
	}
	// Members that find the new coordinator keep their generation.
	wantCode(t, "heartbeat after failover", h.heartbeat("g", ids[0], gen), nil)
	wantCode(t, "commit after failover", commitCode(h.commit("g", ids[1], gen, "t", 1, 22).must()), nil)
	// A member that never comes back is expired by its session.
	h.advance(6 * time.Second)
	h.heartbeat("g", ids[0], gen)
	h.advance(6 * time.Second)
	wantCode(t, "heartbeat after the other member expired", h.heartbeat("g", ids[0], gen), kerr.RebalanceInProgress)
}

func TestDeleteGroups(t *testing.T) {
	h := newHarness(t, testConfig)
	ids, gen := stableGroup(t, h, "g", 1)
	h.commit("g", ids[0], gen, "t", 0, 10).must()
	code := int16(-1)
	h.c.DeleteGroup(h.now, "g", func(c int16) { code = c })
	wantCode(t, "delete non-empty", code, kerr.NonEmptyGroup)
	h.c.DeleteGroup(h.now, "nope", func(c int16) { code = c })
	wantCode(t, "delete unknown", code, kerr.GroupIDNotFound)

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = "g", ids[0]
	h.c.LeaveGroup(h.now, leave)
	h.advance(time.Millisecond)
	h.log.Hold = true
	code = -1
	h.c.DeleteGroup(h.now, "g", func(c int16) { code = c })
	if code != -1 {
		t.Fatal("delete answered before its tombstones were written")
	}
	if got := h.state("g"); got != "Dead" {
		t.Fatalf("state %s, want Dead", got)
	}
	h.log.CommitAll()
	wantCode(t, "delete empty", code, nil)
	h.failover()
	if got := h.state("g"); got != "Dead" {
		t.Fatalf("deleted group came back after failover: %s", got)
	}
	if off, _ := h.fetch("g", "t", 0, false); off != -1 {
		t.Fatalf("deleted group's offset %d after failover", off)
	}
}

func TestOffsetDelete(t *testing.T) {
	h := newHarness(t, testConfig)
	ids, gen := stableGroup(t, h, "g", 1) // subscribed to "t"
	h.commit("g", ids[0], gen, "t", 0, 1).must()
	h.commit("g", ids[0], gen, "old", 0, 2).must()
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = "g"
	for _, topic := range []string{"t", "old"} {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		req.Topics = append(req.Topics, rt)
	}
	var resp *kmsg.OffsetDeleteResponse
	h.c.OffsetDelete(h.now, req, func(r *kmsg.OffsetDeleteResponse) { resp = r })
	wantCode(t, "top level", resp.ErrorCode, nil)
	wantCode(t, "subscribed topic", resp.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)
	wantCode(t, "other topic", resp.Topics[1].Partitions[0].ErrorCode, nil)
	if off, _ := h.fetch("g", "old", 0, false); off != -1 {
		t.Fatalf("deleted offset still %d", off)
	}
	if off, _ := h.fetch("g", "t", 0, false); off != 1 {
		t.Fatalf("kept offset %d, want 1", off)
	}
	h.failover()
	if off, _ := h.fetch("g", "old", 0, false); off != -1 {
		t.Fatalf("deleted offset back after failover: %d", off)
	}
	req.Group = "missing"
	h.c.OffsetDelete(h.now, req, func(r *kmsg.OffsetDeleteResponse) { resp = r })
	wantCode(t, "unknown group", resp.ErrorCode, kerr.GroupIDNotFound)
}

func TestProtocolSelection(t *testing.T) {
	h := newHarness(t, testConfig)
	// Votes: m0 prefers sticky, m1 and m2 prefer range; all support both.
	j0 := h.join(joinSpec{group: "g", instance: "0", protocols: []string{"sticky", "range"}})
	j1 := h.join(joinSpec{group: "g", instance: "1", protocols: []string{"range", "sticky"}})
	bad := h.join(joinSpec{group: "g", instance: "x", protocols: []string{"roundrobin"}}).must()
	wantCode(t, "join with no common protocol", bad.ErrorCode, kerr.InconsistentGroupProtocol)
	j2 := h.join(joinSpec{group: "g", instance: "2", protocols: []string{"range", "sticky"}})
	h.advance(time.Second)
	for _, j := range []*reply[kmsg.JoinGroupResponse]{j0, j1, j2} {
		if p := *j.must().Protocol; p != "range" {
			t.Fatalf("protocol %s, want range (2 votes to 1)", p)
		}
	}
	// A tie goes to the first member's preference.
	h2 := newHarness(t, testConfig)
	k0 := h2.join(joinSpec{group: "g", instance: "0", protocols: []string{"sticky", "range"}})
	h2.join(joinSpec{group: "g", instance: "1", protocols: []string{"range", "sticky"}})
	h2.advance(time.Second)
	if p := *k0.must().Protocol; p != "sticky" {
		t.Fatalf("tie chose %s, want the first member's sticky", p)
	}
}

func TestCloseAnswersParkedRequests(t *testing.T) {
	h := newHarness(t, testConfig)
	_, j := h.joinNew("g")
	h.c.Close()
	wantCode(t, "parked join at close", j.must().ErrorCode, kerr.NotCoordinator)
	h.advance(time.Minute) // stale timers do nothing
}

func TestRebalanceTimeoutDropsDynamicKeepsStatic(t *testing.T) {
	h := newHarness(t, testConfig)
	js := h.join(joinSpec{group: "g", instance: "s", rebalance: 5 * time.Second})
	idD, jd := h.joinNew("g")
	h.advance(time.Second)
	idS := js.must().MemberID
	jd.must()
	h.sync("g", idD, 1, nil)
	h.sync("g", idS, 1, map[string]string{idS: "S", idD: "D"}).must()

	// A third member joins; only the leader (static) rejoins. The dynamic
	// member keeps heartbeating (REBALANCE_IN_PROGRESS) but never rejoins:
	// at the longest rebalance timeout (20s) it is dropped.
	_, j3 := h.joinNew("g")
	rs := h.join(joinSpec{group: "g", member: idS, instance: "s", rebalance: 5 * time.Second})
	for i := 0; i < 6; i++ {
		h.advance(3 * time.Second)
		wantCode(t, "heartbeat while not rejoining", h.heartbeat("g", idD, 1), kerr.RebalanceInProgress)
	}
	if !rs.parked() {
		t.Fatal("rebalance completed before the timeout although a member had not rejoined")
	}
	h.advance(3 * time.Second)
	if r := rs.must(); r.Generation != 2 || len(r.Members) != 2 {
		t.Fatalf("after timeout: gen %d with %d members, want 2 with 2", r.Generation, len(r.Members))
	}
	j3.must()
	wantCode(t, "dropped member heartbeat", h.heartbeat("g", idD, 1), kerr.UnknownMemberID)
}

func TestPendingSyncExpiryRemovesMember(t *testing.T) {
	h := newHarness(t, testConfig)
	id0, j0 := h.joinNew("g")
	id1, j1 := h.joinNew("g")
	h.advance(time.Second)
	gen := j0.must().Generation
	j1.must()
	// Only the leader syncs; the follower never does. After the rebalance
	// timeout it is removed and the leader is sent back to rejoin.
	h.sync("g", id0, gen, map[string]string{id0: "x", id1: "y"}).must()
	for i := 0; i < 8; i++ {
		h.advance(3 * time.Second)
		h.heartbeat("g", id1, gen) // heartbeats do not count as a sync
		h.heartbeat("g", id0, gen)
	}
	wantCode(t, "leader heartbeat", h.heartbeat("g", id0, gen), kerr.RebalanceInProgress)
	wantCode(t, "unsynced member heartbeat", h.heartbeat("g", id1, gen), kerr.UnknownMemberID)
}

func TestRejoinRulesForIncrementalRebalances(t *testing.T) {
	h := newHarness(t, testConfig)
	ids, gen := stableGroup(t, h, "g", 2)
	// A follower rejoining with unchanged metadata gets the generation in
	// force back, and nothing rebalances.
	r := h.join(joinSpec{group: "g", member: ids[1]}).must()
	if r.Generation != gen || h.state("g") != "Stable" {
		t.Fatalf("follower rejoin: gen %d state %s", r.Generation, h.state("g"))
	}
	// Cooperative-sticky: after revoking, every member rejoins again with
	// its new owned partitions (changed metadata): a second rebalance.
	j0 := h.join(joinSpec{group: "g", member: ids[0], topics: []string{"t", "u"}})
	j1 := h.join(joinSpec{group: "g", member: ids[1], topics: []string{"t", "u"}})
	if j0.must().Generation != gen+1 || j1.must().Generation != gen+1 {
		t.Fatal("first incremental rebalance")
	}
	h.sync("g", ids[1], gen+1, nil)
	h.sync("g", ids[0], gen+1, map[string]string{ids[0]: "keep0", ids[1]: "keep1"}).must()
	j0 = h.join(joinSpec{group: "g", member: ids[0], topics: []string{"t", "u"}})
	j1 = h.join(joinSpec{group: "g", member: ids[1], topics: []string{"u", "t"}})
	if j0.must().Generation != gen+2 || j1.must().Generation != gen+2 {
		t.Fatal("second incremental rebalance")
	}
	s1 := h.sync("g", ids[1], gen+2, nil)
	h.sync("g", ids[0], gen+2, map[string]string{ids[0]: "keep0+new", ids[1]: "keep1"}).must()
	if string(s1.must().MemberAssignment) != "keep1" {
		t.Fatalf("member 1 got %q", s1.must().MemberAssignment)
	}
}

func TestPendingMemberIDHoldsRebalance(t *testing.T) {
	h := newHarness(t, testConfig)
	ids, gen := stableGroup(t, h, "g", 1)
	// A new member gets an id but does not join with it yet; the leader's
	// rejoin waits for it (up to its session timeout).
	first := h.join(joinSpec{group: "g"}).must()
	r0 := h.join(joinSpec{group: "g", member: ids[0]})
	if !r0.parked() {
		t.Fatal("rebalance completed while a handed-out member id had not joined")
	}
	r1 := h.join(joinSpec{group: "g", member: first.MemberID})
	if r0.must().Generation != gen+1 || len(r0.must().Members) != 2 {
		t.Fatal("rebalance with the new member")
	}
	r1.must()
}

func TestJoinValidation(t *testing.T) {
	h := newHarness(t, testConfig)
	wantCode(t, "empty group id", h.join(joinSpec{group: ""}).must().ErrorCode, kerr.InvalidGroupID)
	wantCode(t, "short session", h.join(joinSpec{group: "g", session: 10 * time.Millisecond}).must().ErrorCode, kerr.InvalidSessionTimeout)
	wantCode(t, "unknown member", h.join(joinSpec{group: "g", member: "ghost"}).must().ErrorCode, kerr.UnknownMemberID)
	if got := h.state("g"); got != "Dead" {
		t.Fatalf("failed joins left a group behind: %s", got)
	}
	max := newHarness(t, Config{MembersMax: 1, InitialRebalanceDelay: -1, SessionTimeoutMin: time.Second})
	max.joinNew("g")
	wantCode(t, "over group.max.size", max.join(joinSpec{group: "g"}).must().ErrorCode, kerr.GroupMaxSizeReached)
}

func TestListAndDescribe(t *testing.T) {
	h := newHarness(t, testConfig)
	stableGroup(t, h, "b", 1)
	h.commit("a", "", -1, "t", 0, 1).must()
	all := h.c.ListGroups(nil)
	if len(all) != 2 || all[0].Group != "a" || all[0].GroupState != "Empty" || all[1].GroupState != "Stable" || all[1].ProtocolType != "consumer" {
		t.Fatalf("list: %+v", all)
	}
	if st := h.c.ListGroups([]string{"stable"}); len(st) != 1 || st[0].Group != "b" {
		t.Fatalf("list stable: %+v", st)
	}
	d := h.c.DescribeGroup("zzz", true)
	if d.State != "Dead" || d.ErrorCode != 0 || d.AuthorizedOperations != groupOperations {
		t.Fatalf("describe unknown: %+v", d)
	}
}

func TestPartitionForMatchesKafka(t *testing.T) {
	// Java: "hello".hashCode() == 99162322; "polygenelubricants".hashCode()
	// == Integer.MIN_VALUE (Kafka's abs maps it to 0); an emoji hashes its
	// two UTF-16 surrogates.
	cases := []struct {
		group string
		n     int32
		want  int32
	}{
		{"hello", 50, 22}, {"hello", 16, 2}, {"polygenelubricants", 50, 0},
		{"\U0001F600", 50, 49}, {"my-group", 50, 12}, {"", 50, 0},
	}
	for _, c := range cases {
		if got := PartitionFor(c.group, c.n); got != c.want {
			t.Errorf("PartitionFor(%q, %d) = %d, want %d", c.group, c.n, got, c.want)
		}
	}
	if javaStringHash("hello") != 99162322 {
		t.Errorf("javaStringHash(hello) = %d", javaStringHash("hello"))
	}
}

func TestMemberIDsAreDeterministicPerSeed(t *testing.T) {
	a, b := newHarness(t, testConfig), newHarness(t, testConfig)
	ia, _ := a.joinNew("g")
	ib, _ := b.joinNew("g")
	if ia != ib {
		t.Fatalf("same seed, different member ids: %s %s", ia, ib)
	}
}

func TestLeaderThatDoesNotRejoinIsReplaced(t *testing.T) {
	h := newHarness(t, testConfig)
	ids, gen := stableGroup(t, h, "g", 2)
	// The follower's metadata changes: it rejoins; the leader only
	// heartbeats and is dropped at the rebalance timeout; the follower
	// leads the next generation.
	j1 := h.join(joinSpec{group: "g", member: ids[1], topics: []string{"u"}})
	for i := 0; i < 7; i++ {
		h.advance(3 * time.Second)
		h.heartbeat("g", ids[0], gen)
	}
	r := j1.must()
	if r.LeaderID != ids[1] || r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("new generation: leader %s gen %d members %d", r.LeaderID, r.Generation, len(r.Members))
	}
}

func TestFailedAssignmentWriteRestartsRebalance(t *testing.T) {
	h := newHarness(t, testConfig)
	id0, j0 := h.joinNew("g")
	id1, j1 := h.joinNew("g")
	h.advance(time.Second)
	gen := j0.must().Generation
	j1.must()
	s1 := h.sync("g", id1, gen, nil)
	h.log.Hold = true
	s0 := h.sync("g", id0, gen, map[string]string{id0: "x", id1: "y"})
	h.log.FailAll(kerr.RequestTimedOut)
	wantCode(t, "leader sync", s0.must().ErrorCode, kerr.CoordinatorNotAvailable)
	wantCode(t, "follower sync", s1.must().ErrorCode, kerr.CoordinatorNotAvailable)
	if got := h.state("g"); got != "PreparingRebalance" {
		t.Fatalf("state %s after a failed assignment write, want PreparingRebalance", got)
	}
}

func TestCommittedAndWholeGroupFetch(t *testing.T) {
	h := newHarness(t, testConfig)
	h.commit("b", "", -1, "t", 1, 11).must()
	h.commit("b", "", -1, "t", 0, 10).must()
	h.commit("a", "", -1, "u", 0, 5).must()
	got := h.c.Committed()
	want := []Offset{{"a", "u", 0, 5}, {"b", "t", 0, 10}, {"b", "t", 1, 11}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Committed() = %v, want %v", got, want)
	}
	all := h.c.FetchOffsets("b", nil, false)
	if len(all.Topics) != 1 || len(all.Topics[0].Partitions) != 2 || all.Topics[0].Partitions[1].Offset != 11 {
		t.Fatalf("whole-group fetch: %+v", all)
	}
	if none := h.c.FetchOffsets("nobody", nil, false); len(none.Topics) != 0 || none.ErrorCode != 0 {
		t.Fatalf("unknown group fetch: %+v", none)
	}
}

func TestReplayRejectsGarbage(t *testing.T) {
	c := New(testConfig, Env{})
	for _, key := range [][]byte{nil, {0}, {0, 9, 1}, {0, 1, 0, 5, 'a'}, {0, 2, 0xff}} {
		if err := c.Replay(key, []byte{1, 2, 3}); err == nil {
			t.Errorf("Replay(%v) accepted garbage", key)
		}
	}
	if len(c.groups) != 0 {
		t.Fatalf("garbage created %d groups", len(c.groups))
	}
}

func FuzzReplay(f *testing.F) {
	f.Add(offsetKey("g", topicPartition{"t", 1}), offsetValue(committed{offset: 3}))
	f.Add(groupKey("g"), []byte{0, 3, 0, 8, 'c', 'o', 'n', 's', 'u', 'm', 'e', 'r'})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c := New(testConfig, Env{})
		_ = c.Replay(key, value)
		_ = c.Replay(key, nil)
	})
}
