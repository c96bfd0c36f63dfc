package group

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cclient is a KIP-848 client as the tests model it: it owns what the
// last response assigned it, gives up what a response drops at once, and
// reports what it owns.
type cclient struct {
	id       string
	instance *string
	epoch    int32
	owned    assignment
	topics   []string
	regex    *string
	assignor *string
	rack     *string
	live     bool
	lastHB   time.Duration
}

func topicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], name)
	id[15] = 1
	return id
}

func (h *harness) setTopic(name string, partitions int32) {
	for i := range h.topics {
		if h.topics[i].Name == name {
			h.topics[i].Partitions = partitions
			return
		}
	}
	h.topics = append(h.topics, TopicInfo{Name: name, ID: topicID(name), Partitions: partitions})
	sort.Slice(h.topics, func(i, j int) bool { return h.topics[i].Name < h.topics[j].Name })
}

func (h *harness) topicName(id [16]byte) string {
	for _, t := range h.topics {
		if t.ID == id {
			return t.Name
		}
	}
	return ""
}

// cgHeartbeat sends one heartbeat for cl (reporting what it owns) and
// applies the answer to it. It returns the response.
func (h *harness) cgHeartbeat(group string, cl *cclient, mutate func(*kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatResponse {
	r := h.cgSend(group, cl, mutate)
	return h.cgApply(cl, r.must())
}

// cgSend sends one heartbeat for cl and returns its reply, which may be
// parked behind a held write.
func (h *harness) cgSend(group string, cl *cclient, mutate func(*kmsg.ConsumerGroupHeartbeatRequest)) *reply[kmsg.ConsumerGroupHeartbeatResponse] {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = group, cl.id, cl.epoch
	req.InstanceID, req.RackID = cl.instance, cl.rack
	req.RebalanceTimeoutMillis = 60000
	req.SubscribedTopicNames, req.SubscribedTopicRegex, req.ServerAssignor = cl.topics, cl.regex, cl.assignor
	if cl.epoch != 0 {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		cl.owned.each(func(tp topicPartition) {
			n := len(req.Topics)
			if n == 0 || h.topicName(req.Topics[n-1].TopicID) != tp.topic {
				rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
				rt.TopicID = topicID(tp.topic)
				req.Topics = append(req.Topics, rt)
				n++
			}
			req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, tp.partition)
		})
	}
	if mutate != nil {
		mutate(req)
	}
	r := &reply[kmsg.ConsumerGroupHeartbeatResponse]{t: h.t, label: "ConsumerGroupHeartbeat " + cl.id}
	h.c.ConsumerGroupHeartbeat(h.now, Client{ID: "c", Host: "h"}, req, r.set)
	cl.lastHB = h.now
	return r
}

// cgApply applies a heartbeat's answer to cl, as the client would.
func (h *harness) cgApply(cl *cclient, resp *kmsg.ConsumerGroupHeartbeatResponse) *kmsg.ConsumerGroupHeartbeatResponse {
	switch resp.ErrorCode {
	case 0:
		cl.epoch = resp.MemberEpoch
		if resp.Assignment != nil {
			cl.owned = assignment{}
			for _, t := range resp.Assignment.Topics {
				for _, p := range t.Partitions {
					cl.owned.add(topicPartition{h.topicName(t.TopicID), p})
				}
			}
		}
	case kerr.FencedMemberEpoch.Code, kerr.UnknownMemberID.Code:
		cl.epoch, cl.owned = 0, assignment{}
	}
	return resp
}

func newClient(id string, topics ...string) *cclient {
	return &cclient{id: id, topics: topics, owned: assignment{}, live: true}
}

// checkClients fails when two clients believe they own one partition.
func checkClients(t *testing.T, cls []*cclient, what string) {
	t.Helper()
	if err := clientOverlap(cls, what); err != nil {
		t.Fatal(err)
	}
}

func clientOverlap(cls []*cclient, what string) error {
	seen := map[topicPartition]string{}
	var err error
	for _, cl := range cls {
		cl.owned.each(func(tp topicPartition) {
			if o, ok := seen[tp]; ok && err == nil {
				err = fmt.Errorf("%s: %s-%d owned by %s and %s", what, tp.topic, tp.partition, o, cl.id)
			}
			seen[tp] = cl.id
		})
	}
	return err
}

func (h *harness) consumerGroup(name string) *consumerGroup {
	g := h.c.groups[name]
	if g == nil {
		return nil
	}
	return g.cons
}

// settle heartbeats every live client until the group is stable.
func (h *harness) settle(group string, cls []*cclient) {
	h.t.Helper()
	for round := 0; round < 20; round++ {
		for _, cl := range cls {
			if cl.live {
				h.cgHeartbeat(group, cl, nil)
				checkClients(h.t, cls, "settle")
			}
		}
		if cg := h.consumerGroup(group); cg != nil && cg.stateName() == "Stable" {
			return
		}
		h.advance(time.Second)
	}
	h.t.Fatalf("group %s did not settle: %s", group, h.consumerGroup(group).stateName())
}

func TestConsumerGroupShareSixPartitions(t *testing.T) {
	h := newHarness(t, Config{})
	h.setTopic("t", 6)
	cls := []*cclient{newClient("a", "t"), newClient("b", "t"), newClient("c", "t")}
	h.settle("g", cls)
	for _, cl := range cls {
		if n := cl.owned.count(); n != 2 {
			t.Fatalf("%s owns %d partitions, want 2", cl.id, n)
		}
	}
	before := map[string]assignment{}
	for _, cl := range cls {
		before[cl.id] = cl.owned.clone()
	}
	// c leaves, d joins: a and b keep what they had (sticky)
	leave := *cls[2]
	leave.epoch = epochLeave
	if r := h.cgHeartbeat("g", &leave, nil); r.ErrorCode != 0 || r.MemberEpoch != epochLeave {
		t.Fatalf("leave: code %d epoch %d", r.ErrorCode, r.MemberEpoch)
	}
	cls[2] = newClient("d", "t")
	h.settle("g", cls)
	for _, cl := range cls[:2] {
		if !before[cl.id].subsetOf(cl.owned) {
			t.Errorf("%s lost partitions it could keep: before %v after %v", cl.id, before[cl.id], cl.owned)
		}
	}
}

func TestConsumerGroupFailoverKeepsEpochs(t *testing.T) {
	h := newHarness(t, Config{})
	h.setTopic("t", 4)
	cls := []*cclient{newClient("a", "t"), newClient("b", "t")}
	h.settle("g", cls)
	epoch := h.consumerGroup("g").Epoch
	h.failover()
	cg := h.consumerGroup("g")
	if cg == nil || cg.Epoch != epoch || len(cg.Members) != 2 {
		t.Fatalf("after failover: %+v, want epoch %d and 2 members", cg, epoch)
	}
	for _, cl := range cls {
		was := cl.owned.clone()
		if r := h.cgHeartbeat("g", cl, nil); r.ErrorCode != 0 || !cl.owned.equal(was) {
			t.Fatalf("%s after failover: code %d owned %v, had %v", cl.id, r.ErrorCode, cl.owned, was)
		}
	}
	// the session starts again at Start: silent members are fenced
	h.advance(h.c.cfg.ConsumerSessionTimeout + time.Second)
	if n := len(h.consumerGroup("g").Members); n != 0 {
		t.Fatalf("%d members after their sessions ended", n)
	}
}

func TestConsumerGroupBadInputLeavesStateAsItWas(t *testing.T) {
	h := newHarness(t, Config{})
	h.setTopic("t", 2)
	a := newClient("a", "t")
	h.settle("g", []*cclient{a})
	image := string(encodeConsumerGroup(h.consumerGroup("g")))
	cases := []struct {
		name string
		cl   cclient
		mut  func(*kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"epoch ahead", *a, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch += 5 }, kerr.FencedMemberEpoch},
		{"stale epoch", *a, func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch = 0
			r.Topics = nil
			r.MemberEpoch = a.epoch - 1
		}, kerr.FencedMemberEpoch},
		{"unknown assignor", *a, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") }, kerr.UnsupportedAssignor},
		{"invalid regex", *a, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = kmsg.StringPtr("t(") }, kerr.InvalidRegularExpression},
		{"unknown member", *newClient("zz", "t"), func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 3 }, kerr.UnknownMemberID},
		{"no group id", *a, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }, kerr.InvalidRequest},
		{"join without subscription", *newClient("n"), func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest},
	}
	for _, tc := range cases {
		cl := tc.cl
		r := h.cgHeartbeat("g", &cl, tc.mut)
		wantCode(t, tc.name, r.ErrorCode, tc.want)
		if got := string(encodeConsumerGroup(h.consumerGroup("g"))); got != image {
			t.Errorf("%s changed the group:\n%s\n%s", tc.name, image, got)
		}
	}
	// with online upgrades disabled, a classic group with members keeps
	// its id (migrate_test.go covers the upgrade)
	h.c.cfg.ConsumerMigrationPolicy = MigrationDisabled
	h.joinNew("classic")
	h.advance(h.c.cfg.InitialRebalanceDelay + time.Second)
	r := h.cgHeartbeat("classic", newClient("x", "t"), nil)
	wantCode(t, "classic group", r.ErrorCode, kerr.GroupIDNotFound)
	if h.c.groups["classic"].cons != nil {
		t.Fatal("the classic group became a consumer group")
	}
	// classic APIs on the consumer group: a classic member of another
	// protocol type is refused, a consumer-protocol member is unknown to them
	wrong := kmsg.NewPtrJoinGroupRequest()
	wrong.Version, wrong.Group, wrong.ProtocolType = 9, "g", "connect"
	wrong.SessionTimeoutMillis, wrong.RebalanceTimeoutMillis = 10000, 10000
	wrong.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: consumerMeta([]string{"t"})}}
	wr := &reply[kmsg.JoinGroupResponse]{t: t, label: "join connect"}
	h.c.JoinGroup(h.now, Client{ID: "c"}, wrong, wr.set)
	wantCode(t, "JoinGroup of another protocol type on a consumer group", wr.must().ErrorCode, kerr.InconsistentGroupProtocol)
	wantCode(t, "Heartbeat on a consumer group", h.heartbeat("g", "a", a.epoch), kerr.UnknownMemberID)
	if got := string(encodeConsumerGroup(h.consumerGroup("g"))); got != image {
		t.Errorf("refused classic requests changed the group:\n%s\n%s", image, got)
	}
}

func TestConsumerGroupRegexSeesNewTopics(t *testing.T) {
	h := newHarness(t, Config{})
	h.setTopic("orders-1", 1)
	h.setTopic("other", 1)
	a := newClient("a")
	a.regex = kmsg.StringPtr("orders-.*")
	h.settle("g", []*cclient{a})
	if a.owned.count() != 1 || !a.owned.has(topicPartition{"orders-1", 0}) {
		t.Fatalf("owned %v", a.owned)
	}
	h.setTopic("orders-2", 2)
	h.settle("g", []*cclient{a})
	if a.owned.count() != 3 {
		t.Fatalf("after orders-2 appeared: owned %v", a.owned)
	}
}

func TestConsumerGroupStaticMemberKeepsAssignment(t *testing.T) {
	h := newHarness(t, Config{})
	h.setTopic("t", 4)
	a, b := newClient("a", "t"), newClient("b", "t")
	a.instance = kmsg.StringPtr("ia")
	h.settle("g", []*cclient{a, b})
	epoch, owned := h.consumerGroup("g").Epoch, a.owned.clone()
	a.epoch = epochLeaveStatic
	if r := h.cgHeartbeat("g", a, nil); r.ErrorCode != 0 {
		t.Fatalf("static leave: %d", r.ErrorCode)
	}
	// another live member may not take the instance id
	c := newClient("c", "t")
	c.instance = kmsg.StringPtr("ib")
	b.instance = kmsg.StringPtr("ib")
	// the restarted incarnation takes over, no rebalance
	a2 := newClient("a2", "t")
	a2.instance = kmsg.StringPtr("ia")
	if r := h.cgHeartbeat("g", a2, nil); r.ErrorCode != 0 {
		t.Fatalf("rejoin: %d", r.ErrorCode)
	}
	if !a2.owned.equal(owned) || h.consumerGroup("g").Epoch != epoch {
		t.Fatalf("rejoined static member owns %v (had %v), epoch %d (was %d)", a2.owned, owned, h.consumerGroup("g").Epoch, epoch)
	}
	a3 := newClient("a3", "t")
	a3.instance = kmsg.StringPtr("ia")
	wantCode(t, "second incarnation", h.cgHeartbeat("g", a3, nil).ErrorCode, kerr.UnreleasedInstanceID)
}

func TestConsumerGroupAssignors(t *testing.T) {
	h := newHarness(t, Config{})
	h.setTopic("t", 5)
	a, b := newClient("a", "t"), newClient("b", "t")
	a.assignor, b.assignor = kmsg.StringPtr(AssignorRange), kmsg.StringPtr(AssignorRange)
	h.settle("g", []*cclient{a, b})
	want := assignment{"t": {0, 1, 2}}
	if !a.owned.equal(want) {
		t.Fatalf("range gave a %v, want %v", a.owned, want)
	}
	// rack-aware uniform: a partition goes to the member in its rack
	h2 := newHarness(t, Config{})
	h2.topics = []TopicInfo{{Name: "r", ID: topicID("r"), Partitions: 2, Racks: [][]string{{"east"}, {"west"}}}}
	w, e := newClient("w", "r"), newClient("e", "r")
	w.rack, e.rack = kmsg.StringPtr("west"), kmsg.StringPtr("east")
	h2.settle("g", []*cclient{w, e})
	if !w.owned.equal(assignment{"r": {1}}) || !e.owned.equal(assignment{"r": {0}}) {
		t.Fatalf("rack-aware: west %v east %v", w.owned, e.owned)
	}
}

// TestConsumerGroupReconciliationModel drives random clients — joins,
// heartbeats, leaves, crashes, subscription changes, new partitions,
// failovers — and checks after every step that no partition is owned by
// two clients (as they believe it) nor held by two members (as the
// coordinator does), and at the end, once churn stops, that every
// subscribed partition is owned by exactly one member.
func TestConsumerGroupReconciliationModel(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 30
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		if err := reconciliationRun(t, seed); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// reconciliationRun is one seed of the model test; it returns the first
// violation.
func reconciliationRun(t *testing.T, seed int64) (err error) {
	rng := rand.New(rand.NewSource(seed))
	h := newHarness(t, Config{ConsumerSessionTimeout: 20 * time.Second})
	h.setTopic("x", int32(1+rng.Intn(6)))
	h.setTopic("y", int32(1+rng.Intn(4)))
	subs := [][]string{{"x"}, {"y"}, {"x", "y"}}
	var cls []*cclient
	for i := 0; i < 2+rng.Intn(4); i++ {
		cl := newClient(fmt.Sprintf("m%d", i), subs[rng.Intn(len(subs))]...)
		cl.live = false
		cls = append(cls, cl)
	}
	if rng.Intn(2) == 0 {
		for _, cl := range cls {
			cl.assignor = kmsg.StringPtr(AssignorRange)
		}
	}
	check := func(what string) {
		if err != nil {
			return
		}
		if err = clientOverlap(cls, what); err != nil {
			return
		}
		if cg := h.consumerGroup("g"); cg != nil {
			if tp, x, y, ok := cg.Owners(); !ok {
				err = fmt.Errorf("%s: coordinator has %s-%d held by %s and %s", what, tp.topic, tp.partition, x, y)
			}
		}
	}
	for step := 0; step < 200; step++ {
		cl := cls[rng.Intn(len(cls))]
		op := rng.Intn(20)
		switch {
		case !cl.live && op < 10:
			cl.live, cl.epoch, cl.owned = true, 0, assignment{}
			h.cgHeartbeat("g", cl, nil)
		case !cl.live:
		case op < 12:
			h.cgHeartbeat("g", cl, nil)
		case op == 12:
			leave := *cl
			leave.epoch = epochLeave
			h.cgHeartbeat("g", &leave, nil)
			cl.live, cl.owned, cl.epoch = false, assignment{}, 0
		case op == 13: // crash: the client stops and gives up what it had
			cl.live, cl.owned, cl.epoch = false, assignment{}, 0
		case op == 14:
			cl.topics = subs[rng.Intn(len(subs))]
			h.cgHeartbeat("g", cl, nil)
		case op == 15:
			t0 := h.topics[rng.Intn(len(h.topics))]
			h.setTopic(t0.Name, t0.Partitions+1)
		case op == 16:
			h.failover()
		default:
			// time passes; live clients keep their sessions
			for _, o := range cls {
				if o.live && h.now-o.lastHB > 8*time.Second {
					h.cgHeartbeat("g", o, nil)
					check("keepalive")
				}
			}
			h.advance(time.Duration(1+rng.Intn(5)) * time.Second)
		}
		check(fmt.Sprintf("step %d", step))
		if err != nil {
			return err
		}
	}
	// churn stops: crashed members time out, the rest converge
	anyLive := false
	for _, cl := range cls {
		anyLive = anyLive || cl.live
	}
	if !anyLive {
		cls[0].live = true
		cls[0].epoch, cls[0].owned = 0, assignment{}
	}
	for i := 0; i < 6; i++ {
		for _, cl := range cls {
			if cl.live {
				h.cgHeartbeat("g", cl, nil)
			}
		}
		h.advance(5 * time.Second)
	}
	for round := 0; round < 20 && h.consumerGroup("g").stateName() != "Stable"; round++ {
		for _, cl := range cls {
			if cl.live {
				h.cgHeartbeat("g", cl, nil)
				check("settling")
			}
		}
		h.advance(time.Second)
	}
	check("settled")
	if err != nil {
		return err
	}
	if st := h.consumerGroup("g").stateName(); st != "Stable" {
		return fmt.Errorf("churn stopped, but the group is %s", st)
	}
	owner := map[topicPartition]string{}
	for _, cl := range cls {
		cl.owned.each(func(tp topicPartition) { owner[tp] = cl.id })
	}
	for _, ti := range h.topics {
		subscribed := false
		for _, cl := range cls {
			subscribed = subscribed || (cl.live && containsString(cl.topics, ti.Name))
		}
		for p := int32(0); subscribed && p < ti.Partitions; p++ {
			if owner[topicPartition{ti.Name, p}] == "" {
				return fmt.Errorf("settled, but %s-%d is owned by nobody", ti.Name, p)
			}
		}
	}
	return nil
}

func TestConsumerGroupOffsetDeleteRefusesSubscribedTopics(t *testing.T) {
	h := newHarness(t, Config{})
	h.setTopic("t", 1)
	h.setTopic("old", 1)
	a := newClient("a", "t")
	h.settle("g", []*cclient{a})
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = "g"
	for _, topic := range []string{"t", "old"} {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		req.Topics = append(req.Topics, rt)
	}
	r := &reply[kmsg.OffsetDeleteResponse]{t: t, label: "OffsetDelete"}
	h.c.OffsetDelete(h.now, req, r.set)
	resp := r.must()
	wantCode(t, "group", resp.ErrorCode, nil)
	wantCode(t, "subscribed topic", resp.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)
	wantCode(t, "other topic", resp.Topics[1].Partitions[0].ErrorCode, nil)
}
