package node

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/partition"
)

// topicConfigDef is one supported topic config, with Kafka's name and
// default. Used says whether Floe acts on it; an accepted but unused config
// is stored and described so tools that set it keep working, and
// docs/operations.md lists which ones those are.
type topicConfigDef struct {
	name     string
	def      string
	validate func(string) error
	used     bool
}

var topicConfigDefs = []topicConfigDef{
	{"cleanup.policy", "delete", validPolicy, true},
	{"compression.type", "producer", validCompressionType, true},
	{"delete.retention.ms", "86400000", validLong(0), true},
	{"max.message.bytes", "1048588", validInt(0), true},
	{"message.timestamp.type", "CreateTime", validTimestampType, true},
	{"min.insync.replicas", "1", validInt(1), true},
	{"producer.id.expiration.ms", "86400000", validInt(1), true},
	{"retention.bytes", "-1", validLong(-1), true},
	{"retention.ms", "604800000", validLong(-1), true},
	{"segment.bytes", "1073741824", validLong(14), true},
	{"segment.ms", "604800000", validLong(1), true},
	// KIP-1191: whether share groups may use the topic as their
	// dead-letter topic (share_dlq_check.go).
	{dlqEnableConfig, "false", validBool, true},
	// Accepted and stored, not acted on.
	{"file.delete.delay.ms", "60000", validLong(0), false},
	{"flush.messages", "9223372036854775807", validLong(1), false},
	{"flush.ms", "9223372036854775807", validLong(0), false},
	{"index.interval.bytes", "4096", validInt(0), false},
	{"max.compaction.lag.ms", "9223372036854775807", validLong(1), false},
	{"message.timestamp.difference.max.ms", "9223372036854775807", validLong(0), false},
	{"min.cleanable.dirty.ratio", "0.5", validRatio, false},
	{"min.compaction.lag.ms", "0", validLong(0), false},
	{"preallocate", "false", validBool, false},
	{"segment.jitter.ms", "0", validLong(0), false},
	{"unclean.leader.election.enable", "false", validFalse, false},
}

func findTopicConfig(name string) (topicConfigDef, bool) {
	for _, d := range topicConfigDefs {
		if d.name == name {
			return d, true
		}
	}
	return topicConfigDef{}, false
}

// validateTopicConfig checks one topic config key and value.
func validateTopicConfig(name, value string) error {
	d, ok := findTopicConfig(name)
	if !ok {
		return fmt.Errorf("unknown topic config %q", name)
	}
	if err := d.validate(value); err != nil {
		return fmt.Errorf("invalid value %q for %s: %v", value, name, err)
	}
	return nil
}

// topicConfigValue returns the effective value of a topic config and where
// it came from: the topic, the cluster-wide defaults, the broker's static
// defaults, or Kafka's default.
func (r *Reactor) topicConfigValue(t *controller.Topic, name string) (value string, source string) {
	if t != nil {
		if v, ok := t.Configs[name]; ok {
			return v, "topic"
		}
	}
	if v, ok := r.ctl.state.BrokerConfigs[name]; ok {
		return v, "cluster"
	}
	if v, ok := r.cfg.TopicDefaults[name]; ok {
		return v, "static"
	}
	d, _ := findTopicConfig(name)
	return d.def, "default"
}

// topicConfig parses a topic's effective configuration.
func (r *Reactor) topicConfig(t *controller.Topic) partition.Config {
	get := func(name string) string { v, _ := r.topicConfigValue(t, name); return v }
	c := partition.DefaultConfig()
	c.RetentionMs = parseLong(get("retention.ms"), c.RetentionMs)
	c.RetentionBytes = parseLong(get("retention.bytes"), c.RetentionBytes)
	c.SegmentBytes = parseLong(get("segment.bytes"), c.SegmentBytes)
	c.SegmentMs = parseLong(get("segment.ms"), c.SegmentMs)
	c.DeleteRetentionMs = parseLong(get("delete.retention.ms"), c.DeleteRetentionMs)
	c.MaxMessageBytes = int(parseLong(get("max.message.bytes"), int64(c.MaxMessageBytes)))
	c.MinInsyncReplicas = int(parseLong(get("min.insync.replicas"), int64(c.MinInsyncReplicas)))
	c.LogAppendTime = get("message.timestamp.type") == "LogAppendTime"
	c.ProducerIDExpirationMs = parseLong(get("producer.id.expiration.ms"), c.ProducerIDExpirationMs)
	policy := get("cleanup.policy")
	c.Delete = strings.Contains(policy, "delete")
	c.Compact = strings.Contains(policy, "compact")
	return c
}

func parseLong(s string, def int64) int64 {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return def
	}
	return v
}

func validLong(minimum int64) func(string) error {
	return func(s string) error {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		if v < minimum {
			return fmt.Errorf("below the minimum %d", minimum)
		}
		return nil
	}
}

func validInt(minimum int64) func(string) error {
	return func(s string) error {
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return fmt.Errorf("not a 32-bit integer")
		}
		if v < minimum {
			return fmt.Errorf("below the minimum %d", minimum)
		}
		return nil
	}
}

func validPolicy(s string) error {
	parts := strings.Split(s, ",")
	for _, p := range parts {
		switch strings.TrimSpace(p) {
		case "delete", "compact":
		default:
			return fmt.Errorf("must be delete, compact, or both")
		}
	}
	return nil
}

func validCompressionType(s string) error {
	if s != "producer" {
		return fmt.Errorf("Floe stores batches as the producer compressed them; only \"producer\" is supported")
	}
	return nil
}

func validTimestampType(s string) error {
	if s != "CreateTime" && s != "LogAppendTime" {
		return fmt.Errorf("must be CreateTime or LogAppendTime")
	}
	return nil
}

func validRatio(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v > 1 {
		return fmt.Errorf("must be a number in [0, 1]")
	}
	return nil
}

func validBool(s string) error {
	if s != "true" && s != "false" {
		return fmt.Errorf("must be true or false")
	}
	return nil
}

func validFalse(s string) error {
	if s != "false" {
		return fmt.Errorf("Raft never elects a replica that lacks committed data; only false is supported")
	}
	return nil
}
