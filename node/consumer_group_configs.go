package node

// The KIP-848 consumer group configs (Kafka 4.0's group configs
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms): one
// consumer group's session timeout and heartbeat interval, set with
// IncrementalAlterConfigs on a GROUP resource and kept by the controller
// with the share.* group configs (share_configs.go). A group without a
// setting uses the broker's (group.consumer.session.timeout.ms,
// group.consumer.heartbeat.interval.ms). Values are checked as Kafka's
// GroupConfig.validate does, against the broker's bounds and with the
// group's other setting (node/group's Config.CheckConsumerTimeouts); a
// change applies to a member from its next heartbeat.

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/group"
)

const (
	consumerSessionConfig  = "consumer.session.timeout.ms"
	consumerIntervalConfig = "consumer.heartbeat.interval.ms"
)

// consumerGroupTimeouts is a group's own timeouts, from its group configs
// (zero: unset).
func (r *Reactor) consumerGroupTimeouts(name string) group.ConsumerTimeouts {
	return consumerTimeoutsOf(r.ctl.state.GroupConfigs[name])
}

func consumerTimeoutsOf(set map[string]string) group.ConsumerTimeouts {
	ms := func(key string) time.Duration {
		n, err := strconv.ParseInt(set[key], 10, 64)
		if err != nil || n <= 0 {
			return 0
		}
		return time.Duration(n) * time.Millisecond
	}
	return group.ConsumerTimeouts{Session: ms(consumerSessionConfig), HeartbeatInterval: ms(consumerIntervalConfig)}
}

// checkConsumerGroupConfigs checks the consumer timeouts a group would
// have after cmd (its settings, changed by cmd, over the broker's).
func (r *Reactor) checkConsumerGroupConfigs(cmd *controller.AlterConfigs) error {
	_, setSession := cmd.Set[consumerSessionConfig]
	_, setInterval := cmd.Set[consumerIntervalConfig]
	if !setSession && !setInterval {
		return nil // deleting falls back to the broker's, which are valid
	}
	after := map[string]string{}
	for k, v := range r.ctl.state.GroupConfigs[cmd.Group] { //floe:unordered copies a map
		after[k] = v
	}
	for _, k := range cmd.Delete {
		delete(after, k)
	}
	for k, v := range cmd.Set { //floe:unordered copies a map
		after[k] = v
	}
	if err := r.groupConfig().WithDefaults().CheckConsumerTimeouts(consumerTimeoutsOf(after)); err != nil {
		return withMessage(kerr.InvalidConfig, err.Error())
	}
	return nil
}
