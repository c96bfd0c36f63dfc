package node

// IncrementalAlterConfigs (key 44), versions 0-1.
//
// Changes some of a resource's dynamic configs and leaves the others: SET
// writes a value, DELETE removes the setting (the config falls back to the
// next layer: the cluster-wide default, the broker's, Kafka's), APPEND and
// SUBTRACT add items to or remove items from a list config (cleanup.policy),
// starting from its effective value, so APPEND compact to a topic that
// inherits delete gives delete,compact. APPEND and SUBTRACT on a config
// that is not a list, SET without a value, an unknown operation and a
// config or resource named twice are INVALID_REQUEST; unknown names and bad
// values are INVALID_CONFIG with a message. Resources and forwarding work
// as for AlterConfigs: topics, or a broker resource with an empty name for
// the cluster-wide defaults; nothing of a resource changes unless all of
// its operations are valid; the answer comes once this broker has applied
// the change. ValidateOnly checks without changing anything. v1 is
// flexible.
//
// APPEND and SUBTRACT compute the new list here, from this broker's copy
// of the metadata, and the controller writes the result: two of them racing
// on the same config may lose one change (as two SETs would).

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

func serveIncrementalAlterConfigs(r *Reactor, c Client, req kmsg.Request, respond func(kmsg.Response)) {
	r.alterConfigs(c, req, respond) // api_alter_configs.go
}

// planIncrementalResource plans one resource's change: a role's members
// (roles.go), or configs.
func (r *Reactor) planIncrementalResource(rr kmsg.IncrementalAlterConfigsRequestResource) (*controller.Command, error) {
	if rr.ResourceType == roleConfigResource {
		return r.planRoleChange(rr)
	}
	if rr.ResourceType == kmsg.ConfigResourceTypeGroupConfig {
		cmd, err := planGroupConfigs(rr)
		if err == nil && cmd != nil {
			err = r.checkConsumerGroupConfigs(cmd) // consumer_group_configs.go
		}
		if err == nil && cmd != nil {
			err = r.checkGroupDeadLetterTopic(cmd) // share_dlq_check.go
		}
		return configCommand(cmd, err)
	}
	return configCommand(r.planIncrementalConfigs(rr))
}

// planIncrementalConfigs checks one resource's operations and returns the
// controller command that makes them, or nil when there are none.
func (r *Reactor) planIncrementalConfigs(rr kmsg.IncrementalAlterConfigsRequestResource) (*controller.AlterConfigs, error) {
	res, err := r.alterableResource(rr.ResourceType, rr.ResourceName)
	if err != nil {
		return nil, err
	}
	cmd := &controller.AlterConfigs{Topic: res.topicName(), Set: map[string]string{}}
	seen := map[string]bool{}
	for _, c := range rr.Configs {
		key, err := r.configKey(res, c.Name, seen)
		if err != nil {
			return nil, err
		}
		if c.Op == kmsg.IncrementalAlterConfigOpDelete {
			cmd.Delete = append(cmd.Delete, key)
			continue
		}
		value, err := r.incrementalValue(res, key, c)
		if err != nil {
			return nil, err
		}
		if err := checkConfigValue(key, value); err != nil {
			return nil, err
		}
		cmd.Set[key] = value
	}
	if len(cmd.Set) == 0 && len(cmd.Delete) == 0 {
		return nil, nil
	}
	return cmd, nil
}

// incrementalValue is the value a SET, APPEND or SUBTRACT leaves behind.
func (r *Reactor) incrementalValue(res configResource, key string, c kmsg.IncrementalAlterConfigsRequestResourceConfig) (string, error) {
	if c.Op > kmsg.IncrementalAlterConfigOpSubtract || c.Op < kmsg.IncrementalAlterConfigOpSet {
		return "", withMessage(kerr.InvalidRequest, fmt.Sprintf("%s: unknown operation %d", c.Name, c.Op))
	}
	if c.Value == nil {
		return "", withMessage(kerr.InvalidRequest, fmt.Sprintf("%s: %s needs a value", c.Name, c.Op))
	}
	if c.Op == kmsg.IncrementalAlterConfigOpSet {
		return *c.Value, nil
	}
	if topicConfigMetas[key].kind != kmsg.ConfigTypeList {
		return "", withMessage(kerr.InvalidRequest, fmt.Sprintf("%s is not a list: %s works on list configs only", c.Name, c.Op))
	}
	current, _ := r.topicConfigValue(res.topic, key)
	if c.Op == kmsg.IncrementalAlterConfigOpAppend {
		return appendList(current, *c.Value), nil
	}
	return subtractList(current, *c.Value), nil
}

// splitConfigList splits a list config value into its items (comma-separated,
// spaces around items ignored, empty items dropped).
func splitConfigList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// appendList adds the items of add that list lacks, in order.
func appendList(list, add string) string {
	items := splitConfigList(list)
	for _, a := range splitConfigList(add) {
		if !containsString(items, a) {
			items = append(items, a)
		}
	}
	return strings.Join(items, ",")
}

// subtractList removes every item of sub from list.
func subtractList(list, sub string) string {
	remove := splitConfigList(sub)
	var kept []string
	for _, item := range splitConfigList(list) {
		if !containsString(remove, item) {
			kept = append(kept, item)
		}
	}
	return strings.Join(kept, ",")
}
