package node

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/records"
)

// admin sends req to node id through the wire encoding at its version, as a
// client would send it, and decodes the answer the same way, so a field a
// version does not carry is lost here exactly as on the wire.
func admin(t *testing.T, c *cluster, id int32, req kmsg.Request) kmsg.Response {
	t.Helper()
	sent := kmsg.RequestForKey(req.Key())
	sent.SetVersion(req.GetVersion())
	if err := sent.ReadFrom(req.AppendTo(nil)); err != nil {
		t.Fatalf("%s v%d does not decode: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	resp := c.request(id, sent)
	got := sent.ResponseKind()
	if err := got.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatalf("%s v%d response does not decode: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return got
}

// wantCode fails unless code is want's (nil: success).
func wantCode(t *testing.T, what string, code int16, msg *string, want *kerr.Error) {
	t.Helper()
	wantC := int16(0)
	if want != nil {
		wantC = want.Code
	}
	if code != wantC {
		m := ""
		if msg != nil {
			m = ": " + *msg
		}
		t.Fatalf("%s: got %v%s, want %v", what, kerr.ErrorForCode(code), m, want)
	}
}

func deleteTopicsReq(version int16, names ...string) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = version
	for _, n := range names {
		if version < 6 {
			req.TopicNames = append(req.TopicNames, n)
			continue
		}
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func TestDeleteTopics(t *testing.T) {
	c := newCluster(t, 1, 21)
	c.waitReady()
	r := c.nodes[1].r
	createTopic(t, c, 1, "gone", 2, 1, nil)
	createTopic(t, c, 1, "kept", 1, 1, nil)
	waitLeaders(t, c, "gone", 2)
	if sp := produce(c, 1, "gone", 0, -1, batchOf("old")); sp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
	}
	resp := admin(t, c, 1, deleteTopicsReq(5, "gone")).(*kmsg.DeleteTopicsResponse)
	wantCode(t, "delete gone", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, nil)
	if _, ok := r.Metadata().Topics["gone"]; ok {
		t.Fatalf("answered before the metadata dropped the topic")
	}
	if !c.runUntil(5*time.Second, func() bool {
		_, p0 := r.byName[topicPartition{"gone", 0}]
		_, p1 := r.byName[topicPartition{"gone", 1}]
		return !p0 && !p1
	}) {
		t.Fatalf("replicas of a deleted topic still open")
	}
	// Only the replicas' tombstones stay (tombstone.go): their Raft state,
	// for a restart that replays the topic's creation again.
	names, _ := c.nodes[1].fs.List("partitions")
	for _, n := range names {
		if strings.HasPrefix(n, "gone-") && !strings.HasSuffix(n, ".tomb") {
			t.Fatalf("log directories left behind: %v", names)
		}
	}
	resp = admin(t, c, 1, deleteTopicsReq(5, "gone")).(*kmsg.DeleteTopicsResponse)
	wantCode(t, "delete again", resp.Topics[0].ErrorCode, nil, kerr.UnknownTopicOrPartition)
	resp = admin(t, c, 1, deleteTopicsReq(4, "kept", "kept")).(*kmsg.DeleteTopicsResponse)
	for _, st := range resp.Topics {
		wantCode(t, "named twice", st.ErrorCode, nil, kerr.InvalidRequest)
	}

	// The name is free again, and the new topic starts empty.
	createTopic(t, c, 1, "gone", 1, 1, nil)
	waitLeaders(t, c, "gone", 1)
	if got, _ := fetchAll(t, c, 1, "gone", 0); len(got) != 0 {
		t.Fatalf("recreated topic holds %v", got)
	}

	// v6 by id: the answer carries the name.
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	byID := kmsg.NewDeleteTopicsRequestTopic()
	byID.TopicID = r.Metadata().Topics["kept"].ID
	both := kmsg.NewDeleteTopicsRequestTopic()
	both.Topic, both.TopicID = kmsg.StringPtr("gone"), byID.TopicID
	unknown := kmsg.NewDeleteTopicsRequestTopic()
	unknown.TopicID = [16]byte{9, 9, 9}
	req.Topics = append(req.Topics, byID, both, unknown)
	resp = admin(t, c, 1, req).(*kmsg.DeleteTopicsResponse)
	wantCode(t, "by id", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, nil)
	if resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != "kept" || resp.Topics[0].TopicID != byID.TopicID {
		t.Fatalf("by id answered %+v", resp.Topics[0])
	}
	wantCode(t, "name and id", resp.Topics[1].ErrorCode, nil, kerr.InvalidRequest)
	wantCode(t, "unknown id", resp.Topics[2].ErrorCode, nil, kerr.UnknownTopicID)
	if _, ok := r.Metadata().Topics["gone"]; !ok {
		t.Fatalf("a refused entry deleted its topic")
	}

	// Internal topics stay.
	it, err := r.planTopic(topicSpec{name: "__internal", partitions: 1, replication: 1, internal: true})
	if err != nil {
		t.Fatal(err)
	}
	done := false
	r.propose(&controller.Command{CreateTopic: it}, func(controller.Result) { done = true })
	c.runUntil(5*time.Second, func() bool { return done })
	resp = admin(t, c, 1, deleteTopicsReq(6, "__internal")).(*kmsg.DeleteTopicsResponse)
	wantCode(t, "internal", resp.Topics[0].ErrorCode, nil, kerr.InvalidRequest)
}

func TestDeleteTopicsOnEveryBroker(t *testing.T) {
	c := newCluster(t, 3, 22)
	c.waitReady()
	createTopic(t, c, 1, "t", 3, 3, nil)
	waitLeaders(t, c, "t", 3)
	// Ask a broker that is not the controller leader: it forwards.
	asker := int32(1)
	for asker == int32(c.nodes[1].r.controllerLeader()) {
		asker++
	}
	resp := admin(t, c, asker, deleteTopicsReq(5, "t")).(*kmsg.DeleteTopicsResponse)
	wantCode(t, "delete", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, nil)
	if !c.runUntil(5*time.Second, func() bool {
		for _, n := range c.nodes {
			if len(n.r.parts) > 0 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("some broker still hosts a replica of the deleted topic")
	}
}

func createPartitionsReq(topic string, count int32, assignment ...[]int32) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version = 3
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	for _, reps := range assignment {
		a := kmsg.NewCreatePartitionsRequestTopicAssignment()
		a.Replicas = reps
		rt.Assignment = append(rt.Assignment, a)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func TestCreatePartitions(t *testing.T) {
	c := newCluster(t, 3, 23)
	c.waitReady()
	createTopic(t, c, 1, "grow", 2, 2, nil)
	waitLeaders(t, c, "grow", 2)
	parts := func() []controller.Partition { return c.nodes[1].r.Metadata().Topics["grow"].Partitions }
	code := func(req *kmsg.CreatePartitionsRequest) (int16, *string) {
		st := admin(t, c, 2, req).(*kmsg.CreatePartitionsResponse).Topics[0]
		return st.ErrorCode, st.ErrorMessage
	}

	vo := createPartitionsReq("grow", 6)
	vo.ValidateOnly = true
	cd, msg := code(vo)
	wantCode(t, "validate only", cd, msg, nil)
	if len(parts()) != 2 {
		t.Fatalf("validate-only created partitions: %d", len(parts()))
	}
	cd, msg = code(createPartitionsReq("grow", 4))
	wantCode(t, "grow to 4", cd, msg, nil)
	c.runFor(100 * time.Millisecond) // node 1 applies the change too
	ps := parts()
	if len(ps) != 4 {
		t.Fatalf("%d partitions after growing to 4", len(ps))
	}
	for _, p := range ps {
		if len(p.Replicas) != 2 {
			t.Fatalf("partition %d has replicas %v, want the topic's replication factor 2", p.Index, p.Replicas)
		}
	}
	waitLeaders(t, c, "grow", 4)
	if sp := produce(c, leaderOf(c, "grow", 3), "grow", 3, -1, batchOf("new")); sp.ErrorCode != 0 {
		t.Fatalf("produce to a new partition: %v", kerr.ErrorForCode(sp.ErrorCode))
	}

	cd, msg = code(createPartitionsReq("grow", 5, []int32{3, 1}))
	wantCode(t, "manual assignment", cd, msg, nil)
	c.runFor(100 * time.Millisecond)
	if ps := parts(); len(ps) != 5 || fmt.Sprint(ps[4].Replicas) != "[3 1]" {
		t.Fatalf("manual assignment gave %+v", ps)
	}

	for _, tc := range []struct {
		name string
		req  *kmsg.CreatePartitionsRequest
		want *kerr.Error
	}{
		{"shrink", createPartitionsReq("grow", 3), kerr.InvalidPartitions},
		{"same count", createPartitionsReq("grow", 5), kerr.InvalidPartitions},
		{"huge count", createPartitionsReq("grow", 1<<30), kerr.InvalidPartitions},
		{"unknown topic", createPartitionsReq("nope", 3), kerr.UnknownTopicOrPartition},
		{"too few lists", createPartitionsReq("grow", 7, []int32{1, 2}), kerr.InvalidReplicaAssignment},
		{"wrong replication", createPartitionsReq("grow", 6, []int32{1}), kerr.InvalidReplicaAssignment},
		{"unknown broker", createPartitionsReq("grow", 6, []int32{1, 9}), kerr.InvalidReplicaAssignment},
		{"broker twice", createPartitionsReq("grow", 6, []int32{2, 2}), kerr.InvalidReplicaAssignment},
	} {
		cd, msg := code(tc.req)
		wantCode(t, tc.name, cd, msg, tc.want)
	}
	twice := createPartitionsReq("grow", 6)
	twice.Topics = append(twice.Topics, twice.Topics[0])
	for _, st := range admin(t, c, 1, twice).(*kmsg.CreatePartitionsResponse).Topics {
		wantCode(t, "named twice", st.ErrorCode, st.ErrorMessage, kerr.InvalidRequest)
	}
	if len(parts()) != 5 {
		t.Fatalf("a refused request changed the partition count to %d", len(parts()))
	}
}

func describeReq(version int16, kind kmsg.ConfigResourceType, name string, names ...string) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version, req.IncludeSynonyms, req.IncludeDocumentation = version, true, true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kind, name, names
	req.Resources = append(req.Resources, rr)
	return req
}

// describe returns one resource's configs by name.
func describe(t *testing.T, c *cluster, id int32, req *kmsg.DescribeConfigsRequest) (map[string]kmsg.DescribeConfigsResponseResourceConfig, kmsg.DescribeConfigsResponseResource) {
	t.Helper()
	res := admin(t, c, id, req).(*kmsg.DescribeConfigsResponse).Resources[0]
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, cfg := range res.Configs {
		if _, dup := out[cfg.Name]; dup {
			t.Fatalf("%s described twice", cfg.Name)
		}
		out[cfg.Name] = cfg
	}
	return out, res
}

// synonyms renders a config's synonyms as name=value/source, in order.
func synonyms(cfg kmsg.DescribeConfigsResponseResourceConfig) string {
	var parts []string
	for _, s := range cfg.ConfigSynonyms {
		parts = append(parts, fmt.Sprintf("%s=%s/%d", s.Name, *s.Value, s.Source))
	}
	return strings.Join(parts, " ")
}

func TestDescribeConfigs(t *testing.T) {
	c := newCluster(t, 1, 24)
	c.waitReady()
	c.nodes[1].r.cfg.TopicDefaults = map[string]string{"segment.ms": "3600000"}
	createTopic(t, c, 1, "d", 1, 1, map[string]string{"retention.ms": "1000"})
	incremental(t, c, 1, kmsg.ConfigResourceTypeBroker, "", setOp("log.retention.bytes", "5000"))

	got, res := describe(t, c, 1, describeReq(4, kmsg.ConfigResourceTypeTopic, "d"))
	wantCode(t, "describe topic", res.ErrorCode, res.ErrorMessage, nil)
	if len(got) != len(topicConfigDefs) {
		t.Fatalf("%d configs described, %d known", len(got), len(topicConfigDefs))
	}
	for _, tc := range []struct{ name, value, synonyms string }{
		{"retention.ms", "1000", "retention.ms=1000/1 log.retention.ms=604800000/5"},
		{"retention.bytes", "5000", "log.retention.bytes=5000/3 log.retention.bytes=-1/5"},
		{"segment.ms", "3600000", "log.roll.ms=3600000/4 log.roll.ms=604800000/5"},
		{"cleanup.policy", "delete", "log.cleanup.policy=delete/5"},
	} {
		cfg := got[tc.name]
		if cfg.Value == nil || *cfg.Value != tc.value || synonyms(cfg) != tc.synonyms {
			t.Errorf("%s = %v, synonyms %q; want %s, %q", tc.name, cfg.Value, synonyms(cfg), tc.value, tc.synonyms)
		}
		if cfg.Source != cfg.ConfigSynonyms[0].Source || cfg.ReadOnly || cfg.Documentation == nil || *cfg.Documentation == "" {
			t.Errorf("%s: source %d, read-only %v, doc %v", tc.name, cfg.Source, cfg.ReadOnly, cfg.Documentation)
		}
	}
	if got["cleanup.policy"].ConfigType != kmsg.ConfigTypeList || got["retention.ms"].ConfigType != kmsg.ConfigTypeLong {
		t.Errorf("types: cleanup.policy %v, retention.ms %v", got["cleanup.policy"].ConfigType, got["retention.ms"].ConfigType)
	}

	// v0 has no source: IsDefault says it. v2 has no type or docs.
	old, _ := describe(t, c, 1, describeReq(0, kmsg.ConfigResourceTypeTopic, "d"))
	if old["retention.ms"].IsDefault || !old["cleanup.policy"].IsDefault {
		t.Errorf("v0 IsDefault: retention.ms %v, cleanup.policy %v", old["retention.ms"].IsDefault, old["cleanup.policy"].IsDefault)
	}
	v2, _ := describe(t, c, 1, describeReq(2, kmsg.ConfigResourceTypeTopic, "d"))
	if v2["cleanup.policy"].Documentation != nil || v2["cleanup.policy"].ConfigType != 0 || len(v2["cleanup.policy"].ConfigSynonyms) != 1 {
		t.Errorf("v2 carries %+v", v2["cleanup.policy"])
	}
	some, _ := describe(t, c, 1, describeReq(4, kmsg.ConfigResourceTypeTopic, "d", "retention.ms", "no.such.config"))
	if len(some) != 1 || some["retention.ms"].Value == nil {
		t.Errorf("filtered describe gave %v", some)
	}

	// This broker: every default under Kafka's broker names, plus read-only settings.
	self, res := describe(t, c, 1, describeReq(4, kmsg.ConfigResourceTypeBroker, "1"))
	wantCode(t, "describe broker", res.ErrorCode, res.ErrorMessage, nil)
	if v := self["log.retention.bytes"]; v.Value == nil || *v.Value != "5000" || v.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("log.retention.bytes: %+v", v)
	}
	if v := self["log.roll.ms"]; v.Value == nil || *v.Value != "3600000" || v.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("log.roll.ms: %+v", v)
	}
	if v := self["num.partitions"]; v.Value == nil || *v.Value != "1" || !v.ReadOnly {
		t.Errorf("num.partitions: %+v", v)
	}
	if _, ok := self["retention.ms"]; ok {
		t.Errorf("broker resource described under a topic config name")
	}
	// The cluster-wide defaults: only what is set.
	defaults, _ := describe(t, c, 1, describeReq(4, kmsg.ConfigResourceTypeBroker, ""))
	if len(defaults) != 1 || *defaults["log.retention.bytes"].Value != "5000" {
		t.Errorf("cluster defaults described as %v", defaults)
	}

	for _, tc := range []struct {
		kind kmsg.ConfigResourceType
		name string
		want *kerr.Error
	}{
		{kmsg.ConfigResourceTypeTopic, "nope", kerr.UnknownTopicOrPartition},
		{kmsg.ConfigResourceTypeBroker, "2", kerr.InvalidRequest},
		{kmsg.ConfigResourceTypeBroker, "one", kerr.InvalidRequest},
		{kmsg.ConfigResourceTypeBrokerLogger, "1", kerr.InvalidRequest},
	} {
		_, res := describe(t, c, 1, describeReq(4, tc.kind, tc.name))
		wantCode(t, fmt.Sprintf("describe %v %q", tc.kind, tc.name), res.ErrorCode, res.ErrorMessage, tc.want)
		if len(res.Configs) != 0 {
			t.Errorf("failed resource lists configs")
		}
	}
}

func TestTopicConfigMetasCoverEveryConfig(t *testing.T) {
	brokerNames := map[string]string{}
	for _, d := range topicConfigDefs {
		m, ok := topicConfigMetas[d.name]
		if !ok || m.brokerName == "" || m.kind == 0 || m.doc == "" {
			t.Errorf("%s: no type, broker name or documentation: %+v", d.name, m)
			continue
		}
		if !d.used && !strings.Contains(m.doc, "not act on") {
			t.Errorf("%s is not acted on, and its documentation does not say so", d.name)
		}
		if other, dup := brokerNames[m.brokerName]; dup {
			t.Errorf("broker name %s stands for both %s and %s", m.brokerName, other, d.name)
		}
		brokerNames[m.brokerName] = d.name
		if got, ok := topicConfigOfBrokerName(m.brokerName); !ok || got != d.name {
			t.Errorf("broker name %s maps to %q", m.brokerName, got)
		}
	}
	if len(topicConfigMetas) != len(topicConfigDefs) {
		t.Errorf("%d metas for %d configs", len(topicConfigMetas), len(topicConfigDefs))
	}
}

func alterReq(kind kmsg.ConfigResourceType, name string, kv ...string) *kmsg.AlterConfigsRequest {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Version = 2
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kind, name
	for i := 0; i+1 < len(kv); i += 2 {
		cfg := kmsg.NewAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = kv[i], kmsg.StringPtr(kv[i+1])
		rr.Configs = append(rr.Configs, cfg)
	}
	req.Resources = append(req.Resources, rr)
	return req
}

func alterCode(t *testing.T, c *cluster, id int32, req *kmsg.AlterConfigsRequest) (int16, *string) {
	t.Helper()
	res := admin(t, c, id, req).(*kmsg.AlterConfigsResponse).Resources[0]
	return res.ErrorCode, res.ErrorMessage
}

func TestAlterConfigsReplacesWholesale(t *testing.T) {
	c := newCluster(t, 1, 25)
	c.waitReady()
	r := c.nodes[1].r
	createTopic(t, c, 1, "a", 1, 1, map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"})
	waitLeaders(t, c, "a", 1)
	p := r.byName[topicPartition{"a", 0}]
	if p.Cfg.RetentionMs != 1000 || !p.Cfg.Compact || p.Cfg.Delete {
		t.Fatalf("created with %+v", p.Cfg)
	}
	cd, msg := alterCode(t, c, 1, alterReq(kmsg.ConfigResourceTypeTopic, "a", "segment.bytes", "2048", "max.message.bytes", "5000"))
	wantCode(t, "replace", cd, msg, nil)
	if got := r.Metadata().Topics["a"].Configs; fmt.Sprint(got) != "map[max.message.bytes:5000 segment.bytes:2048]" {
		t.Fatalf("configs after replace: %v", got)
	}
	// The partition runs with the new configuration: what was removed is back to the default.
	c.runFor(10 * time.Millisecond)
	if p.Cfg.SegmentBytes != 2048 || p.Cfg.MaxMessageBytes != 5000 || p.Cfg.RetentionMs != 604800000 || p.Cfg.Compact || !p.Cfg.Delete {
		t.Fatalf("partition config after replace: %+v", p.Cfg)
	}

	before := fmt.Sprint(r.Metadata().Topics["a"].Configs)
	for _, tc := range []struct {
		name string
		req  *kmsg.AlterConfigsRequest
		want *kerr.Error
	}{
		{"bad value", alterReq(kmsg.ConfigResourceTypeTopic, "a", "retention.ms", "7", "segment.bytes", "lots"), kerr.InvalidConfig},
		{"unknown config", alterReq(kmsg.ConfigResourceTypeTopic, "a", "retention.ms", "7", "colour", "blue"), kerr.InvalidConfig},
		{"config twice", alterReq(kmsg.ConfigResourceTypeTopic, "a", "retention.ms", "7", "retention.ms", "8"), kerr.InvalidRequest},
		{"unsupported value", alterReq(kmsg.ConfigResourceTypeTopic, "a", "compression.type", "gzip"), kerr.InvalidConfig},
		{"unknown topic", alterReq(kmsg.ConfigResourceTypeTopic, "b", "retention.ms", "7"), kerr.UnknownTopicOrPartition},
		{"per-broker", alterReq(kmsg.ConfigResourceTypeBroker, "1", "log.retention.ms", "7"), kerr.InvalidRequest},
		{"read-only broker config", alterReq(kmsg.ConfigResourceTypeBroker, "", "num.partitions", "7"), kerr.InvalidConfig},
	} {
		cd, msg := alterCode(t, c, 1, tc.req)
		wantCode(t, tc.name, cd, msg, tc.want)
		if tc.want != kerr.UnknownTopicOrPartition && (msg == nil || *msg == "") {
			t.Errorf("%s: no message saying why", tc.name)
		}
	}
	vo := alterReq(kmsg.ConfigResourceTypeTopic, "a", "retention.ms", "7")
	vo.ValidateOnly = true
	cd, msg = alterCode(t, c, 1, vo)
	wantCode(t, "validate only", cd, msg, nil)
	twice := alterReq(kmsg.ConfigResourceTypeTopic, "a", "retention.ms", "7")
	twice.Resources = append(twice.Resources, twice.Resources[0])
	for _, res := range admin(t, c, 1, twice).(*kmsg.AlterConfigsResponse).Resources {
		wantCode(t, "resource twice", res.ErrorCode, nil, kerr.InvalidRequest)
	}
	if after := fmt.Sprint(r.Metadata().Topics["a"].Configs); after != before {
		t.Fatalf("refused or validate-only requests changed %s to %s", before, after)
	}

	// A null value removes; the cluster-wide defaults are replaced the same way.
	req := alterReq(kmsg.ConfigResourceTypeTopic, "a", "segment.bytes", "4096")
	null := kmsg.NewAlterConfigsRequestResourceConfig()
	null.Name = "max.message.bytes"
	req.Resources[0].Configs = append(req.Resources[0].Configs, null)
	cd, msg = alterCode(t, c, 1, req)
	wantCode(t, "null value", cd, msg, nil)
	if got := fmt.Sprint(r.Metadata().Topics["a"].Configs); got != "map[segment.bytes:4096]" {
		t.Fatalf("after a null value: %s", got)
	}
	cd, msg = alterCode(t, c, 1, alterReq(kmsg.ConfigResourceTypeBroker, "", "log.retention.ms", "60000", "retention.bytes", "100"))
	wantCode(t, "cluster defaults", cd, msg, nil)
	cd, msg = alterCode(t, c, 1, alterReq(kmsg.ConfigResourceTypeBroker, "", "log.retention.bytes", "200"))
	wantCode(t, "cluster defaults again", cd, msg, nil)
	if got := fmt.Sprint(r.Metadata().BrokerConfigs); got != "map[retention.bytes:200]" {
		t.Fatalf("cluster defaults after replace: %s", got)
	}
	c.runFor(10 * time.Millisecond)
	if p.Cfg.RetentionBytes != 200 || p.Cfg.RetentionMs != 604800000 {
		t.Fatalf("partition did not take the cluster defaults: %+v", p.Cfg)
	}
}

func setOp(name, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	return incOp(kmsg.IncrementalAlterConfigOpSet, name, &value)
}

func incOp(op kmsg.IncrementalAlterConfigOp, name string, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Op, cfg.Name, cfg.Value = op, name, value
	return cfg
}

func incrementalReq(kind kmsg.ConfigResourceType, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = 1
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.Configs = kind, name, ops
	req.Resources = append(req.Resources, rr)
	return req
}

// incremental sends one resource's operations to node id and fails the
// test unless they succeed.
func incremental(t *testing.T, c *cluster, id int32, kind kmsg.ConfigResourceType, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) {
	t.Helper()
	res := admin(t, c, id, incrementalReq(kind, name, ops...)).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	wantCode(t, fmt.Sprintf("alter %q", name), res.ErrorCode, res.ErrorMessage, nil)
}

func TestIncrementalAlterConfigs(t *testing.T) {
	c := newCluster(t, 1, 26)
	c.waitReady()
	r := c.nodes[1].r
	createTopic(t, c, 1, "i", 1, 1, map[string]string{"retention.ms": "1000"})
	waitLeaders(t, c, "i", 1)
	p := r.byName[topicPartition{"i", 0}]
	policy := func() string { return r.Metadata().Topics["i"].Configs["cleanup.policy"] }
	val := func(s string) *string { return &s }

	incremental(t, c, 1, kmsg.ConfigResourceTypeTopic, "i", incOp(kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", val("compact")))
	if policy() != "delete,compact" {
		t.Fatalf("APPEND compact to the inherited delete gave %q", policy())
	}
	c.runFor(10 * time.Millisecond)
	if !p.Cfg.Compact || !p.Cfg.Delete {
		t.Fatalf("partition config after APPEND: %+v", p.Cfg)
	}
	incremental(t, c, 1, kmsg.ConfigResourceTypeTopic, "i",
		incOp(kmsg.IncrementalAlterConfigOpSubtract, "cleanup.policy", val("delete")),
		incOp(kmsg.IncrementalAlterConfigOpDelete, "retention.ms", nil),
		setOp("segment.bytes", "1048576"))
	if got := fmt.Sprint(r.Metadata().Topics["i"].Configs); got != "map[cleanup.policy:compact segment.bytes:1048576]" {
		t.Fatalf("after SUBTRACT, DELETE, SET: %s", got)
	}
	c.runFor(10 * time.Millisecond)
	if p.Cfg.Delete || !p.Cfg.Compact || p.Cfg.RetentionMs != 604800000 || p.Cfg.SegmentBytes != 1048576 {
		t.Fatalf("partition config after SUBTRACT, DELETE, SET: %+v", p.Cfg)
	}

	before := fmt.Sprint(r.Metadata().Topics["i"].Configs)
	for _, tc := range []struct {
		name string
		ops  []kmsg.IncrementalAlterConfigsRequestResourceConfig
		want *kerr.Error
	}{
		{"append to a non-list", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp(kmsg.IncrementalAlterConfigOpAppend, "retention.ms", val("5"))}, kerr.InvalidRequest},
		{"set without a value", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp(kmsg.IncrementalAlterConfigOpSet, "retention.ms", nil)}, kerr.InvalidRequest},
		{"unknown operation", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp(7, "retention.ms", val("5"))}, kerr.InvalidRequest},
		{"subtract to nothing", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp(kmsg.IncrementalAlterConfigOpSubtract, "cleanup.policy", val("compact"))}, kerr.InvalidConfig},
		{"append a bad item", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp(kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", val("shred"))}, kerr.InvalidConfig},
		{"one bad of two", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("retention.ms", "5"), setOp("min.insync.replicas", "0")}, kerr.InvalidConfig},
		{"delete unknown", []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp(kmsg.IncrementalAlterConfigOpDelete, "colour", nil)}, kerr.InvalidConfig},
		{"named twice", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("retention.ms", "5"), incOp(kmsg.IncrementalAlterConfigOpDelete, "retention.ms", nil)}, kerr.InvalidRequest},
	} {
		res := admin(t, c, 1, incrementalReq(kmsg.ConfigResourceTypeTopic, "i", tc.ops...)).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		wantCode(t, tc.name, res.ErrorCode, res.ErrorMessage, tc.want)
	}
	vo := incrementalReq(kmsg.ConfigResourceTypeTopic, "i", setOp("retention.ms", "5"))
	vo.ValidateOnly = true
	res := admin(t, c, 1, vo).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	wantCode(t, "validate only", res.ErrorCode, res.ErrorMessage, nil)
	if after := fmt.Sprint(r.Metadata().Topics["i"].Configs); after != before {
		t.Fatalf("refused or validate-only requests changed %s to %s", before, after)
	}
}

func TestClusterDefaultsReachEveryBroker(t *testing.T) {
	c := newCluster(t, 3, 27)
	c.waitReady()
	createTopic(t, c, 1, "own", 1, 3, map[string]string{"retention.ms": "1000"})
	createTopic(t, c, 1, "inherits", 1, 3, nil)
	waitLeaders(t, c, "own", 1)
	waitLeaders(t, c, "inherits", 1)
	// Sent to one broker; every broker's replicas pick it up, except where
	// the topic has its own setting.
	incremental(t, c, 3, kmsg.ConfigResourceTypeBroker, "", setOp("log.retention.ms", "120000"))
	retention := func(id int32, topic string) int64 {
		return c.nodes[id].r.byName[topicPartition{topic, 0}].Cfg.RetentionMs
	}
	if !c.runUntil(5*time.Second, func() bool {
		for id := range c.nodes {
			if retention(id, "inherits") != 120000 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("cluster-wide retention.ms did not reach every replica")
	}
	for id := range c.nodes {
		if got := retention(id, "own"); got != 1000 {
			t.Fatalf("node %d: topic's own retention.ms %d was overridden by the cluster default", id, got)
		}
	}
	incremental(t, c, 2, kmsg.ConfigResourceTypeBroker, "", incOp(kmsg.IncrementalAlterConfigOpDelete, "log.retention.ms", nil))
	if !c.runUntil(5*time.Second, func() bool {
		for id := range c.nodes {
			if retention(id, "inherits") != 604800000 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("deleting the cluster default did not restore Kafka's default everywhere")
	}
}

// produceNow produces n one-record batches stamped with the cluster clock.
func produceNow(t *testing.T, c *cluster, topic string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		b := records.Build(records.BuildOptions{BaseTimestamp: c.clk.Now().UnixMilli()},
			[]records.Record{{Key: []byte("k"), Value: []byte(fmt.Sprintf("%s-%03d-%s", topic, i, strings.Repeat("x", 100)))}})
		if sp := produce(c, 1, topic, 0, -1, b); sp.ErrorCode != 0 {
			t.Fatalf("produce %d: %v", i, kerr.ErrorForCode(sp.ErrorCode))
		}
	}
}

func TestRetentionChangeTakesEffect(t *testing.T) {
	c := newCluster(t, 1, 28)
	c.waitReady()
	r := c.nodes[1].r
	keep := map[string]string{"segment.bytes": "1024", "retention.ms": "-1"}
	createTopic(t, c, 1, "by-time", 1, 1, keep)
	createTopic(t, c, 1, "by-size", 1, 1, keep)
	waitLeaders(t, c, "by-time", 1)
	waitLeaders(t, c, "by-size", 1)
	produceNow(t, c, "by-time", 40)
	produceNow(t, c, "by-size", 40)
	maintenance := time.Duration(2*maintenanceTicks) * r.cfg.TickInterval
	c.runFor(maintenance)
	start := func(topic string) int64 { return r.byName[topicPartition{topic, 0}].StartOffset() }
	if start("by-time") != 0 || start("by-size") != 0 {
		t.Fatalf("retention ran with retention.ms=-1: starts %d, %d", start("by-time"), start("by-size"))
	}
	// Topic-level retention.ms, and the cluster-wide retention.bytes.
	incremental(t, c, 1, kmsg.ConfigResourceTypeTopic, "by-time", setOp("retention.ms", "1"))
	incremental(t, c, 1, kmsg.ConfigResourceTypeBroker, "", setOp("log.retention.bytes", "2048"))
	incremental(t, c, 1, kmsg.ConfigResourceTypeTopic, "by-size", incOp(kmsg.IncrementalAlterConfigOpDelete, "retention.ms", nil))
	incremental(t, c, 1, kmsg.ConfigResourceTypeTopic, "by-time", setOp("retention.bytes", "-1"))
	if !c.runUntil(2*maintenance, func() bool { return start("by-time") > 0 && start("by-size") > 0 }) {
		t.Fatalf("retention did not follow the new configs: starts %d, %d", start("by-time"), start("by-size"))
	}
	sp := fetchAt(c, 1, "by-time", 0)
	wantCode(t, "fetch below the new start", sp.ErrorCode, nil, kerr.OffsetOutOfRange)
	if log := r.byName[topicPartition{"by-size", 0}].Replica(); log.Stats().SizeBytes > 2048+1024 {
		t.Fatalf("by-size keeps %d bytes, retention.bytes 2048", log.Stats().SizeBytes)
	}
}

func fetchAt(c *cluster, id int32, topic string, offset int64) kmsg.FetchResponseTopicPartition {
	return fetchPartitionAt(c, id, topic, 0, offset)
}

func fetchPartitionAt(c *cluster, id int32, topic string, partition int32, offset int64) kmsg.FetchResponseTopicPartition {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxBytes = 11, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = partition, offset, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.request(id, req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
}

func deleteRecordsReq(topic string, offsets map[int32]int64) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Version, req.TimeoutMillis = 2, 5000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	var ps []int32
	for p := range offsets {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	for _, p := range ps {
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = p, offsets[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func deleteRecords(t *testing.T, c *cluster, id int32, topic string, partition int32, offset int64) kmsg.DeleteRecordsResponseTopicPartition {
	t.Helper()
	return admin(t, c, id, deleteRecordsReq(topic, map[int32]int64{partition: offset})).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
}

func TestDeleteRecords(t *testing.T) {
	c := newCluster(t, 1, 29)
	c.waitReady()
	createTopic(t, c, 1, "dr", 2, 1, nil)
	waitLeaders(t, c, "dr", 2)
	for i := 0; i < 5; i++ {
		if sp := produce(c, 1, "dr", 0, -1, batchOf(fmt.Sprint(2*i), fmt.Sprint(2*i+1))); sp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
		}
	}
	sp := deleteRecords(t, c, 1, "dr", 0, 3)
	wantCode(t, "delete to 3", sp.ErrorCode, nil, nil)
	if sp.LowWatermark != 3 {
		t.Fatalf("low watermark %d, want 3", sp.LowWatermark)
	}
	wantCode(t, "fetch below the start", fetchAt(c, 1, "dr", 2).ErrorCode, nil, kerr.OffsetOutOfRange)
	// Offset 3 sits inside the batch 2-3: the whole batch comes back.
	if got := fetchAt(c, 1, "dr", 3); got.ErrorCode != 0 || got.LogStartOffset != 3 || len(got.RecordBatches) == 0 {
		t.Fatalf("fetch at the new start: %v, log start %d, %d bytes", kerr.ErrorForCode(got.ErrorCode), got.LogStartOffset, len(got.RecordBatches))
	}

	for _, tc := range []struct {
		name      string
		partition int32
		offset    int64
		want      *kerr.Error
		low       int64
	}{
		{"below the start", 0, 1, nil, 3},
		{"past the high watermark", 0, 11, kerr.OffsetOutOfRange, -1},
		{"negative", 0, -5, kerr.OffsetOutOfRange, -1},
		{"high watermark", 0, -1, nil, 10},
		{"empty partition", 1, -1, nil, 0},
		{"no such partition", 7, 0, kerr.UnknownTopicOrPartition, -1},
	} {
		sp := deleteRecords(t, c, 1, "dr", tc.partition, tc.offset)
		wantCode(t, tc.name, sp.ErrorCode, nil, tc.want)
		if sp.LowWatermark != tc.low {
			t.Errorf("%s: low watermark %d, want %d", tc.name, sp.LowWatermark, tc.low)
		}
	}
	sp = deleteRecords(t, c, 1, "nope", 0, 0)
	wantCode(t, "unknown topic", sp.ErrorCode, nil, kerr.UnknownTopicOrPartition)

	// The new start is replicated through the log: it survives a crash.
	n := c.nodes[1]
	n.crash()
	n.boot()
	c.waitReady()
	waitLeaders(t, c, "dr", 2)
	if s := n.r.byName[topicPartition{"dr", 0}].StartOffset(); s != 10 {
		t.Fatalf("start offset %d after restart, want 10", s)
	}
}

func TestDeleteRecordsLeaderOnly(t *testing.T) {
	c := newCluster(t, 3, 30)
	c.waitReady()
	createTopic(t, c, 1, "r3", 1, 3, nil)
	createTopic(t, c, 1, "r1", 1, 1, nil)
	waitLeaders(t, c, "r3", 1)
	waitLeaders(t, c, "r1", 1)
	lead := leaderOf(c, "r3", 0)
	for i := 0; i < 4; i++ {
		if sp := produce(c, lead, "r3", 0, -1, batchOf(fmt.Sprint(i))); sp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
		}
	}
	for id := range c.nodes {
		if id == lead {
			continue
		}
		sp := deleteRecords(t, c, id, "r3", 0, 2)
		wantCode(t, fmt.Sprintf("follower %d", id), sp.ErrorCode, nil, kerr.NotLeaderForPartition)
	}
	r1Lead := leaderOf(c, "r1", 0)
	for id := range c.nodes {
		if id != r1Lead {
			sp := deleteRecords(t, c, id, "r1", 0, 0)
			wantCode(t, fmt.Sprintf("broker %d without a replica", id), sp.ErrorCode, nil, kerr.NotLeaderForPartition)
			break
		}
	}
	sp := deleteRecords(t, c, lead, "r3", 0, 2)
	wantCode(t, "leader", sp.ErrorCode, nil, nil)
	if !c.runUntil(5*time.Second, func() bool {
		for _, n := range c.nodes {
			if n.r.byName[topicPartition{"r3", 0}].StartOffset() != 2 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("followers did not apply the new start offset")
	}
}

func TestDescribeCluster(t *testing.T) {
	c := newCluster(t, 3, 31)
	c.waitReady()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version = 1
	resp := admin(t, c, 2, req).(*kmsg.DescribeClusterResponse)
	wantCode(t, "describe cluster", resp.ErrorCode, resp.ErrorMessage, nil)
	var brokers []string
	for _, b := range resp.Brokers {
		brokers = append(brokers, fmt.Sprintf("%d@%s:%d", b.NodeID, b.Host, b.Port))
	}
	if fmt.Sprint(brokers) != "[1@127.0.0.1:9001 2@127.0.0.1:9002 3@127.0.0.1:9003]" {
		t.Fatalf("brokers %v", brokers)
	}
	if resp.ClusterID != "floe" || resp.ControllerID != int32(c.nodes[2].r.controllerLeader()) || resp.ControllerID <= 0 {
		t.Fatalf("cluster %q controller %d", resp.ClusterID, resp.ControllerID)
	}
	req.EndpointType = 2
	resp = admin(t, c, 2, req).(*kmsg.DescribeClusterResponse)
	wantCode(t, "controllers endpoint", resp.ErrorCode, resp.ErrorMessage, kerr.UnsupportedEndpointType)
}
