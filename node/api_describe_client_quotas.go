package node

// DescribeClientQuotas (key 48), versions 0-1 (KIP-546; v1 is flexible).
//
// Lists the client quotas the applied metadata holds (controller
// quotas.go) whose entities match every filter component: MatchType 0 an
// entity part of that type named Match, 1 the type's default entity, 2
// any part of that type. With Strict, only entities with no part outside
// the filter; without, entities may have more parts. No components and
// not strict: every quota. A malformed filter (an unknown entity type, a
// type twice, an unknown match type, an exact match without a name, ip
// with user or client-id) is INVALID_REQUEST, as Kafka answers.
//
// Authorization: DESCRIBE_CONFIGS on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

func serveDescribeClientQuotas(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !r.authorize(c, req).cluster(kmsg.ACLOperationDescribeConfigs) {
		resp.ErrorCode = errClusterAuth.Code
		respond(resp)
		return
	}
	fs := make([]controller.QuotaFilter, 0, len(req.Components))
	for _, comp := range req.Components {
		f := controller.QuotaFilter{Type: comp.EntityType, Match: int8(comp.MatchType)}
		if comp.Match != nil {
			f.Name = *comp.Match
		}
		if f.Match == controller.QuotaMatchExact && comp.Match == nil {
			resp.ErrorCode, resp.ErrorMessage = errParts(withMessage(kerr.InvalidRequest, "an exact match needs a name to match"))
			respond(resp)
			return
		}
		fs = append(fs, f)
	}
	if err := controller.CheckQuotaFilter(fs); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errParts(err)
		respond(resp)
		return
	}
	for _, q := range r.ctl.state.DescribeClientQuotas(fs, req.Strict) {
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range q.Entity {
			ee := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = p.Type, p.Name
			e.Entity = append(e.Entity, ee)
		}
		for _, k := range sortedKeys(q.Values) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, q.Values[k]
			e.Values = append(e.Values, v)
		}
		resp.Entries = append(resp.Entries, e)
	}
	respond(resp)
}
