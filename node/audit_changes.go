package node

// Changes to cluster state in the audit log: each request that changes
// topics, configs, partitions, reassignments, ACLs, roles, users, groups or
// records leaves one record per resource it named, with the outcome its
// answer gave (a request answered REQUEST_TIMED_OUT may or may not have
// happened, and its record says so). ValidateOnly requests change nothing
// and leave none; resources refused for lack of authorization leave the
// denial's record instead (authz.go).
//
// Secrets never reach a record: a user change records the user's name and
// the mechanism, never a password, salt or key.

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
	"github.com/floe-broker/floe/node/audit"
	"github.com/floe-broker/floe/node/controller"
)

// auditChanges wraps a request's respond so that a change request's answer
// is recorded; other requests keep respond as it is.
func (r *Reactor) auditChanges(c Client, req kmsg.Request, respond func(kmsg.Response)) func(kmsg.Response) {
	if !r.cfg.Security.Audit.Enabled && r.env.AuditSink == nil {
		return respond
	}
	if _, ok := changeExtractors[req.Key()]; !ok {
		return respond
	}
	return func(resp kmsg.Response) {
		if resp != nil && resp.Key() == req.Key() {
			for _, ch := range changeExtractors[req.Key()](req, resp) {
				r.auditChange(c, req, ch)
			}
		}
		respond(resp)
	}
}

// change is one resource a change request named, and its outcome.
type change struct {
	action string
	res    audit.Resource
	code   int16
	msg    *string
	detail string
}

func (r *Reactor) auditChange(c Client, req kmsg.Request, ch change) {
	switch ch.code {
	case kerr.TopicAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code,
		kerr.ClusterAuthorizationFailed.Code, kerr.TransactionalIDAuthorizationFailed.Code:
		return // the denial is on record
	}
	reason := ch.detail
	if ch.code != 0 {
		reason = kerr.ErrorForCode(ch.code).Error()
		if ch.msg != nil && *ch.msg != "" {
			reason += ": " + *ch.msg
		}
	}
	r.auditEvent(c, audit.Event{Kind: audit.Change, API: kmsg.NameForKey(req.Key()), Action: ch.action,
		Resource: ch.res, Success: ch.code == 0, Reason: reason})
}

// changeExtractors read, per change API, what an answered request changed.
var changeExtractors = map[int16]func(kmsg.Request, kmsg.Response) []change{
	19: changesCreateTopics,
	20: changesDeleteTopics,
	37: changesCreatePartitions,
	33: changesAlterConfigs,
	44: changesIncrementalAlterConfigs,
	45: changesAlterReassignments,
	30: changesCreateACLs,
	31: changesDeleteACLs,
	42: changesDeleteGroups,
	47: changesOffsetDelete,
	21: changesDeleteRecords,
	64: changesUnregisterBroker,
	80: changesAddRaftVoter,
	81: changesRemoveRaftVoter,
	51: changesAlterUserSCRAM,
	49: changesAlterClientQuotas,
}

func changesCreateTopics(kreq kmsg.Request, kresp kmsg.Response) []change {
	req, resp := kreq.(*kmsg.CreateTopicsRequest), kresp.(*kmsg.CreateTopicsResponse)
	if req.ValidateOnly {
		return nil
	}
	var out []change
	for _, t := range resp.Topics {
		out = append(out, change{action: "create", res: audit.Resource{Type: "topic", Name: t.Topic}, code: t.ErrorCode, msg: t.ErrorMessage,
			detail: fmt.Sprintf("%d partitions, replication factor %d", t.NumPartitions, t.ReplicationFactor)})
	}
	return out
}

func changesDeleteTopics(_ kmsg.Request, kresp kmsg.Response) []change {
	var out []change
	for _, t := range kresp.(*kmsg.DeleteTopicsResponse).Topics {
		name := fmt.Sprintf("%x", t.TopicID)
		if t.Topic != nil {
			name = *t.Topic
		}
		out = append(out, change{action: "delete", res: audit.Resource{Type: "topic", Name: name}, code: t.ErrorCode, msg: t.ErrorMessage})
	}
	return out
}

func changesCreatePartitions(kreq kmsg.Request, kresp kmsg.Response) []change {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	if req.ValidateOnly {
		return nil
	}
	var out []change
	for i, t := range kresp.(*kmsg.CreatePartitionsResponse).Topics {
		detail := ""
		if i < len(req.Topics) {
			detail = fmt.Sprintf("to %d partitions", req.Topics[i].Count)
		}
		out = append(out, change{action: "create_partitions", res: audit.Resource{Type: "topic", Name: t.Topic}, code: t.ErrorCode, msg: t.ErrorMessage, detail: detail})
	}
	return out
}

// auditConfigResource is how a record names a config resource.
func auditConfigResource(kind kmsg.ConfigResourceType, name string) audit.Resource {
	switch kind {
	case kmsg.ConfigResourceTypeTopic:
		return audit.Resource{Type: "topic", Name: name}
	case kmsg.ConfigResourceTypeBroker:
		if name == "" {
			name = "cluster-default"
		}
		return audit.Resource{Type: "broker", Name: name}
	case roleConfigResource:
		return audit.Resource{Type: "role", Name: name}
	}
	return audit.Resource{Type: fmt.Sprintf("config_resource_%d", kind), Name: name}
}

func changesAlterConfigs(kreq kmsg.Request, kresp kmsg.Response) []change {
	req := kreq.(*kmsg.AlterConfigsRequest)
	if req.ValidateOnly {
		return nil
	}
	var out []change
	for i, rr := range kresp.(*kmsg.AlterConfigsResponse).Resources {
		var names []string
		if i < len(req.Resources) {
			for _, c := range req.Resources[i].Configs {
				names = append(names, c.Name)
			}
		}
		out = append(out, change{action: "alter_configs", res: auditConfigResource(rr.ResourceType, rr.ResourceName),
			code: rr.ErrorCode, msg: rr.ErrorMessage, detail: "set (replacing all) " + strings.Join(names, ", ")})
	}
	return out
}

func changesIncrementalAlterConfigs(kreq kmsg.Request, kresp kmsg.Response) []change {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	if req.ValidateOnly {
		return nil
	}
	var out []change
	for i, rr := range kresp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		var ops []string
		action := "alter_configs"
		if i < len(req.Resources) {
			for _, c := range req.Resources[i].Configs {
				op := fmt.Sprintf("%s %s", c.Op, c.Name)
				if rr.ResourceType == roleConfigResource && c.Value != nil {
					op += " " + *c.Value // principals: no secret
				}
				ops = append(ops, op)
			}
		}
		if rr.ResourceType == roleConfigResource {
			action = "alter_role"
		}
		out = append(out, change{action: action, res: auditConfigResource(rr.ResourceType, rr.ResourceName),
			code: rr.ErrorCode, msg: rr.ErrorMessage, detail: strings.Join(ops, "; ")})
	}
	return out
}

func changesAlterReassignments(kreq kmsg.Request, kresp kmsg.Response) []change {
	resp := kresp.(*kmsg.AlterPartitionAssignmentsResponse)
	if resp.ErrorCode != 0 {
		return []change{{action: "reassign", res: audit.Resource{Type: "cluster", Name: acl.ClusterName}, code: resp.ErrorCode, msg: resp.ErrorMessage}}
	}
	req := kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	targets := map[string][]int32{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			targets[fmt.Sprintf("%s-%d", t.Topic, p.Partition)] = p.Replicas
		}
	}
	var out []change
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			name := fmt.Sprintf("%s-%d", t.Topic, p.Partition)
			detail := "cancel"
			if rs := targets[name]; rs != nil {
				detail = fmt.Sprintf("to replicas %v", rs)
			}
			out = append(out, change{action: "reassign", res: audit.Resource{Type: "partition", Name: name}, code: p.ErrorCode, msg: p.ErrorMessage, detail: detail})
		}
	}
	return out
}

func changesCreateACLs(kreq kmsg.Request, kresp kmsg.Response) []change {
	req := kreq.(*kmsg.CreateACLsRequest)
	var out []change
	for i, res := range kresp.(*kmsg.CreateACLsResponse).Results {
		name := ""
		if i < len(req.Creations) {
			name = bindingOfCreation(req.Creations[i]).String()
		}
		out = append(out, change{action: "create", res: audit.Resource{Type: "acl", Name: name}, code: res.ErrorCode, msg: res.ErrorMessage})
	}
	return out
}

func changesDeleteACLs(_ kmsg.Request, kresp kmsg.Response) []change {
	var out []change
	for _, res := range kresp.(*kmsg.DeleteACLsResponse).Results {
		if res.ErrorCode != 0 {
			out = append(out, change{action: "delete", res: audit.Resource{Type: "acl"}, code: res.ErrorCode, msg: res.ErrorMessage})
			continue
		}
		for _, m := range res.MatchingACLs {
			b := acl.Binding{ResourceType: m.ResourceType, ResourceName: m.ResourceName, PatternType: m.ResourcePatternType,
				Principal: m.Principal, Host: m.Host, Operation: m.Operation, Permission: m.PermissionType}
			out = append(out, change{action: "delete", res: audit.Resource{Type: "acl", Name: b.String()}, code: m.ErrorCode, msg: m.ErrorMessage})
		}
	}
	return out
}

func changesDeleteGroups(_ kmsg.Request, kresp kmsg.Response) []change {
	var out []change
	for _, g := range kresp.(*kmsg.DeleteGroupsResponse).Groups {
		out = append(out, change{action: "delete", res: audit.Resource{Type: "group", Name: g.Group}, code: g.ErrorCode})
	}
	return out
}

func changesOffsetDelete(kreq kmsg.Request, kresp kmsg.Response) []change {
	req, resp := kreq.(*kmsg.OffsetDeleteRequest), kresp.(*kmsg.OffsetDeleteResponse)
	var parts []string
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, fmt.Sprintf("%s-%d", t.Topic, p.Partition))
		}
	}
	return []change{{action: "delete_offsets", res: audit.Resource{Type: "group", Name: req.Group}, code: resp.ErrorCode,
		detail: strings.Join(parts, ", ")}}
}

func changesDeleteRecords(kreq kmsg.Request, kresp kmsg.Response) []change {
	var out []change
	for _, t := range kresp.(*kmsg.DeleteRecordsResponse).Topics {
		for _, p := range t.Partitions {
			out = append(out, change{action: "delete_records", res: audit.Resource{Type: "partition", Name: fmt.Sprintf("%s-%d", t.Topic, p.Partition)},
				code: p.ErrorCode, detail: fmt.Sprintf("log start offset now %d", p.LowWatermark)})
		}
	}
	return out
}

func changesUnregisterBroker(kreq kmsg.Request, kresp kmsg.Response) []change {
	req, resp := kreq.(*kmsg.UnregisterBrokerRequest), kresp.(*kmsg.UnregisterBrokerResponse)
	return []change{{action: "unregister", res: audit.Resource{Type: "broker", Name: fmt.Sprint(req.BrokerID)}, code: resp.ErrorCode, msg: resp.ErrorMessage}}
}

func changesAddRaftVoter(kreq kmsg.Request, kresp kmsg.Response) []change {
	req, resp := kreq.(*kmsg.AddRaftVoterRequest), kresp.(*kmsg.AddRaftVoterResponse)
	return []change{{action: "add_voter", res: audit.Resource{Type: "broker", Name: fmt.Sprint(req.VoterID)}, code: resp.ErrorCode, msg: resp.ErrorMessage}}
}

func changesRemoveRaftVoter(kreq kmsg.Request, kresp kmsg.Response) []change {
	req, resp := kreq.(*kmsg.RemoveRaftVoterRequest), kresp.(*kmsg.RemoveRaftVoterResponse)
	return []change{{action: "remove_voter", res: audit.Resource{Type: "broker", Name: fmt.Sprint(req.VoterID)}, code: resp.ErrorCode, msg: resp.ErrorMessage}}
}

// changesAlterUserSCRAM records user changes by name and mechanism only.
func changesAlterUserSCRAM(kreq kmsg.Request, kresp kmsg.Response) []change {
	req := kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	what := map[string][]string{}
	for _, d := range req.Deletions {
		what[d.Name] = append(what[d.Name], fmt.Sprintf("delete %s", scramMechanism(d.Mechanism)))
	}
	for _, u := range req.Upsertions {
		what[u.Name] = append(what[u.Name], fmt.Sprintf("set %s", scramMechanism(u.Mechanism)))
	}
	var out []change
	for _, res := range kresp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
		out = append(out, change{action: "alter_user", res: audit.Resource{Type: "user", Name: res.User}, code: res.ErrorCode,
			msg: res.ErrorMessage, detail: strings.Join(what[res.User], ", ")})
	}
	return out
}

func scramMechanism(m int8) string {
	switch m {
	case 1:
		return "SCRAM-SHA-256"
	case 2:
		return "SCRAM-SHA-512"
	}
	return fmt.Sprintf("mechanism %d", m)
}

// changesAlterClientQuotas records each entry's entity and its ops.
func changesAlterClientQuotas(kreq kmsg.Request, kresp kmsg.Response) []change {
	req := kreq.(*kmsg.AlterClientQuotasRequest)
	if req.ValidateOnly {
		return nil
	}
	resp := kresp.(*kmsg.AlterClientQuotasResponse)
	var out []change
	for i, res := range resp.Entries {
		var e controller.QuotaEntity
		for _, p := range res.Entity {
			e = append(e, controller.QuotaEntityPart{Type: p.Type, Name: p.Name})
		}
		var ops []string
		if i < len(req.Entries) {
			for _, op := range req.Entries[i].Ops {
				if op.Remove {
					ops = append(ops, "remove "+op.Key)
				} else {
					ops = append(ops, fmt.Sprintf("set %s=%v", op.Key, op.Value))
				}
			}
		}
		out = append(out, change{action: "alter_client_quota", res: audit.Resource{Type: "client_quota", Name: e.Key()},
			code: res.ErrorCode, msg: res.ErrorMessage, detail: strings.Join(ops, ", ")})
	}
	return out
}
