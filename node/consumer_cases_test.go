package node

// The KIP-848 consumer group APIs' cases in the every-API matrices:
// authorization (authz_test.go) and majority loss (deadline_test.go).

import (
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
	cases[68] = authCase{needs: []string{"ALLOW READ GROUP LITERAL cg"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		return consumerHeartbeatReq("cg", "alice-member", 0, "t")
	}}
	cases[69] = authCase{needs: []string{"ALLOW DESCRIBE GROUP LITERAL cg"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		d := kmsg.NewPtrConsumerGroupDescribeRequest()
		d.Groups = []string{"cg"}
		return d
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
}
