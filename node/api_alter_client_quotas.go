package node

// AlterClientQuotas (key 49), versions 0-1 (KIP-546; v1 is flexible).
//
// Sets and removes client quotas (KIP-13, KIP-55). Each entry names an
// entity (user, client-id, or both; or ip; a part with a null name is the
// type's default entity) and its ops; each entry is one controller
// command (controller.AlterClientQuota), so an entry applies whole or not
// at all, and gets one result, with the entity as the request gave it.
// Keys: producer_byte_rate, consumer_byte_rate (integers),
// request_percentage, controller_mutation_rate (numbers) for user and
// client-id entities; connection_creation_rate (an integer) for ip ones.
// Values must be greater than 0; removing a key that is not set is no
// error. Errors, as Kafka's: INVALID_REQUEST, with the reason, for an
// unknown or repeated entity type, ip combined with another type, an
// invalid IP, an unknown key, a value out of range, or a key given twice
// in one entry; REQUEST_TIMED_OUT when the controller did not apply the
// change in time. With ValidateOnly the checks run and nothing changes.
//
// Byte-rate, request_percentage and connection_creation_rate quotas are
// enforced by the runtime on each broker (node/runtime/quotas.go);
// controller_mutation_rate is stored and described but not enforced
// (docs/operations.md).
//
// Authorization: ALTER_CONFIGS on the cluster, else every entry's result
// is CLUSTER_AUTHORIZATION_FAILED.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

func serveAlterClientQuotas(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	resp.Entries = make([]kmsg.AlterClientQuotasResponseEntry, len(req.Entries))
	for i, e := range req.Entries {
		res := kmsg.NewAlterClientQuotasResponseEntry()
		for _, p := range e.Entity {
			re := kmsg.NewAlterClientQuotasResponseEntryEntity()
			re.Type, re.Name = p.Type, p.Name
			res.Entity = append(res.Entity, re)
		}
		resp.Entries[i] = res
	}
	if !r.authorize(c, req).cluster(kmsg.ACLOperationAlterConfigs) {
		for i := range resp.Entries {
			resp.Entries[i].ErrorCode = errClusterAuth.Code
		}
		respond(resp)
		return
	}
	g := newGather(func() { respond(resp) })
	for i, e := range req.Entries {
		res := &resp.Entries[i]
		cmd, err := planQuotaChange(e)
		if err != nil {
			res.ErrorCode, res.ErrorMessage = errParts(err)
			continue
		}
		if req.ValidateOnly || (len(cmd.Set) == 0 && len(cmd.Remove) == 0) {
			continue
		}
		g.add()
		r.propose(&controller.Command{AlterClientQuota: cmd}, func(cr controller.Result) {
			res.ErrorCode, res.ErrorMessage = errParts(cr.Err)
			g.done()
		})
	}
	g.done()
}

// planQuotaChange checks one entry and makes its command.
func planQuotaChange(e kmsg.AlterClientQuotasRequestEntry) (*controller.AlterClientQuota, error) {
	cmd := &controller.AlterClientQuota{}
	for _, p := range e.Entity {
		cmd.Entity = append(cmd.Entity, controller.QuotaEntityPart{Type: p.Type, Name: p.Name})
	}
	if err := controller.CheckQuotaEntity(cmd.Entity); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, op := range e.Ops {
		if seen[op.Key] {
			return nil, withMessage(kerr.InvalidRequest, fmt.Sprintf("quota key %q is given twice", op.Key))
		}
		seen[op.Key] = true
		if op.Remove {
			cmd.Remove = append(cmd.Remove, op.Key)
			continue
		}
		if err := controller.CheckQuotaValue(cmd.Entity, op.Key, op.Value); err != nil {
			return nil, err
		}
		if cmd.Set == nil {
			cmd.Set = map[string]float64{}
		}
		cmd.Set[op.Key] = op.Value
	}
	return cmd, nil
}
