package node

// ConsumerGroupDescribe (key 69), versions 0-1 (KIP-848): each consumer
// group's epochs, assignor and members (epoch, subscription, assignment
// and target assignment) from its coordinator (group/consumer_describe.go),
// or NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS for groups this broker
// does not serve, GROUP_ID_NOT_FOUND for a group that is not a consumer
// group.
//
// Authorization: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED); the
// authorized operations, when asked, are the client's on the group. As in
// Kafka (KafkaApis.handleConsumerGroupDescribe), a group any member of
// which is assigned, or has as target, a topic the client may not DESCRIBE
// is answered TOPIC_AUTHORIZATION_FAILED without its members, so its topic
// names, ids and owners stay hidden.

import "github.com/twmb/franz-go/pkg/kmsg"

func serveConsumerGroupDescribe(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	az := r.authorize(c, req)
	topics := r.consumerTopics()
	for _, name := range req.Groups {
		g := kmsg.NewConsumerGroupDescribeResponseGroup()
		g.Group = name
		if !az.group(name, kmsg.ACLOperationDescribe) {
			g.ErrorCode = errGroupAuth.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		co, err := r.coordinatorFor(name)
		if err != nil {
			g.ErrorCode = err.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g = co.DescribeConsumerGroup(name, req.IncludeAuthorizedOperations, topics)
		if g.ErrorCode == 0 && !describesTopics(az, g) {
			g = kmsg.NewConsumerGroupDescribeResponseGroup()
			g.Group, g.ErrorCode = name, errTopicAuth.Code
			g.ErrorMessage = kmsg.StringPtr("The group has described topic(s) that the client is not authorized to describe.")
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if req.IncludeAuthorizedOperations && g.ErrorCode == 0 {
			g.AuthorizedOperations = az.ops(kmsg.ACLResourceTypeGroup, name)
		}
		resp.Groups = append(resp.Groups, g)
	}
	respond(resp)
}

// describesTopics reports whether the client may DESCRIBE every topic of
// the group's members' assignments and target assignments.
func describesTopics(az *authz, g kmsg.ConsumerGroupDescribeResponseGroup) bool {
	for _, m := range g.Members {
		for _, as := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range as.TopicPartitions {
				if !az.sees(kmsg.ACLResourceTypeTopic, tp.Topic, kmsg.ACLOperationDescribe) {
					return false
				}
			}
		}
	}
	return true
}
