package node

// DescribeConfigs (key 32), versions 0-4.
//
// Topic resources (type 2) list every topic config Floe knows
// (topicConfigDefs) with its effective value and where it comes from: the
// topic's own setting (DYNAMIC_TOPIC_CONFIG), the cluster-wide default
// (DYNAMIC_DEFAULT_BROKER_CONFIG, set through a broker resource with an
// empty name), this broker's static default from its own configuration
// (STATIC_BROKER_CONFIG), or Kafka's default (DEFAULT_CONFIG). None is
// read-only. An unknown topic is UNKNOWN_TOPIC_OR_PARTITION.
//
// Broker resources (type 4): the empty name is the cluster-wide dynamic
// defaults and lists only those that are set, as Kafka does; this broker's
// id lists every broker-level topic default under Kafka's broker name
// (log.retention.ms for retention.ms), plus this broker's read-only
// settings (broker.id, num.partitions, ...). Another broker's id is
// INVALID_REQUEST (clients send a broker's resource to that broker), as is
// any other resource type.
//
// Versions: v0 says IsDefault instead of a source; v1+ gives the source
// and, when IncludeSynonyms is set, every layer that holds a value, in
// order of precedence; v3+ gives the type and, when IncludeDocumentation is
// set, a line of documentation, which for a config Floe stores but does
// not act on says so. v4 is flexible. ConfigNames filters the answer
// (empty: everything; unknown names are left out). The answer comes from
// this broker's applied copy of the metadata, which may trail the
// controller's by a replication round trip.

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

// topicConfigMeta is what DescribeConfigs says about a topic config beside
// its value: Kafka's name for the broker-wide default, the type and a line
// of documentation. Every topicConfigDefs entry has one (a test checks).
type topicConfigMeta struct {
	brokerName string
	kind       kmsg.ConfigType
	doc        string
}

var topicConfigMetas = map[string]topicConfigMeta{
	"cleanup.policy":                      {"log.cleanup.policy", kmsg.ConfigTypeList, "delete, compact, or both: drop old segments, keep the latest record per key, or both."},
	"compression.type":                    {"compression.type", kmsg.ConfigTypeString, "Only producer: batches are stored as the producer compressed them."},
	"delete.retention.ms":                 {"log.cleaner.delete.retention.ms", kmsg.ConfigTypeLong, "How long compaction keeps a tombstone."},
	"max.message.bytes":                   {"message.max.bytes", kmsg.ConfigTypeInt, "The largest record batch a produce may carry."},
	dlqEnableConfig:                       {dlqEnableConfig, kmsg.ConfigTypeBoolean, "KIP-1191: true lets share groups name this topic as their dead-letter topic (errors.deadletterqueue.topic.name)."},
	"message.timestamp.type":              {"log.message.timestamp.type", kmsg.ConfigTypeString, "CreateTime keeps the producer's timestamps; LogAppendTime stamps the leader's clock."},
	"min.insync.replicas":                 {"min.insync.replicas", kmsg.ConfigTypeInt, "Replicas the leader must have heard from recently for an acks=all produce."},
	"producer.id.expiration.ms":           {"producer.id.expiration.ms", kmsg.ConfigTypeInt, "How long a producer id's idempotence state outlives its last batch, on the partition's log time (the largest batch timestamp written). In Kafka a broker config only; Floe also takes it per topic."},
	"retention.bytes":                     {"log.retention.bytes", kmsg.ConfigTypeLong, "Size a partition may keep before its oldest segments go (-1: no limit)."},
	"retention.ms":                        {"log.retention.ms", kmsg.ConfigTypeLong, "Age after which a segment goes (-1: forever)."},
	"segment.bytes":                       {"log.segment.bytes", kmsg.ConfigTypeLong, "Size at which the active segment rolls."},
	"segment.ms":                          {"log.roll.ms", kmsg.ConfigTypeLong, "Age at which the active segment rolls."},
	"file.delete.delay.ms":                {"log.segment.delete.delay.ms", kmsg.ConfigTypeLong, "Accepted and stored; Floe does not act on it."},
	"flush.messages":                      {"log.flush.interval.messages", kmsg.ConfigTypeLong, "Accepted and stored; Floe does not act on it (every acknowledged acks=all write is fsynced)."},
	"flush.ms":                            {"log.flush.interval.ms", kmsg.ConfigTypeLong, "Accepted and stored; Floe does not act on it (every acknowledged acks=all write is fsynced)."},
	"index.interval.bytes":                {"log.index.interval.bytes", kmsg.ConfigTypeInt, "Accepted and stored; Floe does not act on it."},
	"max.compaction.lag.ms":               {"log.cleaner.max.compaction.lag.ms", kmsg.ConfigTypeLong, "Accepted and stored; Floe does not act on it."},
	"message.timestamp.difference.max.ms": {"log.message.timestamp.difference.max.ms", kmsg.ConfigTypeLong, "Accepted and stored; Floe does not act on it."},
	"min.cleanable.dirty.ratio":           {"log.cleaner.min.cleanable.ratio", kmsg.ConfigTypeDouble, "Accepted and stored; Floe does not act on it."},
	"min.compaction.lag.ms":               {"log.cleaner.min.compaction.lag.ms", kmsg.ConfigTypeLong, "Accepted and stored; Floe does not act on it."},
	"preallocate":                         {"log.preallocate", kmsg.ConfigTypeBoolean, "Accepted and stored; Floe does not act on it."},
	"segment.jitter.ms":                   {"log.roll.jitter.ms", kmsg.ConfigTypeLong, "Accepted and stored; Floe does not act on it."},
	"unclean.leader.election.enable":      {"unclean.leader.election.enable", kmsg.ConfigTypeBoolean, "Floe does not act on it: only false is accepted, and Raft never elects a replica that lacks committed data."},
}

// topicConfigOfBrokerName maps a config name used on a broker resource to
// the topic config whose default it sets. Kafka's broker name
// (log.retention.ms) and the topic name (retention.ms) both work.
func topicConfigOfBrokerName(name string) (string, bool) {
	for _, d := range topicConfigDefs {
		if d.name == name || topicConfigMetas[d.name].brokerName == name {
			return d.name, true
		}
	}
	return "", false
}

// configResource is a config resource a request names, resolved against
// the applied metadata. Exactly one of topic, defaults and self is set.
type configResource struct {
	topic    *controller.Topic // a topic
	defaults bool              // the cluster-wide defaults (broker, empty name)
	self     bool              // this broker (broker, its id)
}

func (r *Reactor) resolveConfigResource(kind kmsg.ConfigResourceType, name string) (configResource, error) {
	switch kind {
	case kmsg.ConfigResourceTypeTopic:
		t, ok := r.ctl.state.Topics[name]
		if !ok {
			return configResource{}, kerr.UnknownTopicOrPartition
		}
		return configResource{topic: t}, nil
	case kmsg.ConfigResourceTypeBroker:
		if name == "" {
			return configResource{defaults: true}, nil
		}
		id, err := strconv.ParseInt(name, 10, 32)
		if err != nil {
			return configResource{}, withMessage(kerr.InvalidRequest, fmt.Sprintf("broker resource %q: the name is a broker id, or empty for the cluster-wide defaults", name))
		}
		if id != int64(r.self) {
			return configResource{}, withMessage(kerr.InvalidRequest, fmt.Sprintf("broker resource %d sent to broker %d: send it to that broker, or use the empty name for the cluster-wide defaults", id, r.self))
		}
		return configResource{self: true}, nil
	}
	return configResource{}, withMessage(kerr.InvalidRequest, fmt.Sprintf("resource type %d is not supported: Floe has topic (2) and broker (4) configs", kind))
}

// configLayer is one place a config value may come from.
type configLayer struct {
	name   string
	value  string
	source kmsg.ConfigSource
}

// topicConfigLayers returns every layer that holds a value for topic config
// d, in order of precedence (the first is the effective one). With t nil,
// the topic layer is skipped (a broker resource).
func (r *Reactor) topicConfigLayers(t *controller.Topic, d topicConfigDef) []configLayer {
	brokerName := topicConfigMetas[d.name].brokerName
	var out []configLayer
	if t != nil {
		if v, ok := t.Configs[d.name]; ok {
			out = append(out, configLayer{d.name, v, kmsg.ConfigSourceDynamicTopicConfig})
		}
	}
	if v, ok := r.ctl.state.BrokerConfigs[d.name]; ok {
		out = append(out, configLayer{brokerName, v, kmsg.ConfigSourceDynamicDefaultBrokerConfig})
	}
	if v, ok := r.cfg.TopicDefaults[d.name]; ok {
		out = append(out, configLayer{brokerName, v, kmsg.ConfigSourceStaticBrokerConfig})
	}
	return append(out, configLayer{brokerName, d.def, kmsg.ConfigSourceDefaultConfig})
}

func serveDescribeConfigs(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	az := r.authorize(c, req)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if err := az.configResource(rr.ResourceType, rr.ResourceName, false); err != nil {
			sr.ErrorCode, sr.ErrorMessage = errParts(err)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		if rr.ResourceType == roleConfigResource {
			r.describeRole(rr, &sr)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		if rr.ResourceType == kmsg.ConfigResourceTypeGroupConfig {
			r.describeGroupConfigs(rr, req, &sr)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		res, err := r.resolveConfigResource(rr.ResourceType, rr.ResourceName)
		if err != nil {
			sr.ErrorCode, sr.ErrorMessage = errParts(err)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		want := func(name string) bool { return len(rr.ConfigNames) == 0 || containsString(rr.ConfigNames, name) }
		for _, c := range r.describeResource(res, req) {
			if want(c.Name) {
				sr.Configs = append(sr.Configs, c)
			}
		}
		resp.Resources = append(resp.Resources, sr)
	}
	respond(resp)
}

// describeResource lists a resolved resource's configs, in topicConfigDefs
// order then the read-only broker settings.
func (r *Reactor) describeResource(res configResource, req *kmsg.DescribeConfigsRequest) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, d := range topicConfigDefs {
		meta := topicConfigMetas[d.name]
		layers := r.topicConfigLayers(res.topic, d)
		name := d.name
		switch {
		case res.defaults:
			if layers[0].source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
				continue
			}
			layers, name = layers[:1], meta.brokerName
		case res.self:
			name = meta.brokerName
		}
		out = append(out, describedConfig(req, name, layers, false, meta))
	}
	if res.self {
		for _, s := range r.staticBrokerConfigs() {
			layers := []configLayer{{s.name, s.value, kmsg.ConfigSourceStaticBrokerConfig}}
			out = append(out, describedConfig(req, s.name, layers, true, topicConfigMeta{kind: s.kind, doc: s.doc}))
		}
	}
	return out
}

func describedConfig(req *kmsg.DescribeConfigsRequest, name string, layers []configLayer, readOnly bool, meta topicConfigMeta) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = name
	c.Value = kmsg.StringPtr(layers[0].value)
	c.Source = layers[0].source
	c.IsDefault = layers[0].source == kmsg.ConfigSourceDefaultConfig
	c.ReadOnly = readOnly
	c.ConfigType = meta.kind
	if req.IncludeSynonyms {
		for _, l := range layers {
			s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			s.Name, s.Value, s.Source = l.name, kmsg.StringPtr(l.value), l.source
			c.ConfigSynonyms = append(c.ConfigSynonyms, s)
		}
	}
	if req.IncludeDocumentation {
		c.Documentation = kmsg.StringPtr(meta.doc)
	}
	return c
}

// staticBrokerConfig is a read-only broker setting from floe serve's flags.
type staticBrokerConfig struct {
	name, value string
	kind        kmsg.ConfigType
	doc         string
}

func (r *Reactor) staticBrokerConfigs() []staticBrokerConfig {
	out := []staticBrokerConfig{
		{"broker.id", fmt.Sprint(r.self), kmsg.ConfigTypeInt, "This broker's id (floe serve --node-id)."},
		{"auto.create.topics.enable", strconv.FormatBool(r.cfg.AutoCreateTopics), kmsg.ConfigTypeBoolean, "Whether Metadata requests create unknown topics."},
		{"num.partitions", fmt.Sprint(r.cfg.DefaultPartitions), kmsg.ConfigTypeInt, "Partitions of a topic created without a count."},
		{"default.replication.factor", fmt.Sprint(r.defaultReplication()), kmsg.ConfigTypeShort, "Replication factor of a topic created without one (unset: min(3, brokers))."},
		{"offsets.topic.num.partitions", fmt.Sprint(r.cfg.OffsetsTopicPartitions), kmsg.ConfigTypeInt, "Partitions of __consumer_offsets."},
		{dlqPrefixConfig, r.cfg.Shares.deadLetterPrefix(), kmsg.ConfigTypeString, "KIP-1191: the prefix a share group's dead-letter topic name must have (empty: any)."},
		{dlqAutoCreateConfig, strconv.FormatBool(!r.cfg.Shares.DeadLetterNoAutoCreate), kmsg.ConfigTypeBoolean, "KIP-1191: whether a missing dead-letter topic is created (Floe's default true)."},
	}
	if r.cfg.Rack != "" {
		out = append(out, staticBrokerConfig{"broker.rack", r.cfg.Rack, kmsg.ConfigTypeString, "This broker's rack, which placement spreads replicas across."})
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
