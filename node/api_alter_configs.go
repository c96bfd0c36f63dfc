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

func serveAlterConfigs(r *Reactor, c Client, req kmsg.Request, respond func(kmsg.Response)) {
	r.alterConfigs(c, req, respond)
}

// alterConfigs is the one path of AlterConfigs and IncrementalAlterConfigs,
// which differ only in how they plan a resource's change
// (configAlteration). For each resource the request names: one named twice
// is refused; otherwise the client must be allowed to alter it, the change
// is checked and planned as a controller command (nil: no change), and
// unless ValidateOnly the command is proposed to the controller. The answer
// goes out once every resource has its outcome.
func (r *Reactor) alterConfigs(c Client, req kmsg.Request, respond func(kmsg.Response)) {
	az := r.authorize(c, req)
	keys, validateOnly, plan := r.configAlteration(req)
	out := make([]kmsg.AlterConfigsResponseResource, len(keys))
	set := func(i int, err error) { out[i].ErrorCode, out[i].ErrorMessage = errParts(err) }
	mentions := map[configResourceKey]int{}
	for i, k := range keys {
		out[i] = kmsg.NewAlterConfigsResponseResource()
		out[i].ResourceType, out[i].ResourceName = k.kind, k.name
		mentions[k]++
	}
	g := newGather(func() { respond(alterConfigsResponse(req, out)) })
	for i, k := range keys {
		if mentions[k] > 1 {
			set(i, errResourceTwice)
			continue
		}
		if err := az.configResource(k.kind, k.name, true); err != nil {
			set(i, err)
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

// configAlteration is what differs between the two APIs: the resources a
// request names, in order, its ValidateOnly, and how resource i's change
// is planned.
func (r *Reactor) configAlteration(kreq kmsg.Request) (keys []configResourceKey, validateOnly bool, plan func(i int) (*controller.Command, error)) {
	switch req := kreq.(type) {
	case *kmsg.AlterConfigsRequest:
		for _, rr := range req.Resources {
			keys = append(keys, configResourceKey{rr.ResourceType, rr.ResourceName})
		}
		return keys, req.ValidateOnly, func(i int) (*controller.Command, error) {
			return configCommand(r.planReplaceConfigs(req.Resources[i]))
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		for _, rr := range req.Resources {
			keys = append(keys, configResourceKey{rr.ResourceType, rr.ResourceName})
		}
		return keys, req.ValidateOnly, func(i int) (*controller.Command, error) {
			return r.planIncrementalResource(req.Resources[i])
		}
	}
	return nil, true, nil
}

// alterConfigsResponse answers req with the resources' outcomes. The two
// APIs' response resources have the same fields.
func alterConfigsResponse(req kmsg.Request, out []kmsg.AlterConfigsResponseResource) kmsg.Response {
	resp := req.ResponseKind()
	switch q := resp.(type) {
	case *kmsg.AlterConfigsResponse:
		q.Resources = out
	case *kmsg.IncrementalAlterConfigsResponse:
		q.Resources = make([]kmsg.IncrementalAlterConfigsResponseResource, len(out))
		for i, o := range out {
			q.Resources[i] = kmsg.IncrementalAlterConfigsResponseResource(o)
		}
	}
	return resp
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
