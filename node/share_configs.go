package node

// Group configs (GROUP config resources, type 32, KIP-848/KIP-932/KIP-1240):
// the consumer timeouts of one consumer group (consumer_group_configs.go)
// and the share settings of one share group, set with IncrementalAlterConfigs and
// read with DescribeConfigs, kept by the controller (State.GroupConfigs)
// so every broker applies the same. A group without a setting uses the
// broker's (ShareConfig, from its flags).
//
//	share.auto.offset.reset         latest | earliest: where a share-partition the group never read starts
//	share.isolation.level           read_uncommitted | read_committed: read_committed acquires only below
//	                                the last stable offset (records of aborted transactions are still
//	                                delivered, not archived as Kafka does: not done)
//	share.record.lock.duration.ms   1000 to 3600000
//	share.delivery.count.limit      2 to 10 (Kafka's range)
//
// And Floe's retry policy (beyond Kafka; node/share's Backoff): a record
// released, or whose lock expired, is redelivered only after a backoff,
// fixed (multiplier 1) or exponential, with jitter drawn from the node's
// seeded generator. What is left of a record's delay is persisted with
// the share-partition's state, so a coordinator failover does not cut it
// short (node/share's Restore: it runs again from the restore, never
// shorter whatever the brokers' clocks say).
//
//	floe.share.retry.backoff.ms          0 (none) to 3600000
//	floe.share.retry.backoff.max.ms      0 (no cap) to 86400000
//	floe.share.retry.backoff.multiplier  1 (fixed) to 100
//	floe.share.retry.backoff.jitter      0 to 1
//
// And the group's dead-letter topic (KIP-1191's name; node/share_dlq.go):
// a record a consumer rejects, or that reaches the delivery limit, is
// copied there, then archived. Created with the broker's defaults if
// missing; unset (the default): such records are archived, not copied.
//
//	errors.deadletterqueue.topic.name          a topic name, not an internal one (__*)
//	errors.deadletterqueue.copy.record.enable  true (Floe's default; Kafka's is false): the
//	                                           dead-letter record carries the record's key,
//	                                           value and headers; false: the __dlq.errors.*
//	                                           headers only, null key and value
//
// A change applies to the group's share-partitions from their next fetch
// or acknowledgement (share.Partition.Configure). AlterConfigs (the
// non-incremental API) does not take group resources; names outside this
// list are INVALID_CONFIG.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

type groupConfigDef struct {
	name  string
	kind  kmsg.ConfigType
	doc   string
	check func(string) error
}

var groupConfigDefs = []groupConfigDef{
	{consumerSessionConfig, kmsg.ConfigTypeInt, "How long a consumer group member may go without a heartbeat (consumer_group_configs.go).", intIn(1, math.MaxInt32)},
	{consumerIntervalConfig, kmsg.ConfigTypeInt, "The heartbeat interval consumer group members are told to use.", intIn(1, math.MaxInt32)},
	{"share.auto.offset.reset", kmsg.ConfigTypeString, "Where a share-partition the group never read starts: latest or earliest.", oneOf("latest", "earliest")},
	{"share.isolation.level", kmsg.ConfigTypeString, "read_committed acquires only below the last stable offset; aborted records are not archived (not done).", oneOf("read_uncommitted", "read_committed")},
	{"share.record.lock.duration.ms", kmsg.ConfigTypeInt, "How long a consumer holds the records it acquired.", intIn(1000, 3600000)},
	{"share.delivery.count.limit", kmsg.ConfigTypeInt, "Deliveries of one record before it is archived.", intIn(2, 10)},
	{"floe.share.retry.backoff.ms", kmsg.ConfigTypeLong, "Floe: a released or expired record waits this long before its redelivery (0: none).", intIn(0, 3600000)},
	{"floe.share.retry.backoff.max.ms", kmsg.ConfigTypeLong, "Floe: the longest redelivery backoff.", intIn(0, 86400000)},
	{"floe.share.retry.backoff.multiplier", kmsg.ConfigTypeDouble, "Floe: the backoff grows by this factor per delivery (1: fixed).", floatIn(1, 100)},
	{"floe.share.retry.backoff.jitter", kmsg.ConfigTypeDouble, "Floe: each delay is scaled by a random factor in [1-jitter, 1+jitter].", floatIn(0, 1)},
	{dlqTopicConfig, kmsg.ConfigTypeString, "The topic rejected records and records at the delivery limit are copied to before they are archived (created if missing; empty: none).", dlqTopicName},
	{dlqCopyConfig, kmsg.ConfigTypeBoolean, "KIP-1191: true puts the record's key, value and headers in its dead-letter record beside the __dlq.errors.* headers; false, the headers only (Floe's default is true, Kafka's false).", boolConfig},
}

// dlqCopyConfig says whether a group's dead-letter records carry the
// record itself (KIP-1191).
const dlqCopyConfig = "errors.deadletterqueue.copy.record.enable"

// boolConfig checks a boolean config value, true or false in any case (as
// Kafka's ConfigDef takes them).
func boolConfig(v string) error {
	if strings.EqualFold(v, "true") || strings.EqualFold(v, "false") {
		return nil
	}
	return fmt.Errorf("must be true or false")
}

// dlqTopicConfig names the group's dead-letter topic (KIP-1191).
const dlqTopicConfig = "errors.deadletterqueue.topic.name"

// dlqTopicName checks a dead-letter topic name: a valid topic name, and
// not an internal topic's (a group must not make the broker write there).
func dlqTopicName(v string) error {
	if v == "" {
		return nil
	}
	if err := controller.ValidateTopicName(v); err != nil {
		return err
	}
	if strings.HasPrefix(v, "__") {
		return fmt.Errorf("%q is an internal topic's name", v)
	}
	return nil
}

func floatIn(lo, hi float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < lo || f > hi {
			return fmt.Errorf("must be a number from %g to %g", lo, hi)
		}
		return nil
	}
}

func oneOf(vals ...string) func(string) error {
	return func(v string) error {
		if containsString(vals, v) {
			return nil
		}
		return fmt.Errorf("must be one of %v", vals)
	}
}

func intIn(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be an integer from %d to %d", lo, hi)
		}
		return nil
	}
}

func findGroupConfig(name string) (groupConfigDef, bool) {
	for _, d := range groupConfigDefs {
		if d.name == name {
			return d, true
		}
	}
	return groupConfigDef{}, false
}

// planGroupConfigs checks one GROUP resource's operations (SET and DELETE
// only: none of these is a list) and returns the controller command.
func planGroupConfigs(rr kmsg.IncrementalAlterConfigsRequestResource) (*controller.AlterConfigs, error) {
	if rr.ResourceName == "" {
		return nil, withMessage(kerr.InvalidRequest, "a group resource needs the group's name")
	}
	cmd := &controller.AlterConfigs{Group: rr.ResourceName, Set: map[string]string{}}
	seen := map[string]bool{}
	for _, c := range rr.Configs {
		d, ok := findGroupConfig(c.Name)
		switch {
		case !ok:
			return nil, withMessage(kerr.InvalidConfig, fmt.Sprintf("unknown group config %q", c.Name))
		case seen[c.Name]:
			return nil, withMessage(kerr.InvalidRequest, fmt.Sprintf("%s named twice", c.Name))
		}
		seen[c.Name] = true
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpDelete:
			cmd.Delete = append(cmd.Delete, c.Name)
		case kmsg.IncrementalAlterConfigOpSet:
			if c.Value == nil {
				return nil, withMessage(kerr.InvalidRequest, fmt.Sprintf("%s: SET needs a value", c.Name))
			}
			if err := d.check(*c.Value); err != nil {
				return nil, withMessage(kerr.InvalidConfig, fmt.Sprintf("%s=%q: %v", c.Name, *c.Value, err))
			}
			cmd.Set[c.Name] = *c.Value
		default:
			return nil, withMessage(kerr.InvalidRequest, fmt.Sprintf("%s: operation %d does not apply to a group config", c.Name, c.Op))
		}
	}
	if len(cmd.Set) == 0 && len(cmd.Delete) == 0 {
		return nil, nil
	}
	return cmd, nil
}

// describeGroupConfigs answers a GROUP resource of DescribeConfigs: every
// group config, the group's own value (GROUP_CONFIG) or the broker's
// (STATIC_BROKER_CONFIG). A group need not exist to have configs.
func (r *Reactor) describeGroupConfigs(rr kmsg.DescribeConfigsRequestResource, req *kmsg.DescribeConfigsRequest, sr *kmsg.DescribeConfigsResponseResource) {
	set := r.ctl.state.GroupConfigs[rr.ResourceName]
	def := r.cfg.Shares.withDefaults()
	gc := r.groupConfig().WithDefaults()
	static := map[string]string{
		consumerSessionConfig:                 strconv.FormatInt(gc.ConsumerSessionTimeout.Milliseconds(), 10),
		consumerIntervalConfig:                strconv.FormatInt(gc.ConsumerHeartbeatInterval.Milliseconds(), 10),
		"share.auto.offset.reset":             def.AutoOffsetReset,
		"share.isolation.level":               "read_uncommitted",
		"share.record.lock.duration.ms":       strconv.FormatInt(def.Lock.Milliseconds(), 10),
		"share.delivery.count.limit":          strconv.Itoa(int(def.DeliveryLimit)),
		"floe.share.retry.backoff.ms":         strconv.FormatInt(def.Backoff.Initial.Milliseconds(), 10),
		"floe.share.retry.backoff.max.ms":     strconv.FormatInt(def.Backoff.Max.Milliseconds(), 10),
		"floe.share.retry.backoff.multiplier": strconv.FormatFloat(max(def.Backoff.Multiplier, 1), 'g', -1, 64),
		"floe.share.retry.backoff.jitter":     strconv.FormatFloat(def.Backoff.Jitter, 'g', -1, 64),
		dlqTopicConfig:                        def.DeadLetterTopic,
		dlqCopyConfig:                         strconv.FormatBool(!def.DeadLetterNoCopy),
	}
	for _, d := range groupConfigDefs {
		if len(rr.ConfigNames) > 0 && !containsString(rr.ConfigNames, d.name) {
			continue
		}
		var layers []configLayer
		if v, ok := set[d.name]; ok {
			layers = append(layers, configLayer{d.name, v, kmsg.ConfigSourceGroupConfig})
		}
		layers = append(layers, configLayer{d.name, static[d.name], kmsg.ConfigSourceStaticBrokerConfig})
		sr.Configs = append(sr.Configs, describedConfig(req, d.name, layers, false, topicConfigMeta{kind: d.kind, doc: d.doc}))
	}
}

// groupShareConfig is the share configuration of a group: the broker's,
// with the group's own settings over it.
func (r *Reactor) groupShareConfig(name string) ShareConfig {
	c := r.cfg.Shares.withDefaults()
	set := r.ctl.state.GroupConfigs[name]
	if v, ok := set["share.auto.offset.reset"]; ok {
		c.AutoOffsetReset = v
	}
	if v, ok := set["share.record.lock.duration.ms"]; ok {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			c.Lock = time.Duration(ms) * time.Millisecond
		}
	}
	if v, ok := set["share.delivery.count.limit"]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			c.DeliveryLimit = int16(n)
		}
	}
	ms := func(key string, d *time.Duration) {
		if n, err := strconv.ParseInt(set[key], 10, 64); err == nil {
			*d = time.Duration(n) * time.Millisecond
		}
	}
	num := func(key string, f *float64) {
		if x, err := strconv.ParseFloat(set[key], 64); err == nil {
			*f = x
		}
	}
	ms("floe.share.retry.backoff.ms", &c.Backoff.Initial)
	ms("floe.share.retry.backoff.max.ms", &c.Backoff.Max)
	num("floe.share.retry.backoff.multiplier", &c.Backoff.Multiplier)
	num("floe.share.retry.backoff.jitter", &c.Backoff.Jitter)
	if v, ok := set[dlqTopicConfig]; ok {
		c.DeadLetterTopic = v
	}
	if v, ok := set[dlqCopyConfig]; ok {
		c.DeadLetterNoCopy = !strings.EqualFold(v, "true")
	}
	return c
}

// groupReadCommitted reports whether a group reads only committed records.
func (r *Reactor) groupReadCommitted(name string) bool {
	return r.ctl.state.GroupConfigs[name]["share.isolation.level"] == "read_committed"
}
