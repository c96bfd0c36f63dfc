package group

// ConsumerGroupDescribe (key 69), versions 0-1: one coordinator's part.
// A group that is not a consumer group gets GROUP_ID_NOT_FOUND, as in
// Kafka (a classic group is described by DescribeGroups).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeConsumerGroup describes one KIP-848 group. topics maps names to
// the topic ids the response carries.
func (c *Coordinator) DescribeConsumerGroup(name string, includeOperations bool, topics []TopicInfo) kmsg.ConsumerGroupDescribeResponseGroup {
	out := kmsg.NewConsumerGroupDescribeResponseGroup()
	out.Group = name
	g := c.groups[name]
	if g == nil || g.cons == nil {
		out.ErrorCode = kerr.GroupIDNotFound.Code
		out.ErrorMessage = kmsg.StringPtr("Group " + name + " is not a consumer group")
		return out
	}
	if includeOperations {
		out.AuthorizedOperations = groupOperations
	}
	byName := map[string]TopicInfo{}
	for _, t := range topics {
		byName[t.Name] = t
	}
	cg := g.cons
	out.State, out.Epoch, out.AssignmentEpoch = cg.stateName(), cg.Epoch, cg.AssignmentEpoch
	out.AssignorName = c.cfg.ConsumerAssignors[0]
	for _, id := range cg.memberIDs() {
		m := cg.Members[id]
		if m.Assignor != "" {
			out.AssignorName = m.Assignor
		}
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID, dm.MemberEpoch = m.ID, m.InstanceID, m.Rack, m.Epoch
		dm.ClientID, dm.ClientHost = m.ClientID, m.ClientHost
		dm.SubscribedTopics = append([]string{}, m.Topics...)
		if m.Regex != "" {
			dm.SubscribedTopicRegex = kmsg.StringPtr(m.Regex)
		}
		dm.Assignment = describeAssignment(m.Assigned, byName)
		dm.TargetAssignment = describeAssignment(m.Target, byName)
		dm.MemberType = 1 // consumer protocol
		if m.Classic != nil {
			dm.MemberType = 0 // classic protocol (online migration)
		}
		out.Members = append(out.Members, dm)
	}
	return out
}

func describeAssignment(a assignment, byName map[string]TopicInfo) kmsg.Assignment {
	out := kmsg.Assignment{TopicPartitions: []kmsg.AssignmentTopicPartition{}}
	for _, t := range sortedTopics(a) {
		tp := kmsg.AssignmentTopicPartition{Topic: t, TopicID: byName[t].ID, Partitions: append([]int32(nil), a[t]...)}
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}
