package node

// ShareGroupDescribe (key 77), versions 0-1 (KIP-932): each share group's
// members, epochs and assignment, from its coordinator (shares.go), or
// NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS for groups this broker
// does not serve and GROUP_ID_NOT_FOUND for a group with no share state
// here. The state is "Stable" with members, "Empty" without; the assignor
// is "simple" (every member gets every partition of its topics).
//
// Authorization: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED); the
// authorized operations, when asked, are the client's on the group.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func serveShareGroupDescribe(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	az := r.authorize(c, req)
	for _, name := range req.GroupIDs {
		g := kmsg.NewShareGroupDescribeResponseGroup()
		g.GroupID = name
		g.AuthorizedOperations = -2147483648 // Kafka's "not asked"
		if !az.group(name, kmsg.ACLOperationDescribe) {
			g.ErrorCode = errGroupAuth.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		sh, err := r.shareShardFor(name)
		if err != nil {
			g.ErrorCode = err.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		sg := sh.groups[name]
		if sg == nil {
			g.ErrorCode = kerr.GroupIDNotFound.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g.GroupEpoch, g.AssignmentEpoch, g.Assignor = sg.Epoch, sg.Epoch, "simple"
		g.GroupState = "Empty"
		for _, m := range sg.Members() {
			g.GroupState = "Stable"
			dm := kmsg.NewShareGroupDescribeResponseGroupMember()
			dm.MemberID, dm.RackID, dm.MemberEpoch = m.ID, m.Rack, m.Epoch
			dm.ClientID, dm.ClientHost, dm.SubscribedTopicNames = m.ClientID, m.ClientHost, m.Topics
			for _, t := range sortedKeys(m.Assigned) {
				tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
				tp.Topic, tp.Partitions = t, m.Assigned[t]
				if ct := r.ctl.state.Topics[t]; ct != nil {
					tp.TopicID = ct.ID
				}
				dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
			}
			g.Members = append(g.Members, dm)
		}
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = az.ops(kmsg.ACLResourceTypeGroup, name)
		}
		resp.Groups = append(resp.Groups, g)
	}
	respond(resp)
}
