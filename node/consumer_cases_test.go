package node

// The KIP-848 consumer group APIs' cases in the every-API matrices:
// authorization (authz_test.go) and majority loss (deadline_test.go).

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func consumerHeartbeatReq(g, member string, epoch int32, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch = 1, g, member, epoch
	hb.RebalanceTimeoutMillis = 30000
	if epoch == 0 {
		hb.SubscribedTopicNames = append([]string{}, topics...)
	}
	return hb
}

// addConsumerAuthCases adds the KIP-848 APIs to the authorization matrix,
// on consumer group cg.
func addConsumerAuthCases(cases map[int16]authCase) {
	// As in Kafka 4.0: DESCRIBE on each topic named in the subscription too.
	cases[68] = authCase{needs: []string{"ALLOW READ GROUP LITERAL cg", "ALLOW DESCRIBE TOPIC LITERAL t"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		return consumerHeartbeatReq("cg", "alice-member", 0, "t")
	}}
	// and DESCRIBE on the topics the group is assigned (t, since case 68).
	cases[69] = authCase{needs: []string{"ALLOW DESCRIBE GROUP LITERAL cg", "ALLOW DESCRIBE TOPIC LITERAL t"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		d := kmsg.NewPtrConsumerGroupDescribeRequest()
		d.Groups = []string{"cg"}
		return d
	}}
}

// addTelemetryAuthCases: the KIP-714 APIs need no ACL; both principals
// get a subscription with an instance id.
func addTelemetryAuthCases(cases map[int16]authCase) {
	cases[71] = authCase{req: func() kmsg.Request { return kmsg.NewPtrGetTelemetrySubscriptionsRequest() },
		check: func(t *testing.T, resp kmsg.Response, _ bool) {
			if r := resp.(*kmsg.GetTelemetrySubscriptionsResponse); r.ErrorCode != 0 || r.ClientInstanceID == ([16]byte{}) {
				t.Errorf("GetTelemetrySubscriptions: %+v", r)
			}
		}}
	cases[72] = authCase{req: func() kmsg.Request {
		p := kmsg.NewPtrPushTelemetryRequest()
		p.ClientInstanceID[0], p.SubscriptionID = 1, 12345 // not the current subscription
		return p
	}, check: func(t *testing.T, resp kmsg.Response, _ bool) {
		if code := resp.(*kmsg.PushTelemetryResponse).ErrorCode; code != kerr.UnknownSubscriptionID.Code {
			t.Errorf("PushTelemetry with a stale subscription: %v", kerr.ErrorForCode(code))
		}
	}}
}

// addConsumerMajorityLossCases adds the KIP-848 APIs to the majority-loss
// matrix: a join must write the group's record, so it cannot succeed;
// a describe reads the coordinator's memory and answers at once.
func addConsumerMajorityLossCases(cases map[int16]apiCase, g string) {
	none := requestTimeoutDefault
	cases[68] = apiCase{consumerHeartbeatReq("kip848-"+g, "m", 0, "q"), none, true}
	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Groups = []string{"kip848-" + g}
	cases[69] = apiCase{d, none, false}
	cases[71] = apiCase{kmsg.NewPtrGetTelemetrySubscriptionsRequest(), none, false}
	cases[72] = apiCase{kmsg.NewPtrPushTelemetryRequest(), none, false}
}
