package node

// AlterPartitionReassignments (key 45), version 0.
//
// Starts moving partitions to new replica sets (Replicas given) or cancels
// a move in progress (Replicas null). The broker forwards each change to the
// controller and answers once its replica of the metadata applied it; the
// move itself then proceeds in the background, driven by each partition's
// Raft leader one membership change at a time (reassign.go), and shows in
// ListPartitionReassignments until it completes. Replica lists must name
// distinct registered brokers. v1 (replication factor change opt-in) is not
// advertised: any new replica count is accepted.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

// Authorization: ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED).
func serveAlterPartitionReassignments(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	if !r.authorize(c, req).cluster(kmsg.ACLOperationAlter) {
		resp.ErrorCode = errClusterAuth.Code
		respond(resp)
		return
	}
	g := newGather(func() { respond(resp) })
	resp.Topics = make([]kmsg.AlterPartitionAssignmentsResponseTopic, len(req.Topics))
	for ti, rt := range req.Topics {
		st := &resp.Topics[ti]
		*st = kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.AlterPartitionAssignmentsResponseTopicPartition, len(rt.Partitions))
		for pi, rp := range rt.Partitions {
			sp := &st.Partitions[pi]
			*sp = kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			t, ok := r.ctl.state.Topics[rt.Topic]
			if !ok || rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				continue
			}
			if rp.Replicas != nil && len(rp.Replicas) == 0 {
				sp.ErrorCode = kerr.InvalidReplicaAssignment.Code
				sp.ErrorMessage = kmsg.StringPtr("an empty replica list; use null to cancel")
				continue
			}
			if rp.Replicas == nil && t.Partitions[rp.Partition].Target == nil {
				sp.ErrorCode = kerr.NoReassignmentInProgress.Code
				continue
			}
			g.add()
			cmd := &controller.Command{Reassign: &controller.Reassign{Topic: rt.Topic, Partition: rp.Partition, Target: rp.Replicas}}
			r.propose(cmd, func(res controller.Result) {
				sp.ErrorCode, sp.ErrorMessage = errParts(res.Err)
				g.done()
			})
		}
	}
	g.done()
}
