package node

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

// apiCase is one request of the majority-loss check: the bound its answer
// must come within (simulated time), and what the answer must not claim.
type apiCase struct {
	req   kmsg.Request
	limit time.Duration
	// mustFail: success would be a lie (the operation needs a quorum).
	mustFail bool
}

// franzReadOverhead is franz-go's read deadline for a request without a
// timeout field (RequestTimeoutOverhead): an answer after it reaches
// nobody, the client has dropped the connection.
const franzReadOverhead = 10 * time.Second

// majorityLossCases builds one request per API, aimed at topic q (one
// partition, led by the survivor before the crash) and at group g, whose
// member and generation are given; q holds hw records. Requests with a
// timeout field carry one shorter than the election timeout (so a leader
// that has lost its quorum still holds them when they expire); the others
// must answer within requestTimeoutDefault.
func majorityLossCases(q, g, member string, gen int32, hw int64, deadBroker int32) map[int16]apiCase {
	const timeoutMs = 60
	timeout := timeoutMs * time.Millisecond
	none := requestTimeoutDefault
	cases := map[int16]apiCase{}

	produce := kmsg.NewPtrProduceRequest()
	produce.Version, produce.Acks, produce.TimeoutMillis = 9, -1, timeoutMs
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = q
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition, pp.Records = 0, batchOf("majority-loss")
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	cases[0] = apiCase{produce, timeout, true}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 11, timeoutMs, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = q
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, hw, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	cases[1] = apiCase{fetch, timeout, false}

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version, lo.ReplicaID = 6, -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = q
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = 0, -1, -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	cases[2] = apiCase{lo, none, false}

	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(q)
	md.Topics = append(md.Topics, mt)
	cases[3] = apiCase{md, none, false}

	cases[8] = apiCase{commitReq(g, member, gen, q, 0, 7)(), none, true}
	cases[9] = apiCase{fetchReq(g, q, 0)(), none, false}

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKeys = 4, []string{g}
	cases[10] = apiCase{fc, none, false}

	join := kmsg.NewPtrJoinGroupRequest()
	join.Version = 5
	join.Group, join.MemberID, join.ProtocolType = g, member, "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, timeoutMs
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
	// A JoinGroup waits for the other members by design: its bound is its
	// rebalance timeout and the initial delay, with the default margin.
	cases[11] = apiCase{join, timeout + 3*time.Second + none, false}

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, g, member, gen
	cases[12] = apiCase{hb, none, false}

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group = 3, g
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "nobody"}}
	cases[13] = apiCase{leave, none, false}

	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version, sync.Group, sync.MemberID, sync.Generation = 5, g, member, gen
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: member, MemberAssignment: []byte("all")}}
	cases[14] = apiCase{sync, timeout + none, false}

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups = 5, []string{g}
	cases[15] = apiCase{dg, none, false}

	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 4
	cases[16] = apiCase{lg, none, false}

	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version, ct.TimeoutMillis = 7, timeoutMs
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = q+"-new", 1, 1
	ct.Topics = append(ct.Topics, ctt)
	cases[19] = apiCase{ct, timeout, true}

	dt := deleteTopicsReq(6, q)
	dt.TimeoutMillis = timeoutMs
	cases[20] = apiCase{dt, timeout, true}

	dr := deleteRecordsReq(q, map[int32]int64{0: 1})
	dr.TimeoutMillis = timeoutMs
	cases[21] = apiCase{dr, timeout, true}

	pid := kmsg.NewPtrInitProducerIDRequest()
	pid.Version, pid.ProducerID, pid.ProducerEpoch = 4, -1, -1
	cases[22] = apiCase{pid, none, true}

	ofe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ofe.Version, ofe.ReplicaID = 4, -1
	oft := kmsg.NewOffsetForLeaderEpochRequestTopic()
	oft.Topic = q
	ofp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	ofp.Partition, ofp.CurrentLeaderEpoch, ofp.LeaderEpoch = 0, -1, 1
	oft.Partitions = append(oft.Partitions, ofp)
	ofe.Topics = append(ofe.Topics, oft)
	cases[23] = apiCase{ofe, none, false}

	cases[32] = apiCase{describeReq(4, kmsg.ConfigResourceTypeTopic, q), none, false}
	cases[33] = apiCase{alterReq(kmsg.ConfigResourceTypeTopic, q, "retention.ms", "1000"), none, true}

	cp := createPartitionsReq(q, 2)
	cp.TimeoutMillis = timeoutMs
	cases[37] = apiCase{cp, timeout, true}

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version, del.Groups = 2, []string{g}
	cases[42] = apiCase{del, none, false}

	cases[44] = apiCase{incrementalReq(kmsg.ConfigResourceTypeTopic, q, setOp("retention.ms", "2000")), none, true}

	apa := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	apa.TimeoutMillis = timeoutMs
	apt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	apt.Topic = q
	apt.Partitions = []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{3, 2, 1}}}
	apa.Topics = append(apa.Topics, apt)
	cases[45] = apiCase{apa, timeout, true}

	lpr := kmsg.NewPtrListPartitionReassignmentsRequest()
	lpr.TimeoutMillis = timeoutMs
	cases[46] = apiCase{lpr, timeout, false}

	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = g
	odt := kmsg.NewOffsetDeleteRequestTopic()
	odt.Topic = q
	odt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
	od.Topics = append(od.Topics, odt)
	cases[47] = apiCase{od, none, false}

	dc := kmsg.NewPtrDescribeClusterRequest()
	cases[60] = apiCase{dc, none, false}

	cases[50] = apiCase{kmsg.NewPtrDescribeUserSCRAMCredentialsRequest(), none, false}
	aus := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	ausd := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	ausd.Name, ausd.Mechanism = "nobody", 1
	aus.Deletions = append(aus.Deletions, ausd)
	cases[51] = apiCase{aus, none, true}

	cases[48] = apiCase{kmsg.NewPtrDescribeClientQuotasRequest(), none, false}
	cases[49] = apiCase{alterQuotaReq("alice", nil, controller.QuotaProducerByteRate, 1024, false), none, true}

	ub := kmsg.NewPtrUnregisterBrokerRequest()
	ub.BrokerID = deadBroker
	cases[64] = apiCase{ub, none, true}
	av := kmsg.NewPtrAddRaftVoterRequest()
	av.VoterID = deadBroker
	cases[80] = apiCase{av, none, true}
	rv := kmsg.NewPtrRemoveRaftVoterRequest()
	rv.VoterID = deadBroker
	cases[81] = apiCase{rv, none, true}
	cases[55] = apiCase{describeQuorumReq(), none, false}

	da := kmsg.NewPtrDescribeACLsRequest()
	da.ResourceType, da.ResourcePatternType, da.Operation, da.PermissionType = 1, 1, 1, 1
	cases[29] = apiCase{da, none, false}
	ca := kmsg.NewPtrCreateACLsRequest()
	ca.Creations = []kmsg.CreateACLsRequestCreation{{ResourceType: 2, ResourceName: q, ResourcePatternType: 3,
		Principal: "User:a", Host: "*", Operation: 3, PermissionType: 3}}
	cases[30] = apiCase{ca, none, true}
	xa := kmsg.NewPtrDeleteACLsRequest()
	xa.Filters = []kmsg.DeleteACLsRequestFilter{{ResourceType: 1, ResourcePatternType: 1, Operation: 1, PermissionType: 1}}
	cases[31] = apiCase{xa, none, true}
	txnMajorityLossCases(cases, q, g, member, gen, none)
	addShareMajorityLossCases(cases, g)
	addConsumerMajorityLossCases(cases, g)
	addDescribeMajorityLossCases(cases, q)
	return cases
}

// failed reports whether a response carries a non-zero ErrorCode
// anywhere: on the top level or on any topic, partition, group or resource.
func failed(resp kmsg.Response) bool { return firstErrorCode(reflect.ValueOf(resp)) != 0 }

// firstErrorCode returns the first non-zero ErrorCode field found walking
// v depth first, or 0.
func firstErrorCode(v reflect.Value) int16 {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return firstErrorCode(v.Elem())
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if code := firstErrorCode(v.Index(i)); code != 0 {
				return code
			}
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if v.Type().Field(i).Name == "ErrorCode" && f.Kind() == reflect.Int16 && f.Int() != 0 {
				return int16(f.Int())
			}
			if code := firstErrorCode(f); code != 0 {
				return code
			}
		}
	}
	return 0
}

// outcome names a response's first error, or "ok".
func outcome(resp kmsg.Response) string {
	if code := firstErrorCode(reflect.ValueOf(resp)); code != 0 {
		if err := kerr.ErrorForCode(code); err != nil {
			return err.(*kerr.Error).Message
		}
		return fmt.Sprint(code)
	}
	return "ok"
}

// groupLedBy finds a group name whose coordinator is broker id.
func groupLedBy(t *testing.T, c *cluster, id int32) string {
	t.Helper()
	for i := 0; i < 200; i++ {
		name := fmt.Sprintf("g%d", i)
		if findCoordinator(t, c, id, name) == id {
			return name
		}
	}
	t.Fatalf("no group coordinated by broker %d", id)
	return ""
}

// TestMajorityLossEveryAPIAnswersInTime is issue 24's check on the node:
// with two of three brokers down, every API the survivor serves answers
// within its timeout, in simulated time. It runs twice: right after the
// crash, while the survivor still believes it leads the partition, the
// group coordinator's partition and perhaps the controller; and again once
// it has stepped down. And the survivor's Metadata then names no leader for
// the partition (it used to name itself, from the controller's stale
// record, and clients went round in a loop).
func TestMajorityLossEveryAPIAnswersInTime(t *testing.T) {
	if franzReadOverhead <= requestTimeoutDefault {
		t.Fatalf("requestTimeoutDefault %v: franz-go drops the connection after %v", requestTimeoutDefault, franzReadOverhead)
	}
	c := newCluster(t, 3, 24)
	c.waitReady()
	createTopic(t, c, 1, "q", 1, 3, nil)
	waitLeaders(t, c, "q", 1)
	for i := 0; i < 3; i++ {
		if sp := produce(c, leaderOf(c, "q", 0), "q", 0, -1, batchOf(fmt.Sprint(i))); sp.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(sp.ErrorCode))
		}
	}
	// Leaders move to their preferred replicas once the cluster settles:
	// let them, so the survivor still leads what it led before the crash.
	findCoordinator(t, c, 1, "g")
	c.runFor(10 * time.Second)
	lead := leaderOf(c, "q", 0)
	g := groupLedBy(t, c, lead)
	member, gen := joinAndSync(t, c, lead, g)
	resp, _ := groupCall(t, c, lead, g, commitReq(g, member, gen, "q", 0, 2), commitRespCode)
	if code := commitRespCode(resp); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	if now := leaderOf(c, "q", 0); now != lead {
		t.Fatalf("q-0 moved from broker %d to %d", lead, now)
	}
	var dead int32
	for id, n := range c.nodes {
		if id != lead {
			n.crash()
			dead = id
		}
	}
	survivor := c.nodes[lead].r
	part := survivor.byName[topicPartition{"q", 0}]

	t.Run("still leading", func(t *testing.T) {
		if !part.IsLeader() {
			t.Fatalf("broker %d stopped leading q-0 before the requests were sent", lead)
		}
		checkEveryAPI(t, c, lead, majorityLossCases("q", g, member, gen, 3, dead))
	})
	if !c.runUntil(10*time.Second, func() bool { return !part.IsLeader() }) {
		t.Fatalf("broker %d still leads q-0 without a quorum after 10s", lead)
	}
	t.Run("stepped down", func(t *testing.T) {
		checkEveryAPI(t, c, lead, majorityLossCases("q", g, member, gen, 3, dead))
	})

	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("q")}}
	mp := c.request(lead, md).(*kmsg.MetadataResponse).Topics[0].Partitions[0]
	if mp.Leader >= 0 || mp.ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("broker %d, leading nothing, answers Metadata q-0 leader %d (%v), want -1 LEADER_NOT_AVAILABLE",
			lead, mp.Leader, kerr.ErrorForCode(mp.ErrorCode))
	}
}

// checkEveryAPI sends every case to node id at the same instant and checks
// each is answered within its limit, and that none claims a success that
// needs a quorum.
func checkEveryAPI(t *testing.T, c *cluster, id int32, cases map[int16]apiCase) {
	t.Helper()
	var missing []string
	for _, v := range Versions() {
		if _, ok := cases[v.Key]; !ok {
			missing = append(missing, kmsg.NameForKey(v.Key))
		}
	}
	if len(missing) > 0 {
		t.Fatalf("no majority-loss case for %v: every API needs one", missing)
	}
	start := c.clk.Monotonic()
	took := map[int16]time.Duration{}
	answers := map[int16]kmsg.Response{}
	for _, k := range sortedKeys(cases) {
		c.nodes[id].r.HandleRequest(Client{ClientID: "test"}, cases[k].req, func(resp kmsg.Response) {
			if _, dup := took[k]; dup {
				t.Errorf("%s answered twice", kmsg.NameForKey(k))
			}
			took[k], answers[k] = c.clk.Monotonic()-start, resp
		})
	}
	c.runUntil(time.Minute, func() bool { return len(took) == len(cases) })
	var report []string
	for _, k := range sortedKeys(cases) {
		name, cs := kmsg.NameForKey(k), cases[k]
		d, ok := took[k]
		switch {
		case !ok:
			t.Errorf("%s: no answer within a minute (limit %v)", name, cs.limit)
			continue
		case d > cs.limit:
			t.Errorf("%s: answered after %v, limit %v", name, d, cs.limit)
		case answers[k] == nil:
			t.Errorf("%s: answered with no response", name)
			continue
		case cs.mustFail && !failed(answers[k]):
			t.Errorf("%s: succeeded without a quorum: %+v", name, answers[k])
		}
		report = append(report, fmt.Sprintf("%s %v %s", name, d, outcome(answers[k])))
	}
	sort.Strings(report)
	t.Logf("answered after: %s", strings.Join(report, ", "))
}

// joinAndSync makes a one-member group g on coordinator id and returns the
// member id and generation.
func joinAndSync(t *testing.T, c *cluster, id int32, g string) (string, int32) {
	t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 3 // no MEMBER_ID_REQUIRED round trip
	req.Group, req.ProtocolType = g, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 5000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
	resp, _ := groupCall(t, c, id, g, func() kmsg.Request { return req }, func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode })
	j := resp.(*kmsg.JoinGroupResponse)
	if j.ErrorCode != 0 {
		t.Fatalf("join %s: %v", g, kerr.ErrorForCode(j.ErrorCode))
	}
	sreq := kmsg.NewPtrSyncGroupRequest()
	sreq.Version = 3
	sreq.Group, sreq.MemberID, sreq.Generation = g, j.MemberID, j.Generation
	sreq.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: j.MemberID, MemberAssignment: []byte("all")}}
	if s := c.request(id, sreq).(*kmsg.SyncGroupResponse); s.ErrorCode != 0 {
		t.Fatalf("sync %s: %v", g, kerr.ErrorForCode(s.ErrorCode))
	}
	return j.MemberID, j.Generation
}

// TestEveryAPIHasAnExpiryAnswer: every API served has an expiry answer of
// its own kind that encodes, at every version it serves.
func TestEveryAPIHasAnExpiryAnswer(t *testing.T) {
	c := newCluster(t, 1, 1)
	c.waitReady()
	r := c.nodes[1].r
	for _, a := range Versions() {
		k := a.Key
		for v := a.Min; v <= a.Max; v++ {
			req := kmsg.RequestForKey(k)
			req.SetVersion(v)
			resp := expiredAnswer(r, req)
			if resp == nil || resp.Key() != k {
				t.Fatalf("%s v%d: expiry answer %T", kmsg.NameForKey(k), v, resp)
			}
			resp.SetVersion(v)
			back := req.ResponseKind()
			if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
				t.Fatalf("%s v%d: expiry answer does not decode: %v", kmsg.NameForKey(k), v, err)
			}
		}
	}
}

// TestDeadlineAnswersAHandlerThatNeverDoes: a handler that parks a request
// for ever (here a Heartbeat handler replaced by one that never answers) is
// answered at its deadline, once; the handler's late answer is dropped.
func TestDeadlineAnswersAHandlerThatNeverDoes(t *testing.T) {
	c := newCluster(t, 1, 2)
	c.waitReady()
	saved := apis[kmsg.Heartbeat]
	t.Cleanup(func() { apis[kmsg.Heartbeat] = saved })
	var parked func(kmsg.Response)
	apis[kmsg.Heartbeat] = api{min: saved.min, max: saved.max, serve: func(_ *Reactor, _ Client, _ kmsg.Request, respond func(kmsg.Response)) {
		parked = respond
	}}
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version, req.Group = 4, "g"
	r := c.nodes[1].r
	start := c.clk.Monotonic()
	var answers []kmsg.Response
	var at time.Duration
	r.HandleRequest(Client{}, req, func(resp kmsg.Response) { answers, at = append(answers, resp), c.clk.Monotonic()-start })
	c.runFor(requestTimeoutDefault + time.Second)
	if len(answers) != 1 || at != requestTimeoutDefault {
		t.Fatalf("%d answers, the first after %v; want one at %v", len(answers), at, requestTimeoutDefault)
	}
	if code := answers[0].(*kmsg.HeartbeatResponse).ErrorCode; code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("expiry answer %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(code))
	}
	parked(req.ResponseKind())
	if len(answers) != 1 || r.stats.RequestsExpired != 1 || r.stats.LateAnswers != 1 {
		t.Fatalf("after the late answer: %d answers, %d expired, %d late", len(answers), r.stats.RequestsExpired, r.stats.LateAnswers)
	}
}

// TestHandlersAnswerTheirOwnTimeouts: a Fetch's max wait and a
// Produce's timeout are due at the same instant as their requests'
// deadlines; the handlers answer (a Fetch with no error, a Produce with
// REQUEST_TIMED_OUT on the waiting partition), not the deadline.
func TestHandlersAnswerTheirOwnTimeouts(t *testing.T) {
	c := newCluster(t, 3, 3)
	c.waitReady()
	createTopic(t, c, 1, "w", 1, 3, nil)
	waitLeaders(t, c, "w", 1)
	c.runFor(5 * time.Second) // leaders settle on their preferred replicas
	lead := leaderOf(c, "w", 0)
	r := c.nodes[lead].r
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 11, 200, 1, 1<<20
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: "w", Partitions: []kmsg.FetchRequestTopicPartition{
		{Partition: 0, FetchOffset: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}}}
	fr := c.request(lead, fetch).(*kmsg.FetchResponse)
	if code := fr.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("fetch at its max wait: %v", kerr.ErrorForCode(code))
	}
	// The followers crash; the produce waits for a commit that cannot
	// come until its timeout (shorter than the election timeout).
	for id, n := range c.nodes {
		if id != lead {
			n.crash()
		}
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.Version, produce.Acks, produce.TimeoutMillis = 9, -1, 30
	produce.Topics = []kmsg.ProduceRequestTopic{{Topic: "w", Partitions: []kmsg.ProduceRequestTopicPartition{
		{Partition: 0, Records: batchOf("x")}}}}
	sp := c.request(lead, produce).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if sp.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("produce at its timeout: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	if r.stats.RequestsExpired != 0 {
		t.Fatalf("%d requests answered by their deadline, want 0", r.stats.RequestsExpired)
	}
}

// TestRestartedBrokerNamesItselfWhileElecting: right after a restart, before
// its replica has elected itself, a single broker still names itself leader
// from the controller's record (clients retry NOT_LEADER_OR_FOLLOWER for a
// moment) rather than LEADER_NOT_AVAILABLE, which some clients do not retry
// (kadm's ListOffsets). Only a replica open for longer stops doing so
// (TestMajorityLossEveryAPIAnswersInTime).
func TestRestartedBrokerNamesItselfWhileElecting(t *testing.T) {
	c := newCluster(t, 1, 4)
	c.waitReady()
	createTopic(t, c, 1, "r", 1, 1, nil)
	waitLeaders(t, c, "r", 1)
	c.runFor(time.Second) // the leadership reaches the controller's record
	n := c.nodes[1]
	n.crash()
	n.boot()
	if !c.runUntil(10*time.Second, func() bool { return n.r.byName[topicPartition{"r", 0}] != nil }) {
		t.Fatalf("the replica did not reopen")
	}
	if n.r.byName[topicPartition{"r", 0}].Leader() != 0 {
		t.Skip("the replica elected itself before it could be asked")
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("r")}}
	mp := c.request(1, md).(*kmsg.MetadataResponse).Topics[0].Partitions[0]
	if mp.Leader != 1 {
		t.Fatalf("restarted broker answers leader %d (%v), want itself", mp.Leader, kerr.ErrorForCode(mp.ErrorCode))
	}
}

// TestAnsweredRequestsLeaveNoTimers: a request answered before its timeout
// takes its timers with it (the handler's and its deadline), so a busy
// broker does not carry one per recent request until they expire.
func TestAnsweredRequestsLeaveNoTimers(t *testing.T) {
	c := newCluster(t, 3, 5)
	c.waitReady()
	createTopic(t, c, 1, "a", 1, 3, nil)
	waitLeaders(t, c, "a", 1)
	c.runFor(5 * time.Second) // leaders settle on their preferred replicas
	lead := leaderOf(c, "a", 0)
	for i := 0; i < 50; i++ {
		if sp := produce(c, lead, "a", 0, -1, batchOf(fmt.Sprint(i))); sp.ErrorCode != 0 {
			t.Fatalf("produce %d: %v", i, kerr.ErrorForCode(sp.ErrorCode))
		}
	}
	if n := c.nodes[lead].r.timers.queue.Len(); n != 0 {
		t.Fatalf("%d timers left after 50 answered produces", n)
	}
}
