package node

// ListPartitionReassignments (key 46), version 0.
//
// Lists partitions whose move is in progress, from this broker's applied
// metadata: the current replicas, the ones being added (in the target, not
// yet in the replica set) and the ones being removed. Topics null means
// every topic.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

// Authorization: DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED).
func serveListPartitionReassignments(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !r.authorize(c, req).cluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = errClusterAuth.Code
		respond(resp)
		return
	}
	st := r.ctl.state
	add := func(t *controller.Topic, only []int32) {
		rt := kmsg.NewListPartitionReassignmentsResponseTopic()
		rt.Topic = t.Name
		for _, p := range t.Partitions {
			if p.Target == nil || (only != nil && !slices.Contains(only, p.Index)) {
				continue
			}
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition = p.Index
			rp.Replicas = append([]int32(nil), p.Replicas...)
			for _, id := range p.Target {
				if !slices.Contains(p.Replicas, id) {
					rp.AddingReplicas = append(rp.AddingReplicas, id)
				}
			}
			for _, id := range p.Replicas {
				if !slices.Contains(p.Target, id) {
					rp.RemovingReplicas = append(rp.RemovingReplicas, id)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if req.Topics == nil {
		for _, name := range st.TopicNames() {
			add(st.Topics[name], nil)
		}
	} else {
		for _, rt := range req.Topics {
			if t, ok := st.Topics[rt.Topic]; ok {
				add(t, rt.Partitions)
			}
		}
	}
	respond(resp)
}
