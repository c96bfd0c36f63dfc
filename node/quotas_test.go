package node

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

// alterQuotaReq sets (or removes) one key on a user / client-id entity; a
// nil client id leaves that part out, an empty user string means the
// default user.
func alterQuotaReq(user string, clientID *string, key string, value float64, remove bool) *kmsg.AlterClientQuotasRequest {
	req := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	u := kmsg.NewAlterClientQuotasRequestEntryEntity()
	u.Type = controller.QuotaEntityUser
	if user != "" {
		u.Name = kmsg.StringPtr(user)
	}
	e.Entity = append(e.Entity, u)
	if clientID != nil {
		ce := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ce.Type, ce.Name = controller.QuotaEntityClientID, clientID
		e.Entity = append(e.Entity, ce)
	}
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = key, value, remove
	e.Ops = append(e.Ops, op)
	req.Entries = append(req.Entries, e)
	return req
}

func describeQuotas(t *testing.T, c *cluster, node int32, strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) *kmsg.DescribeClientQuotasResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Version, req.Components, req.Strict = 1, comps, strict
	return admin(t, c, node, req).(*kmsg.DescribeClientQuotasResponse)
}

func quotaComp(typ string, match kmsg.QuotasMatchType, name *string) kmsg.DescribeClientQuotasRequestComponent {
	comp := kmsg.NewDescribeClientQuotasRequestComponent()
	comp.EntityType, comp.MatchType, comp.Match = typ, match, name
	return comp
}

// Quotas set through one broker are in every broker's metadata and
// resolve there; Describe filters as Kafka does; bad input gets
// INVALID_REQUEST; ValidateOnly changes nothing; the quotas survive a
// restart.
func TestClientQuotasAPIs(t *testing.T) {
	c := newCluster(t, 3, 21)
	c.waitReady()
	alter := func(node int32, req *kmsg.AlterClientQuotasRequest) []kmsg.AlterClientQuotasResponseEntry {
		t.Helper()
		resp := admin(t, c, node, req).(*kmsg.AlterClientQuotasResponse)
		if len(resp.Entries) != len(req.Entries) {
			t.Fatalf("%d results for %d entries", len(resp.Entries), len(req.Entries))
		}
		return resp.Entries
	}
	app := kmsg.StringPtr("app")
	for _, req := range []*kmsg.AlterClientQuotasRequest{
		alterQuotaReq("alice", nil, controller.QuotaProducerByteRate, 1024, false),
		alterQuotaReq("alice", app, controller.QuotaConsumerByteRate, 4096, false),
		alterQuotaReq("", nil, controller.QuotaProducerByteRate, 100_000, false),
	} {
		if res := alter(2, req); res[0].ErrorCode != 0 {
			t.Fatalf("alter: %v %v", kerr.ErrorForCode(res[0].ErrorCode), res[0].ErrorMessage)
		}
	}
	c.runFor(500 * time.Millisecond)
	for id, n := range c.nodes {
		m, ok := n.r.ClientQuota(controller.QuotaProducerByteRate, "User:alice", "app")
		if !ok || m.Limit != 1024 || m.User != "alice" || m.ClientID != "" {
			t.Fatalf("node %d: alice's produce quota %+v %v", id, m, ok)
		}
		m, ok = n.r.ClientQuota(controller.QuotaConsumerByteRate, "User:alice", "app")
		if !ok || m.Limit != 4096 || m.ClientID != "app" {
			t.Fatalf("node %d: alice/app's fetch quota %+v %v", id, m, ok)
		}
		m, ok = n.r.ClientQuota(controller.QuotaProducerByteRate, "User:ANONYMOUS", "x")
		if !ok || m.Limit != 100_000 || m.User != "ANONYMOUS" {
			t.Fatalf("node %d: the default user's quota %+v %v", id, m, ok)
		}
	}

	all := describeQuotas(t, c, 3, false)
	if all.ErrorCode != 0 || len(all.Entries) != 3 {
		t.Fatalf("describe all: %v %+v", kerr.ErrorForCode(all.ErrorCode), all.Entries)
	}
	// user=alice, strict: alice alone; not strict: alice and alice/app.
	strict := describeQuotas(t, c, 1, true, quotaComp("user", 0, kmsg.StringPtr("alice")))
	if len(strict.Entries) != 1 || len(strict.Entries[0].Entity) != 1 || *strict.Entries[0].Entity[0].Name != "alice" ||
		strict.Entries[0].Values[0].Key != controller.QuotaProducerByteRate || strict.Entries[0].Values[0].Value != 1024 {
		t.Fatalf("strict alice: %+v", strict.Entries)
	}
	if loose := describeQuotas(t, c, 1, false, quotaComp("user", 0, kmsg.StringPtr("alice"))); len(loose.Entries) != 2 {
		t.Fatalf("non-strict alice: %+v", loose.Entries)
	}
	dflt := describeQuotas(t, c, 1, false, quotaComp("user", 1, nil))
	if len(dflt.Entries) != 1 || dflt.Entries[0].Entity[0].Name != nil {
		t.Fatalf("default user: %+v", dflt.Entries)
	}
	for _, bad := range [][]kmsg.DescribeClientQuotasRequestComponent{
		{quotaComp("group", 2, nil)},
		{quotaComp("user", 0, nil)},
		{quotaComp("user", 2, nil), quotaComp("user", 1, nil)},
		{quotaComp("ip", 2, nil), quotaComp("client-id", 2, nil)},
	} {
		d := describeQuotas(t, c, 1, false, bad...)
		wantCode(t, "describe with a bad filter", d.ErrorCode, d.ErrorMessage, kerr.InvalidRequest)
	}

	// Bad input: every entry INVALID_REQUEST with a message; nothing
	// changes.
	before := c.nodes[1].r.Metadata().Snapshot()
	bad := []*kmsg.AlterClientQuotasRequest{
		alterQuotaReq("bob", nil, "producer_byte_rat", 10, false),
		alterQuotaReq("bob", nil, controller.QuotaProducerByteRate, -10, false),
		alterQuotaReq("bob", nil, controller.QuotaProducerByteRate, 0, false),
		alterQuotaReq("bob", nil, controller.QuotaProducerByteRate, 10.5, false),
		alterQuotaReq("bob", nil, controller.QuotaConnectionCreationRate, 10, false),
	}
	badEntity := alterQuotaReq("bob", nil, controller.QuotaProducerByteRate, 10, false)
	badEntity.Entries[0].Entity[0].Type = "group"
	twice := alterQuotaReq("bob", nil, controller.QuotaProducerByteRate, 10, false)
	twice.Entries[0].Entity = append(twice.Entries[0].Entity, twice.Entries[0].Entity[0])
	badIP := alterQuotaReq("bob", nil, controller.QuotaConnectionCreationRate, 10, false)
	badIP.Entries[0].Entity[0].Type, badIP.Entries[0].Entity[0].Name = "ip", kmsg.StringPtr("not-an-ip")
	dupKey := alterQuotaReq("bob", nil, controller.QuotaProducerByteRate, 10, false)
	dupKey.Entries[0].Ops = append(dupKey.Entries[0].Ops, dupKey.Entries[0].Ops[0])
	bad = append(bad, badEntity, twice, badIP, dupKey)
	for i, req := range bad {
		res := alter(1, req)[0]
		wantCode(t, "bad alter", res.ErrorCode, res.ErrorMessage, kerr.InvalidRequest)
		if res.ErrorMessage == nil || *res.ErrorMessage == "" {
			t.Errorf("bad alter %d: no message", i)
		}
	}
	vo := alterQuotaReq("bob", nil, controller.QuotaProducerByteRate, 10, false)
	vo.ValidateOnly = true
	if res := alter(1, vo)[0]; res.ErrorCode != 0 || *res.Entity[0].Name != "bob" {
		t.Fatalf("validate only: %+v", res)
	}
	vo = alterQuotaReq("bob", nil, controller.QuotaProducerByteRate, -1, false)
	vo.ValidateOnly = true
	if res := alter(1, vo)[0]; res.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("validate only, a bad value: %v", kerr.ErrorForCode(res.ErrorCode))
	}
	c.runFor(500 * time.Millisecond)
	if after := c.nodes[1].r.Metadata().Snapshot(); string(before) != string(after) {
		t.Fatal("refused or validate-only changes changed the metadata")
	}

	// Removal, then a restart: the quotas come back from the log.
	if res := alter(3, alterQuotaReq("alice", app, controller.QuotaConsumerByteRate, 0, true)); res[0].ErrorCode != 0 {
		t.Fatalf("remove: %v", kerr.ErrorForCode(res[0].ErrorCode))
	}
	c.runFor(500 * time.Millisecond)
	c.nodes[2].crash()
	c.nodes[2].boot()
	c.runFor(3 * time.Second)
	c.waitReady()
	if d := describeQuotas(t, c, 2, false); len(d.Entries) != 2 {
		t.Fatalf("after removal and a restart: %+v", d.Entries)
	}
	if m, ok := c.nodes[2].r.ClientQuota(controller.QuotaProducerByteRate, "User:alice", ""); !ok || m.Limit != 1024 {
		t.Fatalf("restarted node: alice's quota %+v %v", m, ok)
	}
	if _, ok := c.nodes[2].r.ClientQuota(controller.QuotaConsumerByteRate, "User:alice", "app"); ok {
		t.Fatal("restarted node: the removed quota is back")
	}
}
