package node

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/share"
)

// TestShareDeadLetterTopicRules: KIP-1191's rules on a group's dead-letter
// topic, as IncrementalAlterConfigs of the group config applies them: an
// internal name, an existing topic without errors.deadletterqueue.group.enable
// (unset or false), and a name without the broker's prefix (dlq.) are each
// INVALID_CONFIG with the reason, and change nothing; a bad value of the
// topic config itself is refused by CreateTopics; an opted-in topic, and a
// missing one named with the prefix (created on demand), are taken. With
// auto-creation off a missing topic is refused too, and with an empty
// prefix any name passes.
func TestShareDeadLetterTopicRules(t *testing.T) {
	c := newClusterWith(t, 1, 48, earliestShares)
	c.waitReady()
	createTopic(t, c, 1, "dlq.plain", 1, 1, nil)
	createTopic(t, c, 1, "dlq.off", 1, 1, map[string]string{dlqEnableConfig: "false"})
	createTopic(t, c, 1, "dlq.on", 1, 1, map[string]string{dlqEnableConfig: "true"})
	createTopic(t, c, 1, "orders.dead", 1, 1, map[string]string{dlqEnableConfig: "true"})
	for _, bad := range []struct{ topic, why string }{
		{"__consumer_offsets", "internal"},
		{"__x", "internal"},
		{"dlq.plain", "DLQ is not enabled"},
		{"dlq.off", "DLQ is not enabled"},
		{"orders.dead", "prefix: dlq."},
		{"orders.missing", "prefix: dlq."},
	} {
		res := alterGroupConfigs(c, "sg", dlqTopicConfig, bad.topic)
		if res.ErrorCode != kerr.InvalidConfig.Code || res.ErrorMessage == nil || !strings.Contains(*res.ErrorMessage, bad.why) {
			t.Errorf("dead-letter topic %q: %v %v, want INVALID_CONFIG saying %q", bad.topic, kerr.ErrorForCode(res.ErrorCode), res.ErrorMessage, bad.why)
		}
		if got := c.nodes[1].r.ctl.state.GroupConfigs["sg"][dlqTopicConfig]; got != "" {
			t.Fatalf("a refused change set the dead-letter topic to %q", got)
		}
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 5000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "dlq.maybe", 1, 1
	rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: dlqEnableConfig, Value: kmsg.StringPtr("maybe")}}
	req.Topics = append(req.Topics, rt)
	if code := c.request(1, req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != kerr.InvalidConfig.Code {
		t.Errorf("%s=maybe: %v, want INVALID_CONFIG", dlqEnableConfig, kerr.ErrorForCode(code))
	}
	for _, good := range []string{"dlq.on", "dlq.missing"} {
		if res := alterGroupConfigs(c, "sg", dlqTopicConfig, good); res.ErrorCode != 0 {
			t.Errorf("dead-letter topic %q: %v %v", good, kerr.ErrorForCode(res.ErrorCode), res.ErrorMessage)
		}
	}

	empty := ""
	d := newClusterWith(t, 1, 49, func(cfg *Config) { cfg.Shares.DeadLetterNoAutoCreate, cfg.Shares.DeadLetterPrefix = true, &empty })
	d.waitReady()
	createTopic(t, d, 1, "orders.dead", 1, 1, map[string]string{dlqEnableConfig: "true"})
	if res := alterGroupConfigs(d, "sg", dlqTopicConfig, "dlq.missing"); res.ErrorCode != kerr.InvalidConfig.Code || !strings.Contains(*res.ErrorMessage, "auto create is disabled") {
		t.Errorf("a missing topic with auto-creation off: %v %v", kerr.ErrorForCode(res.ErrorCode), res.ErrorMessage)
	}
	if res := alterGroupConfigs(d, "sg", dlqTopicConfig, "orders.dead"); res.ErrorCode != 0 {
		t.Errorf("an opted-in topic with no prefix rule: %v %v", kerr.ErrorForCode(res.ErrorCode), res.ErrorMessage)
	}
}

// TestShareDeadLetterWaitsForOptIn: a group's dead-letter topic loses its
// opt-in (errors.deadletterqueue.group.enable=false) after the group named
// it; a rejected record then waits, not copied and not archived (the
// share-partition's start stays on it), and is copied once the topic is
// opted in again. A missing topic is created opted in, with CreateTime.
func TestShareDeadLetterWaitsForOptIn(t *testing.T) {
	c := newClusterWith(t, 1, 50, earliestShares)
	c.waitReady()
	createTopic(t, c, 1, "q", 1, 1, nil)
	if res := alterGroupConfigs(c, "sg", dlqTopicConfig, "dlq.q"); res.ErrorCode != 0 {
		t.Fatalf("alter: %v", kerr.ErrorForCode(res.ErrorCode))
	}
	produceWithHeader(t, c, "q", "a")
	produceWithHeader(t, c, "q", "b")
	shareJoin(t, c, 1, "sg", "m", "q")
	acquireFirst(t, c, 1, "sg", "m", 1)
	if a := c.request(1, shareAckOf(c, "q", "sg", "m", 1, ackBatch(0, 0, share.AckReject))).(*kmsg.ShareAcknowledgeResponse); a.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("reject: %+v", a)
	}
	waitDLQ(t, c, "dlq.q", 1)
	dt := c.nodes[1].r.ctl.state.Topics["dlq.q"]
	if dt.Configs[dlqEnableConfig] != "true" || dt.Configs["message.timestamp.type"] != "CreateTime" {
		t.Fatalf("the auto-created dead-letter topic's configs: %v", dt.Configs)
	}
	incremental(t, c, 1, kmsg.ConfigResourceTypeTopic, "dlq.q", setOp(dlqEnableConfig, "false"))
	if a := c.request(1, shareAckOf(c, "q", "sg", "m", 2, ackBatch(1, 1, share.AckReject))).(*kmsg.ShareAcknowledgeResponse); a.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("reject: %+v", a)
	}
	c.runFor(5 * time.Second)
	sh, err := c.nodes[1].r.shareShardFor("sg")
	if err != nil {
		t.Fatal(err)
	}
	sp := sh.parts[share.Key{Group: "sg", Topic: "q", Partition: 0}]
	if sp.Start() != 1 || sp.InFlight()[0].State != share.DeadLettering {
		t.Fatalf("with the opt-in removed: start %d, in flight %+v; want offset 1 waiting", sp.Start(), sp.InFlight())
	}
	if got, _ := fetchRecordsAll(t, c, 1, "dlq.q", 0); len(got) != 1 {
		t.Fatalf("the dead-letter topic got %d records without its opt-in, want 1", len(got))
	}
	if msg := c.nodes[1].r.shares.dlq.blocked["sg"]; !strings.Contains(msg, "DLQ is not enabled") {
		t.Errorf("why the dead letters wait: %q", msg)
	}
	incremental(t, c, 1, kmsg.ConfigResourceTypeTopic, "dlq.q", setOp(dlqEnableConfig, "true"))
	got := waitDLQ(t, c, "dlq.q", 2)
	wantDLQHeaders(t, got[1], "sg", "q", 1, 1, "rejected")
}
