package main

// The controller quorum's part of floe cluster rolling-restart-check:
// partitions' ISRs say nothing about the controller group, and a broker
// may go only if the metadata log stays writable without it.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkQuorum asks the controller's leader for DescribeQuorum (only the
// leader knows how far each voter's log reaches) and judges it.
func checkQuorum(ctx context.Context, cl *kgo.Client, v *restartVerdict, controller, stopping int32) {
	if controller < 0 {
		v.notYet("no controller leader to ask about the controller quorum")
		return
	}
	resp, err := describeQuorumReq().RequestWith(ctx, cl.Broker(int(controller)))
	if err != nil {
		v.notYet("the controller, broker %d, did not describe its quorum: %v", controller, err)
		return
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		v.notYet("the controller, broker %d, did not describe its quorum: %v", controller, err)
		return
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		v.notYet("the controller, broker %d, answered DescribeQuorum without the metadata partition", controller)
		return
	}
	judgeQuorum(v, resp.Topics[0].Partitions[0], controller, stopping)
}

// judgeQuorum: a voter has caught up when its log reaches the leader's
// high watermark (Floe keeps no caught-up timestamps). Without a broker
// named, every voter must have caught up. With one: every voter other
// than it must have (a lagging voter plus the stopping one could leave no
// majority that holds the committed log), and the voters left without it
// must still be a majority of the voters.
func judgeQuorum(v *restartVerdict, p kmsg.DescribeQuorumResponseTopicPartition, asked, stopping int32) {
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		v.notYet("controller quorum: %v", err)
		return
	}
	if p.LeaderID < 0 || p.LeaderID != asked {
		v.notYet("controller quorum: broker %d does not lead it (leader %d): ask again", asked, p.LeaderID)
		return
	}
	var voters, lagging []int32
	for _, r := range p.CurrentVoters {
		voters = append(voters, r.ReplicaID)
		if r.ReplicaID != stopping && r.LogEndOffset < p.HighWatermark {
			lagging = append(lagging, r.ReplicaID)
		}
	}
	slices.Sort(voters)
	for _, id := range lagging {
		v.notYet("controller voter %d has not caught up (log end %d, the leader's high watermark %d)",
			id, logEndOf(p, id), p.HighWatermark)
	}
	need := len(voters)/2 + 1
	if stopping > 0 && slices.Contains(voters, stopping) && len(voters)-1 < need {
		v.notYet("stopping controller voter %d would leave %d of %d voters, fewer than the majority %d (voters %s)",
			stopping, len(voters)-1, len(voters), need, joinIDs(voters))
	}
	v.notes = append(v.notes, fmt.Sprintf("controller quorum: leader %d, term %d, voters %s, %d lagging",
		p.LeaderID, p.LeaderEpoch, joinIDs(voters), len(lagging)))
}

func logEndOf(p kmsg.DescribeQuorumResponseTopicPartition, id int32) int64 {
	for _, r := range p.CurrentVoters {
		if r.ReplicaID == id {
			return r.LogEndOffset
		}
	}
	return -1
}
