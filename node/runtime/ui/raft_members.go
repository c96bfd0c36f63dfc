package ui

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The members' progress of every partition, from its leader: only a Raft
// group's leader knows how far each member's log reaches and when it last
// heard from it, and DescribeQuorum carries that for any partition. The
// Raft page asks each leader broker once, for all the partitions it leads
// (and the controller group, if it leads that), all leaders at once and
// within quorumBound in total: a leader that does not answer in time is
// marked unreachable, it does not hold the page.
//
// Leadership may move between the Metadata the page read and the
// question: the old leader then answers NOT_LEADER_OR_FOLLOWER for the
// partition, shown as such (a reload asks the new leader).

// quorumBound bounds all the page's DescribeQuorum questions together.
const quorumBound = 3 * time.Second

// behindAfter: a member with entries to catch up that the leader has not
// seen caught up for this long (or not at all in its term) is behind.
const behindAfter = 5 * time.Second

// groupKey names a Raft group as DescribeQuorum does.
type groupKey struct {
	Topic     string
	Partition int32
}

// controllerGroup is the controller group's name in DescribeQuorum.
var controllerGroup = groupKey{"__cluster_metadata", 0}

// quorumAnswer is one group's answer, or why there is none.
type quorumAnswer struct {
	From  int32 // the broker asked
	Rows  []raftMemberRow
	Epoch int32 // the leader epoch (Raft term) the leader answered with
	Err   string
	// Unreachable: the leader did not answer within the bound, or the
	// request to it failed.
	Unreachable bool
}

// askQuorum sends one DescribeQuorum to one broker. The real one goes
// through the session's Kafka client; tests stand in for it.
type askQuorum func(ctx context.Context, broker int32, req *kmsg.DescribeQuorumRequest) (*kmsg.DescribeQuorumResponse, error)

// askLeaders asks every leader broker for the groups it leads, in
// parallel, and returns an answer for every group asked about. A broker
// without an answer within bound (or whose request failed) gives each of
// its groups an Err saying so; nothing waits past bound, even an ask that
// ignores its context.
func askLeaders(ctx context.Context, ask askQuorum, leaders map[int32][]groupKey, bound time.Duration) map[groupKey]quorumAnswer {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	type reply struct {
		broker int32
		resp   *kmsg.DescribeQuorumResponse
		err    error
	}
	replies := make(chan reply, len(leaders)) // buffered: a late ask never blocks
	for b, groups := range leaders {          //floe:unordered each broker's ask runs on its own goroutine
		req := quorumRequest(groups)
		go func() {
			resp, err := ask(ctx, b, req)
			replies <- reply{b, resp, err}
		}()
	}
	out := map[groupKey]quorumAnswer{}
	answered := map[int32]bool{}
wait:
	for len(answered) < len(leaders) {
		select {
		case rp := <-replies:
			answered[rp.broker] = true
			for k, a := range quorumAnswers(rp.broker, leaders[rp.broker], rp.resp, rp.err) {
				out[k] = a
			}
		case <-ctx.Done(): // the bound, even for an ask that ignores ctx
			break wait
		}
	}
	for b, groups := range leaders { //floe:unordered filling a map
		if answered[b] {
			continue
		}
		for _, g := range groups {
			out[g] = quorumAnswer{From: b, Err: fmt.Sprintf("leader broker %d unreachable: no answer within %v", b, bound), Unreachable: true}
		}
	}
	return out
}

// quorumRequest asks for groups, grouped by topic in the order given.
func quorumRequest(groups []groupKey) *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	at := map[string]int{}
	for _, g := range groups {
		i, ok := at[g.Topic]
		if !ok {
			i = len(req.Topics)
			at[g.Topic] = i
			rt := kmsg.NewDescribeQuorumRequestTopic()
			rt.Topic = g.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewDescribeQuorumRequestTopicPartition()
		rp.Partition = g.Partition
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	return req
}

// quorumAnswers reads one broker's answer for the groups asked of it.
func quorumAnswers(broker int32, groups []groupKey, resp *kmsg.DescribeQuorumResponse, err error) map[groupKey]quorumAnswer {
	out := map[groupKey]quorumAnswer{}
	all := func(a quorumAnswer) map[groupKey]quorumAnswer {
		for _, g := range groups {
			out[g] = a
		}
		return out
	}
	if err == nil && resp == nil {
		err = errors.New("no answer")
	}
	if err != nil { // the request did not get through
		_, msg := classify(err)
		return all(quorumAnswer{From: broker, Err: fmt.Sprintf("leader broker %d unreachable: %s", broker, msg), Unreachable: true})
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil { // refused: not authorized...
		_, msg := classify(err)
		return all(quorumAnswer{From: broker, Err: fmt.Sprintf("broker %d: %s", broker, msg)})
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			a := quorumAnswer{From: broker, Epoch: p.LeaderEpoch}
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				a.Err = fmt.Sprintf("broker %d: %v", broker, err)
			} else {
				a.Rows = quorumRows(p)
			}
			out[groupKey{t.Topic, p.Partition}] = a
		}
	}
	for _, g := range groups {
		if _, ok := out[g]; !ok {
			out[g] = quorumAnswer{From: broker, Err: fmt.Sprintf("broker %d did not answer for this group", broker)}
		}
	}
	return out
}

// quorumRows turns a DescribeQuorum answer into member rows: lag is the
// leader's acknowledged index minus the member's, ages are taken from the
// leader's own timestamps (its own row carries its clock's now, so the
// serving broker's clock does not matter). Only the leader fills
// LogEndOffset (-1 elsewhere): no rows then.
func quorumRows(p kmsg.DescribeQuorumResponseTopicPartition) []raftMemberRow {
	var lead, now int64 = -1, -1
	all := append(append([]kmsg.DescribeQuorumResponseTopicPartitionReplicaState(nil), p.CurrentVoters...), p.Observers...)
	for _, v := range all {
		if v.ReplicaID == p.LeaderID {
			lead, now = v.LogEndOffset, v.LastFetchTimestamp
		}
	}
	if lead < 0 {
		return nil
	}
	age := func(ts int64) int64 {
		if ts < 0 || now < 0 {
			return -1
		}
		return max(0, now-ts)
	}
	var rows []raftMemberRow
	for i, v := range all {
		row := raftMemberRow{RaftMember: RaftMember{ID: uint64(v.ReplicaID), Learner: i >= len(p.CurrentVoters), RecentActive: true},
			Self: v.ReplicaID == p.LeaderID, HeardAgoMs: age(v.LastFetchTimestamp), CaughtUpAgoMs: age(v.LastCaughtUpTimestamp)}
		if v.LogEndOffset >= 0 {
			row.Match = uint64(v.LogEndOffset)
		}
		if lead > v.LogEndOffset {
			row.Lag = uint64(lead - max(v.LogEndOffset, 0))
		}
		row.Behind = !row.Self && row.Lag > 0 && (row.CaughtUpAgoMs < 0 || row.CaughtUpAgoMs >= behindAfter.Milliseconds())
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	return rows
}

// withAges copies the leader's heard and caught-up ages from its
// DescribeQuorum answer into this broker's own rows of the group.
func withAges(rows, quorum []raftMemberRow) {
	byID := map[uint64]raftMemberRow{}
	for _, q := range quorum {
		byID[q.ID] = q
	}
	for i := range rows {
		if q, ok := byID[rows[i].ID]; ok {
			rows[i].HeardAgoMs, rows[i].CaughtUpAgoMs = q.HeardAgoMs, q.CaughtUpAgoMs
		}
	}
}

// agoMs shows an age for the page.
func agoMs(ms int64) string {
	switch {
	case ms < 0:
		return "not yet this term"
	case ms < 1000:
		return fmt.Sprintf("%d ms ago", ms)
	case ms < 120_000:
		return fmt.Sprintf("%.1f s ago", float64(ms)/1000)
	}
	return fmt.Sprintf("%d min ago", ms/60_000)
}
