package node

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

// Clients of the authorization tests: a super user, a principal granted
// what each API needs, and one granted nothing.
var (
	asAdmin = Client{ClientID: "admin", Remote: "10.0.0.1:1000", Principal: "User:admin", Listener: "SASL_SSL"}
	asAlice = Client{ClientID: "alice", Remote: "10.0.0.2:2000", Principal: "User:alice", Listener: "SASL_SSL"}
	asBob   = Client{ClientID: "bob", Remote: "10.0.0.3:3000", Principal: "User:bob", Listener: "SASL_SSL"}
)

func secured(cfg *Config) {
	cfg.Security = SecurityConfig{Authorizer: AuthorizerACL, SuperUsers: []string{"User:admin"}}
}

// creation reads "User:alice ALLOW * READ TOPIC LITERAL t".
func creation(t testing.TB, line string) kmsg.CreateACLsRequestCreation {
	f := strings.Fields(line)
	if len(f) != 7 {
		t.Fatalf("bad ACL line %q", line)
	}
	c := kmsg.NewCreateACLsRequestCreation()
	var errs [4]error
	c.Principal, c.Host, c.ResourceName = f[0], f[2], f[6]
	c.PermissionType, errs[0] = kmsg.ParseACLPermissionType(f[1])
	c.Operation, errs[1] = kmsg.ParseACLOperation(f[3])
	c.ResourceType, errs[2] = kmsg.ParseACLResourceType(f[4])
	c.ResourcePatternType, errs[3] = kmsg.ParseACLResourcePatternType(f[5])
	for _, err := range errs {
		if err != nil {
			t.Fatalf("bad ACL line %q: %v", line, err)
		}
	}
	return c
}

// grant creates ACLs as the super user.
func grant(t testing.TB, c *cluster, lines ...string) {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version = 3
	for _, l := range lines {
		req.Creations = append(req.Creations, creation(t, l))
	}
	resp := c.requestAs(1, asAdmin, req).(*kmsg.CreateACLsResponse)
	for i, res := range resp.Results {
		if res.ErrorCode != 0 {
			t.Fatalf("grant %q: %v", lines[i], kerr.ErrorForCode(res.ErrorCode))
		}
	}
}

// revokeAll deletes every ACL of a principal.
func revokeAll(t testing.TB, c *cluster, principal string) {
	t.Helper()
	req := kmsg.NewPtrDeleteACLsRequest()
	req.Version = 3
	req.Filters = []kmsg.DeleteACLsRequestFilter{{ResourceType: 1, ResourcePatternType: 1, Principal: &principal, Operation: 1, PermissionType: 1}}
	if resp := c.requestAs(1, asAdmin, req).(*kmsg.DeleteACLsResponse); resp.Results[0].ErrorCode != 0 {
		t.Fatalf("revoke %s: %v", principal, kerr.ErrorForCode(resp.Results[0].ErrorCode))
	}
}

// errorCodes collects every non-zero ErrorCode in a response.
func errorCodes(v reflect.Value, out *[]int16) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			errorCodes(v.Elem(), out)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			errorCodes(v.Index(i), out)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if v.Type().Field(i).Name == "ErrorCode" && f.Kind() == reflect.Int16 && f.Int() != 0 {
				*out = append(*out, int16(f.Int()))
			}
			errorCodes(f, out)
		}
	}
}

func codesOf(resp kmsg.Response) []int16 {
	var codes []int16
	errorCodes(reflect.ValueOf(resp), &codes)
	return codes
}

var authCodes = []int16{kerr.TopicAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code,
	kerr.ClusterAuthorizationFailed.Code, kerr.TransactionalIDAuthorizationFailed.Code}

// authCase is one API of the matrix: the ACLs (for alice) it needs, the
// request, and what a principal without them gets: an error code, or a
// check of the answer (for the APIs that filter instead of refusing).
type authCase struct {
	needs  []string
	req    func() kmsg.Request
	denied *kerr.Error
	check  func(t *testing.T, resp kmsg.Response, allowed bool)
}

func topicReq(name string) kmsg.MetadataRequestTopic {
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(name)
	return mt
}

func authCases(c *cluster) map[int16]authCase {
	cases := map[int16]authCase{}
	cases[0] = authCase{needs: []string{"ALLOW WRITE TOPIC LITERAL t"}, denied: kerr.TopicAuthorizationFailed, req: func() kmsg.Request {
		p := kmsg.NewPtrProduceRequest()
		p.Version, p.Acks, p.TimeoutMillis = 9, -1, 5000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = "t"
		pt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batchOf("x")}}
		p.Topics = append(p.Topics, pt)
		return p
	}}
	cases[1] = authCase{needs: []string{"ALLOW READ TOPIC LITERAL t"}, denied: kerr.TopicAuthorizationFailed, req: func() kmsg.Request {
		f := kmsg.NewPtrFetchRequest()
		f.Version, f.MaxBytes, f.MinBytes = 11, 1<<20, 0
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "t"
		ft.Partitions = []kmsg.FetchRequestTopicPartition{{Partition: 0, FetchOffset: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}
		f.Topics = append(f.Topics, ft)
		return f
	}}
	cases[2] = authCase{needs: []string{"ALLOW DESCRIBE TOPIC LITERAL t"}, denied: kerr.TopicAuthorizationFailed, req: func() kmsg.Request {
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.Version, lo.ReplicaID = 6, -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "t"
		lt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1, CurrentLeaderEpoch: -1}}
		lo.Topics = append(lo.Topics, lt)
		return lo
	}}
	cases[3] = authCase{needs: []string{"ALLOW DESCRIBE TOPIC LITERAL t"}, denied: kerr.TopicAuthorizationFailed, req: func() kmsg.Request {
		md := kmsg.NewPtrMetadataRequest()
		md.Version, md.IncludeTopicAuthorizedOperations = 12, true
		md.Topics = []kmsg.MetadataRequestTopic{topicReq("t")}
		return md
	}, check: func(t *testing.T, resp kmsg.Response, allowed bool) {
		if mt := resp.(*kmsg.MetadataResponse).Topics[0]; allowed && mt.AuthorizedOperations != 1<<kmsg.ACLOperationDescribe {
			t.Errorf("alice's authorized operations on t: %b, want DESCRIBE only", mt.AuthorizedOperations)
		}
	}}
	cases[8] = authCase{needs: []string{"ALLOW READ GROUP LITERAL g", "ALLOW READ TOPIC LITERAL t"}, denied: kerr.GroupAuthorizationFailed,
		req: func() kmsg.Request { return commitReq("g", "", -1, "t", 0, 1)() }}
	cases[9] = authCase{needs: []string{"ALLOW DESCRIBE GROUP LITERAL g", "ALLOW DESCRIBE TOPIC LITERAL t"}, denied: kerr.GroupAuthorizationFailed,
		req: func() kmsg.Request { return fetchReq("g", "t", 0)() }}
	cases[10] = authCase{needs: []string{"ALLOW DESCRIBE GROUP LITERAL g"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version, fc.CoordinatorKeys = 4, []string{"g"}
		return fc
	}}
	cases[11] = authCase{needs: []string{"ALLOW READ GROUP LITERAL g"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		j := kmsg.NewPtrJoinGroupRequest()
		j.Version, j.Group, j.ProtocolType, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis = 5, "g", "consumer", 10000, 100
		j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
		return j
	}}
	cases[12] = authCase{needs: []string{"ALLOW READ GROUP LITERAL g"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, "g", "nobody", 1
		return hb
	}}
	cases[13] = authCase{needs: []string{"ALLOW READ GROUP LITERAL g"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		l := kmsg.NewPtrLeaveGroupRequest()
		l.Version, l.Group, l.Members = 3, "g", []kmsg.LeaveGroupRequestMember{{MemberID: "nobody"}}
		return l
	}}
	cases[14] = authCase{needs: []string{"ALLOW READ GROUP LITERAL g"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		s := kmsg.NewPtrSyncGroupRequest()
		s.Version, s.Group, s.MemberID, s.Generation = 5, "g", "nobody", 1
		return s
	}}
	cases[15] = authCase{needs: []string{"ALLOW DESCRIBE GROUP LITERAL g"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		d := kmsg.NewPtrDescribeGroupsRequest()
		d.Version, d.Groups, d.IncludeAuthorizedOperations = 5, []string{"g"}, true
		return d
	}, check: func(t *testing.T, resp kmsg.Response, allowed bool) {
		if g := resp.(*kmsg.DescribeGroupsResponse).Groups[0]; allowed && g.AuthorizedOperations != 1<<kmsg.ACLOperationDescribe {
			t.Errorf("alice's authorized operations on g: %b", g.AuthorizedOperations)
		}
	}}
	cases[16] = authCase{needs: []string{"ALLOW DESCRIBE GROUP LITERAL g"}, req: func() kmsg.Request {
		l := kmsg.NewPtrListGroupsRequest()
		l.Version = 4
		return l
	}, check: func(t *testing.T, resp kmsg.Response, allowed bool) {
		var names []string
		for _, g := range resp.(*kmsg.ListGroupsResponse).Groups {
			names = append(names, g.Group)
		}
		if want := allowed; slices.Contains(names, "g") != want || slices.Contains(names, "other") {
			t.Errorf("ListGroups (allowed %v) lists %v", allowed, names)
		}
	}}
	cases[19] = authCase{needs: []string{"ALLOW CREATE TOPIC PREFIXED new"}, denied: kerr.TopicAuthorizationFailed, req: func() kmsg.Request {
		ct := kmsg.NewPtrCreateTopicsRequest()
		ct.Version, ct.TimeoutMillis = 7, 5000
		ctt := kmsg.NewCreateTopicsRequestTopic()
		ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = fmt.Sprintf("new%d", c.clk.Monotonic()), 1, 1
		ct.Topics = append(ct.Topics, ctt)
		return ct
	}, check: func(t *testing.T, resp kmsg.Response, allowed bool) {
		if st := resp.(*kmsg.CreateTopicsResponse).Topics[0]; allowed && st.ConfigErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("configs returned without DESCRIBE_CONFIGS: %+v", st)
		}
	}}
	cases[20] = authCase{needs: []string{"ALLOW DELETE TOPIC LITERAL doomed"}, denied: kerr.TopicAuthorizationFailed,
		req: func() kmsg.Request { return deleteTopicsReq(6, "doomed") }}
	cases[21] = authCase{needs: []string{"ALLOW DELETE TOPIC LITERAL t"}, denied: kerr.TopicAuthorizationFailed,
		req: func() kmsg.Request { return deleteRecordsReq("t", map[int32]int64{0: 0}) }}
	cases[22] = authCase{needs: []string{"ALLOW IDEMPOTENT_WRITE CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed, req: func() kmsg.Request {
		p := kmsg.NewPtrInitProducerIDRequest()
		p.Version, p.ProducerID, p.ProducerEpoch = 4, -1, -1
		return p
	}}
	cases[23] = authCase{needs: []string{"ALLOW DESCRIBE TOPIC LITERAL t"}, denied: kerr.TopicAuthorizationFailed, req: func() kmsg.Request {
		o := kmsg.NewPtrOffsetForLeaderEpochRequest()
		o.Version, o.ReplicaID = 4, -1
		ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
		ot.Topic = "t"
		ot.Partitions = []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, LeaderEpoch: 1}}
		o.Topics = append(o.Topics, ot)
		return o
	}}
	cases[29] = authCase{needs: []string{"ALLOW DESCRIBE CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed, req: func() kmsg.Request {
		d := kmsg.NewPtrDescribeACLsRequest()
		d.Version = 3
		d.ResourceType, d.ResourcePatternType, d.Operation, d.PermissionType = 1, 1, 1, 1
		return d
	}}
	cases[30] = authCase{needs: []string{"ALLOW ALTER CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed, req: func() kmsg.Request {
		cr := kmsg.NewPtrCreateACLsRequest()
		cr.Version = 3
		cr.Creations = []kmsg.CreateACLsRequestCreation{creation(c.t, "User:carol ALLOW * READ TOPIC LITERAL t")}
		return cr
	}}
	cases[31] = authCase{needs: []string{"ALLOW ALTER CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed, req: func() kmsg.Request {
		d := kmsg.NewPtrDeleteACLsRequest()
		d.Version = 3
		d.Filters = []kmsg.DeleteACLsRequestFilter{{ResourceType: 1, ResourcePatternType: 1, Principal: kmsg.StringPtr("User:carol"), Operation: 1, PermissionType: 1}}
		return d
	}}
	cases[32] = authCase{needs: []string{"ALLOW DESCRIBE_CONFIGS TOPIC LITERAL t"}, denied: kerr.TopicAuthorizationFailed,
		req: func() kmsg.Request { return describeReq(4, kmsg.ConfigResourceTypeTopic, "t") }}
	cases[33] = authCase{needs: []string{"ALLOW ALTER_CONFIGS TOPIC LITERAL t"}, denied: kerr.TopicAuthorizationFailed,
		req: func() kmsg.Request { return alterReq(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "100000") }}
	cases[37] = authCase{needs: []string{"ALLOW ALTER TOPIC LITERAL grow"}, denied: kerr.TopicAuthorizationFailed, req: func() kmsg.Request {
		n := int32(2)
		if t := c.nodes[1].r.Metadata().Topics["grow"]; t != nil {
			n = int32(len(t.Partitions)) + 1
		}
		return createPartitionsReq("grow", n)
	}}
	cases[42] = authCase{needs: []string{"ALLOW DELETE GROUP LITERAL g"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		d := kmsg.NewPtrDeleteGroupsRequest()
		d.Version, d.Groups = 2, []string{"g"}
		return d
	}}
	cases[44] = authCase{needs: []string{"ALLOW ALTER_CONFIGS TOPIC LITERAL t"}, denied: kerr.TopicAuthorizationFailed,
		req: func() kmsg.Request {
			return incrementalReq(kmsg.ConfigResourceTypeTopic, "t", setOp("retention.ms", "200000"))
		}}
	cases[45] = authCase{needs: []string{"ALLOW ALTER CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed, req: func() kmsg.Request {
		a := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		at := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		at.Topic = "t"
		at.Partitions = []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0}} // cancel: none in progress
		a.Topics = append(a.Topics, at)
		return a
	}}
	cases[46] = authCase{needs: []string{"ALLOW DESCRIBE CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed,
		req: func() kmsg.Request { return kmsg.NewPtrListPartitionReassignmentsRequest() }}
	cases[47] = authCase{needs: []string{"ALLOW DELETE GROUP LITERAL g", "ALLOW READ TOPIC LITERAL t"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		o := kmsg.NewPtrOffsetDeleteRequest()
		o.Group = "g"
		ot := kmsg.NewOffsetDeleteRequestTopic()
		ot.Topic, ot.Partitions = "t", []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		o.Topics = append(o.Topics, ot)
		return o
	}}
	cases[60] = authCase{needs: []string{"ALLOW DESCRIBE CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed, req: func() kmsg.Request {
		d := kmsg.NewPtrDescribeClusterRequest()
		d.IncludeClusterAuthorizedOperations = true
		return d
	}, check: func(t *testing.T, resp kmsg.Response, allowed bool) {
		if ops := resp.(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations; allowed && ops != 1<<kmsg.ACLOperationDescribe {
			t.Errorf("alice's cluster operations: %b", ops)
		}
	}}
	cases[50] = authCase{needs: []string{"ALLOW DESCRIBE CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed, req: func() kmsg.Request {
		return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	}}
	cases[51] = authCase{needs: []string{"ALLOW ALTER CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed, req: func() kmsg.Request {
		a := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = "nobody", 1 // alice gets RESOURCE_NOT_FOUND
		a.Deletions = append(a.Deletions, d)
		return a
	}}
	cases[48] = authCase{needs: []string{"ALLOW DESCRIBE_CONFIGS CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed, req: func() kmsg.Request {
		return kmsg.NewPtrDescribeClientQuotasRequest()
	}}
	cases[49] = authCase{needs: []string{"ALLOW ALTER_CONFIGS CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed, req: func() kmsg.Request {
		return alterQuotaReq("alice", kmsg.StringPtr("app"), controller.QuotaProducerByteRate, 1024, false)
	}}
	cases[64] = authCase{needs: []string{"ALLOW ALTER CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed, req: func() kmsg.Request {
		u := kmsg.NewPtrUnregisterBrokerRequest()
		u.BrokerID = 99 // no such broker: alice gets BROKER_NOT_AVAILABLE
		return u
	}}
	cases[80] = authCase{needs: []string{"ALLOW ALTER CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed, req: func() kmsg.Request {
		a := kmsg.NewPtrAddRaftVoterRequest()
		a.VoterID = 99 // no such broker: alice gets BROKER_NOT_AVAILABLE
		return a
	}}
	cases[81] = authCase{needs: []string{"ALLOW ALTER CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed, req: func() kmsg.Request {
		rm := kmsg.NewPtrRemoveRaftVoterRequest()
		rm.VoterID = 99 // not a voter: alice gets VOTER_NOT_FOUND
		return rm
	}}
	cases[55] = authCase{needs: []string{"ALLOW DESCRIBE CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed, req: func() kmsg.Request {
		return describeQuorumReq()
	}}
	txnAuthCases(cases)
	addShareAuthCases(cases)
	addConsumerAuthCases(cases)
	addTelemetryAuthCases(cases)
	addDescribeAuthCases(cases)
	return cases
}

// TestEveryAPIIsAuthorized runs each API as a principal granted exactly
// the ACLs Kafka's table says it needs (no authorization error may come
// back) and as one granted nothing (the API's authorization error must).
func TestEveryAPIIsAuthorized(t *testing.T) {
	c := newClusterWith(t, 1, 31, secured)
	c.waitReady()
	for _, name := range []string{"t", "doomed", "grow"} {
		createTopicAs(t, c, asAdmin, name, 1)
	}
	// The groups exist (ListGroups lists them): admin commits for g and other.
	for _, g := range []string{"g", "other"} {
		commitAs(t, c, asAdmin, g)
	}
	// Bob has ACLs too, on other resources: a resource with nobody's ACL
	// would be closed anyway (allow.everyone.if.no.acl.found is false).
	grant(t, c, "User:bob ALLOW * READ TOPIC LITERAL elsewhere")

	cases := authCases(c)
	var missing []string
	for _, v := range Versions() {
		if _, ok := cases[v.Key]; !ok {
			missing = append(missing, kmsg.NameForKey(v.Key))
		}
	}
	if len(missing) > 0 {
		t.Fatalf("no authorization case for %v: every API needs one", missing)
	}
	for _, key := range sortedKeys(cases) {
		tc := cases[key]
		t.Run(kmsg.NameForKey(key), func(t *testing.T) {
			revokeAll(t, c, "User:alice")
			var lines []string
			for _, n := range tc.needs {
				lines = append(lines, "User:alice "+strings.Replace(n, " ", " * ", 1))
			}
			grant(t, c, lines...)

			denied := c.requestAs(1, asBob, tc.req())
			if tc.denied != nil && !slices.Contains(codesOf(denied), tc.denied.Code) {
				t.Errorf("bob (no ACL) got %v, want %v", codesOf(denied), tc.denied)
			}
			allowed := c.requestAs(1, asAlice, tc.req())
			for _, code := range codesOf(allowed) {
				if slices.Contains(authCodes, code) {
					t.Errorf("alice (granted %v) got %v", tc.needs, kerr.ErrorForCode(code))
				}
			}
			if tc.check != nil {
				tc.check(t, denied, false)
				tc.check(t, allowed, true)
			}
		})
	}
}

// createTopicAs creates a topic as who and waits for its leaders.
func createTopicAs(t *testing.T, c *cluster, who Client, name string, partitions int32) {
	t.Helper()
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version, ct.TimeoutMillis = 7, 5000
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = name, partitions, -1
	ct.Topics = append(ct.Topics, ctt)
	if resp := c.requestAs(1, who, ct).(*kmsg.CreateTopicsResponse); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("%s creates %s: %v", who.Principal, name, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	waitLeaders(t, c, name, partitions)
}

// commitAs commits offset 1 of t/0 for group g, outside any generation.
func commitAs(t *testing.T, c *cluster, who Client, g string) {
	t.Helper()
	ok := c.runUntil(10*time.Second, func() bool {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version, fc.CoordinatorKeys = 4, []string{g}
		c.requestAs(1, who, fc) // creates __consumer_offsets
		resp := c.requestAs(1, who, commitReq(g, "", -1, "t", 0, 1)())
		return commitRespCode(resp) == 0
	})
	if !ok {
		t.Fatalf("%s cannot commit for %s", who.Principal, g)
	}
}

// describeQuorumReq asks for the controller group, as Kafka's tools do.
func describeQuorumReq() *kmsg.DescribeQuorumRequest {
	d := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	d.Topics = append(d.Topics, t)
	return d
}
