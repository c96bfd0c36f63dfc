package node

// AlterConfigs (key 33), versions 0-2.
//
// Replaces a resource's dynamic configs wholesale: the configs named with a
// value are set, every other one is removed (a null value also removes).
// Topic resources (type 2) change the topic's own settings; a broker
// resource (type 4) with an empty name replaces the cluster-wide defaults,
// under Kafka's broker names (log.retention.ms) or the topic names
// (retention.ms). A broker resource naming a broker id is INVALID_REQUEST:
// Floe has no per-broker dynamic configs (a broker's static defaults come
// from its flags). Every name and value is validated first (INVALID_CONFIG
// with a message; a name given twice, or a resource given twice, is
// INVALID_REQUEST) and nothing changes unless all of a resource's configs
// are valid. Any broker accepts the request and forwards the change to the
// controller, answering once its own replica of the metadata has applied it
// (every partition replica then runs with the new configuration), or
// REQUEST_TIMED_OUT. ValidateOnly checks without changing anything. The
// versions differ only in encoding (v2 flexible).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

func serveAlterConfigs(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	az := r.authorize(c, req)
	resp.Resources = make([]kmsg.AlterConfigsResponseResource, len(req.Resources))
	keys := make([]configResourceKey, len(req.Resources))
	for i, rr := range req.Resources {
		sr := &resp.Resources[i]
		*sr = kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		keys[i] = configResourceKey{rr.ResourceType, rr.ResourceName}
	}
	r.alterResources(keys, req.ValidateOnly,
		func(i int) (*controller.Command, error) {
			rr := req.Resources[i]
			if err := az.configResource(rr.ResourceType, rr.ResourceName, true); err != nil {
				return nil, err
			}
			return configCommand(r.planReplaceConfigs(rr))
		},
		func(i int, err error) { resp.Resources[i].ErrorCode, resp.Resources[i].ErrorMessage = errParts(err) },
		func() { respond(resp) })
}

// alterResources is what AlterConfigs and IncrementalAlterConfigs share: a
// resource named twice in one request is refused; each other one is
// planned and, unless validateOnly, proposed to the controller; set
// records resource i's outcome, and answer runs once every one has one.
func (r *Reactor) alterResources(keys []configResourceKey, validateOnly bool,
	plan func(i int) (*controller.Command, error), set func(i int, err error), answer func()) {
	g := newGather(answer)
	mentions := map[configResourceKey]int{}
	for _, k := range keys {
		mentions[k]++
	}
	for i, k := range keys {
		if mentions[k] > 1 {
			set(i, errResourceTwice)
			continue
		}
		cmd, err := plan(i)
		if err != nil {
			set(i, err)
			continue
		}
		r.commitConfigChange(cmd, validateOnly, g, func(err error) { set(i, err) })
	}
	g.done()
}

// configResourceKey identifies a resource within one request.
type configResourceKey struct {
	kind kmsg.ConfigResourceType
	name string
}

var errResourceTwice = withMessage(kerr.InvalidRequest, "resource named more than once in the request")

// planReplaceConfigs checks one AlterConfigs resource and returns the
// controller command that makes the change.
func (r *Reactor) planReplaceConfigs(rr kmsg.AlterConfigsRequestResource) (*controller.AlterConfigs, error) {
	res, err := r.alterableResource(rr.ResourceType, rr.ResourceName)
	if err != nil {
		return nil, err
	}
	cmd := &controller.AlterConfigs{Topic: res.topicName(), Set: map[string]string{}, Replace: true}
	seen := map[string]bool{}
	for _, c := range rr.Configs {
		key, err := r.configKey(res, c.Name, seen)
		if err != nil {
			return nil, err
		}
		if c.Value == nil {
			continue // not set, so the replacement removes it
		}
		if err := checkConfigValue(key, *c.Value); err != nil {
			return nil, err
		}
		cmd.Set[key] = *c.Value
	}
	return cmd, nil
}

// alterableResource resolves a resource whose configs a request changes.
func (r *Reactor) alterableResource(kind kmsg.ConfigResourceType, name string) (configResource, error) {
	res, err := r.resolveConfigResource(kind, name)
	if err != nil {
		return configResource{}, err
	}
	if res.self {
		return configResource{}, withMessage(kerr.InvalidRequest, "per-broker dynamic configs are not supported: alter the cluster-wide defaults (a broker resource with an empty name), or this broker's flags")
	}
	return res, nil
}

func (res configResource) topicName() string {
	if res.topic != nil {
		return res.topic.Name
	}
	return "" // the cluster-wide defaults
}

// configKey checks a config name a change gives for res and returns the
// topic config name the metadata stores it under. seen collects the keys
// already given, so a config named twice is refused.
func (r *Reactor) configKey(res configResource, name string, seen map[string]bool) (string, error) {
	key := name
	if res.topic != nil {
		if _, ok := findTopicConfig(name); !ok {
			return "", withMessage(kerr.InvalidConfig, fmt.Sprintf("unknown topic config %q", name))
		}
	} else {
		k, ok := topicConfigOfBrokerName(name)
		if !ok {
			return "", withMessage(kerr.InvalidConfig, r.unknownBrokerConfig(name))
		}
		key = k
	}
	if seen[key] {
		return "", withMessage(kerr.InvalidRequest, fmt.Sprintf("config %s given more than once", name))
	}
	seen[key] = true
	return key, nil
}

func (r *Reactor) unknownBrokerConfig(name string) string {
	for _, s := range r.staticBrokerConfigs() {
		if s.name == name {
			return fmt.Sprintf("%s is read-only: it comes from the brokers' flags", name)
		}
	}
	return fmt.Sprintf("unknown broker config %q: the cluster-wide defaults are the topic configs, under Kafka's broker names (log.retention.ms) or topic names (retention.ms)", name)
}

func checkConfigValue(key, value string) error {
	if err := validateTopicConfig(key, value); err != nil {
		return withMessage(kerr.InvalidConfig, err.Error())
	}
	return nil
}

// configCommand wraps a planned config change in its command (nil: no
// change).
func configCommand(a *controller.AlterConfigs, err error) (*controller.Command, error) {
	if a == nil || err != nil {
		return nil, err
	}
	return &controller.Command{AlterConfigs: a}, nil
}

// commitConfigChange proposes a checked change, unless validateOnly or it
// changes nothing, and reports the outcome through set before g's part
// finishes.
func (r *Reactor) commitConfigChange(cmd *controller.Command, validateOnly bool, g *gather, set func(error)) {
	if validateOnly || cmd == nil {
		return
	}
	g.add()
	r.propose(cmd, func(res controller.Result) {
		set(res.Err)
		g.done()
	})
}
