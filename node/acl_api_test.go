package node

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeACLs returns "principal perm host op type:pattern:name" lines for
// a filter, as admin, through the wire encoding at version v.
func describeACLs(t *testing.T, c *cluster, v int16, rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType) ([]string, int16) {
	t.Helper()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.Version, req.ResourceType, req.ResourceName, req.ResourcePatternType = v, rt, name, pt
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp := wireRequestAs(t, c, asAdmin, req).(*kmsg.DescribeACLsResponse)
	var out []string
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			out = append(out, fmt.Sprintf("%s %s %s %s %s:%s:%s", a.Principal, a.PermissionType, a.Host, a.Operation, r.ResourceType, r.ResourcePatternType, r.ResourceName))
		}
	}
	return out, resp.ErrorCode
}

// wireRequestAs is requestAs through the wire encoding (like admin()).
func wireRequestAs(t *testing.T, c *cluster, who Client, req kmsg.Request) kmsg.Response {
	t.Helper()
	sent := kmsg.RequestForKey(req.Key())
	sent.SetVersion(req.GetVersion())
	if err := sent.ReadFrom(req.AppendTo(nil)); err != nil {
		t.Fatalf("%s does not decode: %v", kmsg.NameForKey(req.Key()), err)
	}
	resp := c.requestAs(1, who, sent)
	got := sent.ResponseKind()
	if err := got.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatalf("response does not decode: %v", err)
	}
	return got
}

func TestACLAPIs(t *testing.T) {
	c := newClusterWith(t, 1, 32, secured)
	c.waitReady()
	grant(t, c,
		"User:alice ALLOW * READ TOPIC LITERAL orders",
		"User:alice DENY 10.9.9.9 READ TOPIC LITERAL orders",
		"User:bob ALLOW * WRITE TOPIC PREFIXED ord",
		"User:* ALLOW * DESCRIBE TOPIC LITERAL *",
		"User:alice ALLOW * READ GROUP LITERAL orders",
	)
	name := func(s string) *string { return &s }
	for _, tc := range []struct {
		what string
		rt   kmsg.ACLResourceType
		name *string
		pt   kmsg.ACLResourcePatternType
		want int
	}{
		{"everything", kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny, 5},
		{"topics", kmsg.ACLResourceTypeTopic, nil, kmsg.ACLResourcePatternTypeAny, 4},
		{"ANY with a name: that exact name", kmsg.ACLResourceTypeAny, name("orders"), kmsg.ACLResourcePatternTypeAny, 3},
		{"MATCH: all that apply to the topic", kmsg.ACLResourceTypeTopic, name("orders"), kmsg.ACLResourcePatternTypeMatch, 4},
		{"LITERAL", kmsg.ACLResourceTypeTopic, nil, kmsg.ACLResourcePatternTypeLiteral, 3},
		{"PREFIXED", kmsg.ACLResourceTypeTopic, nil, kmsg.ACLResourcePatternTypePrefixed, 1},
		{"MATCH of another name", kmsg.ACLResourceTypeTopic, name("ordinary"), kmsg.ACLResourcePatternTypeMatch, 2},
	} {
		got, code := describeACLs(t, c, 3, tc.rt, tc.name, tc.pt)
		if code != 0 || len(got) != tc.want {
			t.Errorf("%s: %v (%v), want %d", tc.what, got, kerr.ErrorForCode(code), tc.want)
		}
	}
	if got, _ := describeACLs(t, c, 0, kmsg.ACLResourceTypeTopic, nil, kmsg.ACLResourcePatternTypePrefixed); len(got) != 3 {
		t.Errorf("v0 filters LITERAL patterns: %v", got)
	}
	if _, code := describeACLs(t, c, 3, kmsg.ACLResourceTypeUnknown, nil, kmsg.ACLResourcePatternTypeAny); code != kerr.InvalidRequest.Code {
		t.Errorf("an UNKNOWN filter: %v", kerr.ErrorForCode(code))
	}

	// Creations: each judged alone.
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version = 3
	bad := creation(t, "User:x ALLOW * READ CLUSTER LITERAL not-the-cluster")
	noColon := creation(t, "User:x ALLOW * READ TOPIC LITERAL t")
	noColon.Principal = "x"
	req.Creations = []kmsg.CreateACLsRequestCreation{creation(t, "User:x ALLOW * READ TOPIC LITERAL t"), bad, noColon,
		creation(t, "Role:ops ALLOW * ALTER TOPIC PREFIXED app.")}
	resp := wireRequestAs(t, c, asAdmin, req).(*kmsg.CreateACLsResponse)
	var codes []int16
	for _, r := range resp.Results {
		codes = append(codes, r.ErrorCode)
		if r.ErrorCode != 0 && (r.ErrorMessage == nil || *r.ErrorMessage == "") {
			t.Errorf("a refused creation without a reason")
		}
	}
	if fmt.Sprint(codes) != "[0 42 42 0]" {
		t.Fatalf("creation codes %v", codes)
	}

	// Deletion: per filter, what it removed; the rest stays.
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = 3
	del.Filters = []kmsg.DeleteACLsRequestFilter{
		{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: name("orders"), ResourcePatternType: kmsg.ACLResourcePatternTypeMatch,
			Principal: name("User:alice"), Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny},
		{ResourceType: kmsg.ACLResourceTypeAny, ResourcePatternType: 0, Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny},
	}
	dresp := wireRequestAs(t, c, asAdmin, del).(*kmsg.DeleteACLsResponse)
	if len(dresp.Results[0].MatchingACLs) != 2 || dresp.Results[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("delete answered %+v", dresp.Results)
	}
	if got, _ := describeACLs(t, c, 3, kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny); len(got) != 5 ||
		strings.Contains(strings.Join(got, "\n"), "User:alice ALLOW * READ TOPIC") {
		t.Fatalf("after delete: %v", got)
	}
}

// CreateACLs and DeleteACLs v0 carry no pattern type: a v0 creation makes
// a LITERAL ACL, and a v0 filter matches LITERAL ones only. kmsg's decoder
// already fills in LITERAL (its default); the handlers do not rely on it,
// so the requests here skip the wire and carry other pattern types.
func TestACLsAtVersion0AreLiteral(t *testing.T) {
	c := newClusterWith(t, 1, 32, secured)
	c.waitReady()
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version = 0
	req.Creations = []kmsg.CreateACLsRequestCreation{creation(t, "User:x ALLOW * READ TOPIC PREFIXED v0")}
	resp := c.requestAs(1, asAdmin, req).(*kmsg.CreateACLsResponse)
	if code := resp.Results[0].ErrorCode; code != 0 {
		t.Fatalf("v0 creation: %v", kerr.ErrorForCode(code))
	}
	want := "User:x ALLOW * READ TOPIC:LITERAL:v0"
	if got, _ := describeACLs(t, c, 3, kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny); !slices.Contains(got, want) {
		t.Fatalf("after a v0 creation: %v, want %q", got, want)
	}
	grant(t, c, "User:x ALLOW * READ TOPIC PREFIXED v0")
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = 0
	name := "v0"
	del.Filters = []kmsg.DeleteACLsRequestFilter{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: &name,
		ResourcePatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny}}
	dresp := c.requestAs(1, asAdmin, del).(*kmsg.DeleteACLsResponse)
	if r := dresp.Results[0]; r.ErrorCode != 0 || len(r.MatchingACLs) != 1 || r.MatchingACLs[0].ResourcePatternType != kmsg.ACLResourcePatternTypeLiteral {
		t.Fatalf("v0 delete answered %+v, want the LITERAL ACL only", r)
	}
	got, _ := describeACLs(t, c, 3, kmsg.ACLResourceTypeTopic, nil, kmsg.ACLResourcePatternTypeAny)
	if want := "User:x ALLOW * READ TOPIC:PREFIXED:v0"; !slices.Contains(got, want) || slices.Contains(got, "User:x ALLOW * READ TOPIC:LITERAL:v0") {
		t.Fatalf("after a v0 delete: %v, want %q kept and the LITERAL one gone", got, want)
	}
}

func metadataAs(t *testing.T, c *cluster, who Client, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	md := kmsg.NewPtrMetadataRequest()
	md.Version, md.AllowAutoTopicCreation = 12, true
	if topics != nil {
		md.Topics = []kmsg.MetadataRequestTopic{}
		for _, n := range topics {
			md.Topics = append(md.Topics, topicReq(n))
		}
	}
	return c.requestAs(1, who, md).(*kmsg.MetadataResponse)
}

// Metadata as Kafka answers it: unauthorized topics left out of a full
// listing; named, they fail whether or not they exist; auto-creation needs
// CREATE.
func TestMetadataAuthorization(t *testing.T) {
	c := newClusterWith(t, 1, 33, secured)
	c.waitReady()
	createTopicAs(t, c, asAdmin, "visible", 1)
	createTopicAs(t, c, asAdmin, "hidden", 1)
	grant(t, c, "User:alice ALLOW * DESCRIBE TOPIC LITERAL visible", "User:alice ALLOW * DESCRIBE TOPIC PREFIXED auto.",
		"User:bob ALLOW * DESCRIBE TOPIC PREFIXED auto.", "User:bob ALLOW * CREATE TOPIC PREFIXED auto.")
	var names []string
	for _, mt := range metadataAs(t, c, asAlice).Topics {
		names = append(names, *mt.Topic)
	}
	if fmt.Sprint(names) != "[visible]" {
		t.Fatalf("alice lists %v", names)
	}
	resp := metadataAs(t, c, asAlice, "visible", "hidden", "missing")
	if codes := []int16{resp.Topics[0].ErrorCode, resp.Topics[1].ErrorCode, resp.Topics[2].ErrorCode}; fmt.Sprint(codes) != "[0 29 29]" {
		t.Fatalf("named topics: %v", codes)
	}
	// Auto-creation: alice may describe auto.* but not create it.
	if code := metadataAs(t, c, asAlice, "auto.a").Topics[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("auto-create without CREATE: %v", kerr.ErrorForCode(code))
	}
	if _, ok := c.nodes[1].r.Metadata().Topics["auto.a"]; ok {
		t.Fatalf("created without CREATE")
	}
	if code := metadataAs(t, c, asBob, "auto.b").Topics[0].ErrorCode; code != kerr.LeaderNotAvailable.Code {
		t.Fatalf("auto-create with CREATE: %v", kerr.ErrorForCode(code))
	}
	if !c.runUntil(5e9, func() bool { return c.nodes[1].r.Metadata().Topics["auto.b"] != nil }) {
		t.Fatalf("auto.b never created")
	}
	// The super user sees everything, internal topics included.
	if n := len(metadataAs(t, c, asAdmin).Topics); n != 3 {
		t.Fatalf("admin lists %d topics", n)
	}
}

func alterRole(t *testing.T, c *cluster, who Client, role string, op kmsg.IncrementalAlterConfigOp, members string) (int16, string) {
	t.Helper()
	req := incrementalReq(roleConfigResource, role, incOp(op, roleMembersConfig, &members))
	resp := c.requestAs(1, who, req).(*kmsg.IncrementalAlterConfigsResponse)
	msg := ""
	if m := resp.Resources[0].ErrorMessage; m != nil {
		msg = *m
	}
	return resp.Resources[0].ErrorCode, msg
}

func describeRoleConfigs(t *testing.T, c *cluster, who Client, role string) (map[string]string, int16) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = roleConfigResource, role
	req.Resources = append(req.Resources, rr)
	resp := c.requestAs(1, who, req).(*kmsg.DescribeConfigsResponse)
	out := map[string]string{}
	for _, cfg := range resp.Resources[0].Configs {
		out[cfg.Name] = *cfg.Value
	}
	return out, resp.Resources[0].ErrorCode
}

func TestRolesOverTheWire(t *testing.T) {
	c := newClusterWith(t, 1, 34, secured)
	c.waitReady()
	createTopicAs(t, c, asAdmin, "app.orders", 1)
	createTopicAs(t, c, asAdmin, "app.locked", 1)
	waitLeaders(t, c, "app.orders", 1)
	produceAs := func(who Client, topic string) int16 {
		p := kmsg.NewPtrProduceRequest()
		p.Version, p.Acks, p.TimeoutMillis = 9, 1, 5000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic, pt.Partitions = topic, []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batchOf("r")}}
		p.Topics = append(p.Topics, pt)
		return c.requestAs(1, who, p).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}

	// A custom role: its ACLs reach its members only, its DENY too.
	if code, msg := alterRole(t, c, asAdmin, "writers", kmsg.IncrementalAlterConfigOpAppend, "User:alice"); code != kerr.ResourceNotFound.Code {
		t.Fatalf("bind to a role that does not exist: %v %s", kerr.ErrorForCode(code), msg)
	}
	if code, msg := alterRole(t, c, asAdmin, "writers", kmsg.IncrementalAlterConfigOpSet, ""); code != 0 {
		t.Fatalf("create: %v %s", kerr.ErrorForCode(code), msg)
	}
	grant(t, c, "Role:writers ALLOW * WRITE TOPIC PREFIXED app.", "Role:writers DENY * WRITE TOPIC LITERAL app.locked")
	if code := produceAs(asAlice, "app.orders"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("not a member yet: %v", kerr.ErrorForCode(code))
	}
	if code, _ := alterRole(t, c, asAdmin, "writers", kmsg.IncrementalAlterConfigOpAppend, "User:alice,User:carol"); code != 0 {
		t.Fatalf("bind: %v", kerr.ErrorForCode(code))
	}
	if code := produceAs(asAlice, "app.orders"); code != 0 {
		t.Fatalf("member produce: %v", kerr.ErrorForCode(code))
	}
	if code := produceAs(asAlice, "app.locked"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("the role's DENY: %v", kerr.ErrorForCode(code))
	}
	if code := produceAs(asBob, "app.orders"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("a non-member: %v", kerr.ErrorForCode(code))
	}
	cfgs, code := describeRoleConfigs(t, c, asAdmin, "writers")
	if code != 0 || cfgs["members"] != "User:alice,User:carol" || cfgs["builtin"] != "false" || !strings.Contains(cfgs["grants"], "TOPIC:PREFIXED:app.") {
		t.Fatalf("describe writers: %v %v", cfgs, kerr.ErrorForCode(code))
	}

	// A built-in role, and a user's DENY beating it.
	if code, _ := alterRole(t, c, asAdmin, "producer", kmsg.IncrementalAlterConfigOpAppend, "User:bob"); code != 0 {
		t.Fatalf("bind producer: %v", kerr.ErrorForCode(code))
	}
	if code := produceAs(asBob, "app.orders"); code != 0 {
		t.Fatalf("built-in producer: %v", kerr.ErrorForCode(code))
	}
	grant(t, c, "User:bob DENY * WRITE TOPIC LITERAL app.orders")
	if code := produceAs(asBob, "app.orders"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("a DENY must beat a role: %v", kerr.ErrorForCode(code))
	}
	all, _ := describeRoleConfigs(t, c, asAdmin, "")
	if all["producer"] != "User:bob" || all["writers"] != "User:alice,User:carol" || len(all) != 6 {
		t.Fatalf("role listing %v", all)
	}

	// Role changes need ALTER on the cluster; reading them DESCRIBE.
	if code, _ := alterRole(t, c, asAlice, "admin", kmsg.IncrementalAlterConfigOpAppend, "User:alice"); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice makes herself admin: %v", kerr.ErrorForCode(code))
	}
	if _, code := describeRoleConfigs(t, c, asAlice, ""); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice lists roles: %v", kerr.ErrorForCode(code))
	}
	if code, _ := alterRole(t, c, asAdmin, "viewer", kmsg.IncrementalAlterConfigOpDelete, ""); code != kerr.InvalidRequest.Code {
		t.Fatalf("delete a built-in role: %v", kerr.ErrorForCode(code))
	}

	// Deleting a role takes its grants and members.
	if code, _ := alterRole(t, c, asAdmin, "writers", kmsg.IncrementalAlterConfigOpDelete, ""); code != 0 {
		t.Fatalf("delete writers: %v", kerr.ErrorForCode(code))
	}
	if code := produceAs(asAlice, "app.orders"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("after the role is gone: %v", kerr.ErrorForCode(code))
	}
	got, _ := describeACLs(t, c, 3, kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny)
	if slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "Role:writers") }) {
		t.Fatalf("the role's ACLs outlived it: %v", got)
	}
}

// OffsetCommit with READ on the group but not on one of its topics:
// that topic fails, the other commits.
func TestOffsetCommitTopicAuthorization(t *testing.T) {
	c := newClusterWith(t, 1, 35, secured)
	c.waitReady()
	createTopicAs(t, c, asAdmin, "t", 1)
	createTopicAs(t, c, asAdmin, "u", 1)
	commitAs(t, c, asAdmin, "g")
	grant(t, c, "User:alice ALLOW * READ GROUP LITERAL g", "User:alice ALLOW * READ TOPIC LITERAL t")
	req := commitReq("g", "", -1, "t", 0, 5)().(*kmsg.OffsetCommitRequest)
	ut := kmsg.NewOffsetCommitRequestTopic()
	ut.Topic, ut.Partitions = "u", []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5}}
	req.Topics = append([]kmsg.OffsetCommitRequestTopic{ut}, req.Topics...)
	resp := c.requestAs(1, asAlice, req).(*kmsg.OffsetCommitResponse)
	got := map[string]int16{}
	for _, st := range resp.Topics {
		got[st.Topic] = st.Partitions[0].ErrorCode
	}
	if got["t"] != 0 || got["u"] != kerr.TopicAuthorizationFailed.Code || len(got) != 2 {
		t.Fatalf("commit answered %v", got)
	}
}
