package share

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestGroupJoinHeartbeatLeaveExpire(t *testing.T) {
	g := NewGroup("g")
	cfg := GroupConfig{SessionTimeout: 45 * time.Second, MaxSize: 2}
	parts := func(topic string) []int32 {
		if topic == "t" {
			return []int32{0, 1}
		}
		return nil
	}
	ea, asg, err := g.Heartbeat(0, cfg, Heartbeat{MemberID: "a", Topics: []string{"t", "missing"}}, parts)
	if err != nil || !reflect.DeepEqual(asg, map[string][]int32{"t": {0, 1}}) {
		t.Fatalf("join a: %v %v", asg, err)
	}
	eb, asgB, err := g.Heartbeat(0, cfg, Heartbeat{MemberID: "b", Topics: []string{"t"}}, parts)
	if err != nil || !reflect.DeepEqual(asgB, asg) || eb <= ea {
		t.Fatalf("join b: epoch %d after %d, %v %v", eb, ea, asgB, err)
	}
	// Both consumers hold both partitions: many consumers per partition.
	if _, _, err := g.Heartbeat(0, cfg, Heartbeat{MemberID: "c", Topics: []string{"t"}}, parts); !errors.Is(err, ErrGroupFull) {
		t.Fatalf("third member: %v", err)
	}
	if _, _, err := g.Heartbeat(time.Second, cfg, Heartbeat{MemberID: "a", MemberEpoch: ea + 7}, parts); !errors.Is(err, ErrFencedEpoch) {
		t.Fatalf("stale epoch: %v", err)
	}
	if e, asg, err := g.Heartbeat(time.Second, cfg, Heartbeat{MemberID: "a", MemberEpoch: ea}, parts); err != nil || asg != nil || e != ea {
		t.Fatalf("steady heartbeat: %d %v %v", e, asg, err)
	}
	if _, _, err := g.Heartbeat(time.Second, cfg, Heartbeat{MemberID: "zz", MemberEpoch: 3}, parts); !errors.Is(err, ErrUnknownMember) {
		t.Fatalf("unknown member: %v", err)
	}
	if gone := g.Expire(45500*time.Millisecond, cfg); !reflect.DeepEqual(gone, []string{"b"}) {
		t.Fatalf("expired %v", gone)
	}
	if e, _, err := g.Heartbeat(47*time.Second, cfg, Heartbeat{MemberID: "a", MemberEpoch: -1}, parts); err != nil || e != -1 || g.Has("a") {
		t.Fatalf("leave: %d %v", e, err)
	}
	if _, _, err := g.Heartbeat(0, cfg, Heartbeat{MemberID: "", Topics: []string{"t"}}, parts); !errors.Is(err, ErrBadHeartbeat) {
		t.Fatalf("empty member id: %v", err)
	}
}
