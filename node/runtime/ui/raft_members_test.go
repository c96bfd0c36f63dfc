package ui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quorumPart is a leader's DescribeQuorum answer for one partition:
// voters with their log end and last-heard timestamp (the leader's own
// row carries its now, 10000).
func quorumPart(part, leader int32, logEnds, heard map[int32]int64) kmsg.DescribeQuorumResponseTopicPartition {
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.Partition, p.LeaderID, p.LeaderEpoch = part, leader, 7
	for id := int32(1); id <= 3; id++ {
		v := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		v.ReplicaID, v.LogEndOffset, v.LastFetchTimestamp, v.LastCaughtUpTimestamp = id, logEnds[id], heard[id], heard[id]
		p.CurrentVoters = append(p.CurrentVoters, v)
	}
	return p
}

// TestAskLeaders: the Raft page asks each leader broker once for all the
// groups it leads. A leader that never answers (even one that ignores
// its context) is shown unreachable once the bound passes, beside the
// answers of the others; a failed request is unreachable too; a
// partition whose leadership moved shows the old leader's
// NOT_LEADER_OR_FOLLOWER; a group missing from an answer says so.
func TestAskLeaders(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	asked := map[int32]int{}
	askedCh := make(chan int32, 16)
	ask := func(ctx context.Context, broker int32, req *kmsg.DescribeQuorumRequest) (*kmsg.DescribeQuorumResponse, error) {
		askedCh <- broker
		resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
		rt := kmsg.NewDescribeQuorumResponseTopic()
		rt.Topic = "t"
		switch broker {
		case 1: // answers t/0 (member 3 far behind, not heard for 8 s), not t/4
			rt.Partitions = append(rt.Partitions, quorumPart(0, 1,
				map[int32]int64{1: 50, 2: 50, 3: 20}, map[int32]int64{1: 10000, 2: 9990, 3: 2000}))
		case 2: // hangs, deaf to its context
			<-release
			return nil, errors.New("released")
		case 3:
			return nil, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
		case 4:
			p := kmsg.NewDescribeQuorumResponseTopicPartition()
			p.Partition, p.ErrorCode = 3, kerr.NotLeaderForPartition.Code
			rt.Partitions = append(rt.Partitions, p)
		}
		resp.Topics = append(resp.Topics, rt)
		return resp, nil
	}
	leaders := map[int32][]groupKey{1: {{"t", 0}, {"t", 4}}, 2: {{"t", 1}}, 3: {{"t", 2}}, 4: {{"t", 3}}}
	done := make(chan map[groupKey]quorumAnswer, 1)
	go func() { done <- askLeaders(context.Background(), ask, leaders, 200*time.Millisecond) }()
	var got map[groupKey]quorumAnswer
	select {
	case got = <-done:
	case <-time.After(time.Minute): // a watchdog, far past the bound
		t.Fatal("askLeaders did not return past its bound: it waited on the deaf leader")
	}
	for range 4 {
		asked[<-askedCh]++
	}
	for b := int32(1); b <= 4; b++ {
		if asked[b] != 1 {
			t.Fatalf("broker %d asked %d times, want once: %v", b, asked[b], asked)
		}
	}

	a := got[groupKey{"t", 0}]
	if a.Err != "" || a.From != 1 || a.Epoch != 7 || len(a.Rows) != 3 {
		t.Fatalf("t/0: %+v", a)
	}
	r1, r2, r3 := a.Rows[0], a.Rows[1], a.Rows[2]
	if !r1.Self || r1.Lag != 0 || r2.Lag != 0 || r2.HeardAgoMs != 10 || r2.Behind ||
		r3.Lag != 30 || r3.HeardAgoMs != 8000 || r3.CaughtUpAgoMs != 8000 || !r3.Behind {
		t.Fatalf("t/0 rows: %+v", a.Rows)
	}
	if a := got[groupKey{"t", 1}]; !a.Unreachable || !strings.Contains(a.Err, "leader broker 2 unreachable: no answer within 200ms") {
		t.Fatalf("t/1 (deaf leader): %+v", a)
	}
	if a := got[groupKey{"t", 2}]; !a.Unreachable || !strings.Contains(a.Err, "connection refused") {
		t.Fatalf("t/2 (refused): %+v", a)
	}
	if a := got[groupKey{"t", 3}]; a.Unreachable || !strings.Contains(a.Err, "NOT_LEADER") {
		t.Fatalf("t/3 (moved): %+v", a)
	}
	if a := got[groupKey{"t", 4}]; !strings.Contains(a.Err, "did not answer for this group") {
		t.Fatalf("t/4 (left out): %+v", a)
	}

	// On the page: the unreachable leader and the member behind are
	// problems of their partitions.
	d := &raftData{Node: 9, Partitions: []raftPartitionRow{
		{Topic: "t", Partition: 0, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
		{Topic: "t", Partition: 1, Leader: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
	}}
	d.joinLocal(nil)
	d.joinQuorums(got)
	if p := strings.Join(partitionProblems(&d.Partitions[0]), "; "); p != "member 3 behind (30 entries, caught up 8.0 s ago)" {
		t.Fatalf("t/0 problems: %q", p)
	}
	if p := strings.Join(partitionProblems(&d.Partitions[1]), "; "); p != "leader 2 unreachable" {
		t.Fatalf("t/1 problems: %q", p)
	}
}
