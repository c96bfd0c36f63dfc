package controller

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"pgregory.net/rapid"
)

// fataler is what the helpers need of *testing.T, *testing.F and *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func apply(t fataler, s *State, c *Command) Result {
	t.Helper()
	return s.Apply(throughLog(t, c))
}

func mustApply(t fataler, s *State, c *Command) Result {
	t.Helper()
	res := apply(t, s, c)
	if res.Err != nil {
		t.Fatalf("apply %s: %v", c.Encode(), res.Err)
	}
	return res
}

func i32(v int32) *int32     { return &v }
func str(v string) *string   { return &v }
func ids(v ...int32) []int32 { return v }

// populated returns a state with brokers 1-3 on racks r1, r2, r1 and broker
// 4 decommissioned, topic "a" with two partitions and topic "b" with one.
func populated(t fataler) *State {
	s := NewState("cluster-x")
	for id, rack := range map[int32]string{1: "r1", 2: "r2", 3: "r1", 4: "r2"} {
		mustApply(t, s, &Command{RegisterBroker: &Broker{ID: id, KafkaHost: "h", KafkaPort: 9000 + id, Rack: rack}})
	}
	mustApply(t, s, &Command{Decommission: i32(4)})
	mustApply(t, s, &Command{CreateTopic: &Topic{Name: "a", Configs: map[string]string{"retention.ms": "5"},
		Partitions: []Partition{{Index: 0, Replicas: ids(1, 2)}, {Index: 1, Replicas: ids(2, 3)}}}})
	mustApply(t, s, &Command{CreateTopic: &Topic{Name: "b", Partitions: []Partition{{Index: 0, Replicas: ids(3)}}}})
	return s
}

func TestApplyScenario(t *testing.T) {
	s := populated(t)

	// Brokers: re-registering keeps the decommission mark.
	mustApply(t, s, &Command{RegisterBroker: &Broker{ID: 4, KafkaHost: "new", KafkaPort: 1}})
	if b := s.Brokers[4]; !b.Decommissioned || b.KafkaHost != "new" {
		t.Fatalf("re-registered broker 4: %+v", *b)
	}

	// Topics: groups are handed out by Apply in order, leaders start
	// unknown, the id is derived and stable.
	a := s.Topics["a"]
	if a.Partitions[0].Group != FirstPartitionGroup || a.Partitions[1].Group != FirstPartitionGroup+1 ||
		s.Topics["b"].Partitions[0].Group != FirstPartitionGroup+2 || s.NextGroup != FirstPartitionGroup+3 {
		t.Fatalf("groups: a %d %d, b %d, next %d", a.Partitions[0].Group, a.Partitions[1].Group, s.Topics["b"].Partitions[0].Group, s.NextGroup)
	}
	for _, p := range a.Partitions {
		if p.Leader != -1 || p.LeaderEpoch != -1 {
			t.Fatalf("new partition leader %d epoch %d, want -1 -1", p.Leader, p.LeaderEpoch)
		}
	}
	if a.ID == ([16]byte{}) || a.ID == s.Topics["b"].ID {
		t.Fatalf("topic ids %x and %x", a.ID, s.Topics["b"].ID)
	}
	if again := populated(t); again.Topics["a"].ID != a.ID {
		t.Fatalf("topic id not derived deterministically")
	}
	if tp, p, ok := s.PartitionByGroup(FirstPartitionGroup + 1); !ok || tp.Name != "a" || p.Index != 1 {
		t.Fatalf("PartitionByGroup(%d) = %v %v %v", FirstPartitionGroup+1, tp, p, ok)
	}

	// More partitions.
	mustApply(t, s, &Command{CreatePartitions: &CreatePartitions{Topic: "a", Partitions: []Partition{{Index: 2, Replicas: ids(3, 1)}}}})
	if n := len(s.Topics["a"].Partitions); n != 3 || s.Topics["a"].Partitions[2].Group != FirstPartitionGroup+3 {
		t.Fatalf("after CreatePartitions: %d partitions, group %d", n, s.Topics["a"].Partitions[2].Group)
	}
	if _, p, ok := s.PartitionByGroup(FirstPartitionGroup + 3); !ok || p.Index != 2 {
		t.Fatalf("new partition not indexed by group")
	}

	// Configs: set, delete, replace; topic and broker-wide.
	mustApply(t, s, &Command{AlterConfigs: &AlterConfigs{Topic: "a", Set: map[string]string{"segment.bytes": "100"}, Delete: []string{"retention.ms"}}})
	if c := s.Topics["a"].Configs; !reflect.DeepEqual(c, map[string]string{"segment.bytes": "100"}) {
		t.Fatalf("configs after set+delete: %v", c)
	}
	mustApply(t, s, &Command{AlterConfigs: &AlterConfigs{Topic: "a", Set: map[string]string{"x": "1"}, Replace: true}})
	if c := s.Topics["a"].Configs; !reflect.DeepEqual(c, map[string]string{"x": "1"}) {
		t.Fatalf("configs after replace: %v", c)
	}
	mustApply(t, s, &Command{AlterConfigs: &AlterConfigs{Set: map[string]string{"log.retention.ms": "9"}}})
	if c := s.BrokerConfigs; !reflect.DeepEqual(c, map[string]string{"log.retention.ms": "9"}) {
		t.Fatalf("broker configs: %v", c)
	}

	// Leaders: a newer or equal epoch wins, an older one is ignored, an
	// unknown group is skipped.
	g := FirstPartitionGroup
	mustApply(t, s, &Command{ReportLeaders: []LeaderReport{{Group: g, Leader: 2, Epoch: 5}, {Group: 999, Leader: 1, Epoch: 9}}})
	mustApply(t, s, &Command{ReportLeaders: []LeaderReport{{Group: g, Leader: 1, Epoch: 4}}})
	if p := s.Topics["a"].Partitions[0]; p.Leader != 2 || p.LeaderEpoch != 5 {
		t.Fatalf("leader %d epoch %d, want 2 5", p.Leader, p.LeaderEpoch)
	}

	// Producer id blocks never overlap.
	r1 := mustApply(t, s, &Command{AllocProducerIDs: i32(1)})
	r2 := mustApply(t, s, &Command{AllocProducerIDs: i32(2)})
	if r2.ProducerIDBase != r1.ProducerIDBase+ProducerIDBlock || s.NextProducerID != r2.ProducerIDBase+ProducerIDBlock {
		t.Fatalf("producer id blocks at %d and %d, next %d", r1.ProducerIDBase, r2.ProducerIDBase, s.NextProducerID)
	}

	// Reassignment: to the same set is a no-op, to another starts it, an
	// empty target cancels it.
	mustApply(t, s, &Command{Reassign: &Reassign{Topic: "a", Partition: 0, Target: ids(2, 1)}})
	if p := s.Topics["a"].Partitions[0]; p.Target != nil || p.Moved {
		t.Fatalf("reassign to the same set: target %v moved %v", p.Target, p.Moved)
	}
	mustApply(t, s, &Command{Reassign: &Reassign{Topic: "a", Partition: 0, Target: ids(3, 2)}})
	if p := s.Topics["a"].Partitions[0]; !reflect.DeepEqual(p.Target, ids(3, 2)) || !p.Moved {
		t.Fatalf("reassign: target %v moved %v", p.Target, p.Moved)
	}
	mustApply(t, s, &Command{Reassign: &Reassign{Topic: "a", Partition: 0}})
	if p := s.Topics["a"].Partitions[0]; p.Target != nil {
		t.Fatalf("cancel left target %v", p.Target)
	}

	// Membership steps reported by the partition leader; reaching the
	// target ends the reassignment.
	mustApply(t, s, &Command{Reassign: &Reassign{Topic: "a", Partition: 1, Target: ids(1, 3)}})
	mustApply(t, s, &Command{SetReplicas: &SetReplicas{Group: g + 1, Replicas: ids(1, 2, 3)}})
	if p := s.Topics["a"].Partitions[1]; !reflect.DeepEqual(p.Replicas, ids(1, 2, 3)) || p.Target == nil {
		t.Fatalf("intermediate step: replicas %v target %v", p.Replicas, p.Target)
	}
	mustApply(t, s, &Command{SetReplicas: &SetReplicas{Group: g + 1, Replicas: ids(3, 1)}})
	if p := s.Topics["a"].Partitions[1]; !reflect.DeepEqual(p.Replicas, ids(3, 1)) || p.Target != nil || !p.Moved {
		t.Fatalf("final step: replicas %v target %v moved %v", p.Replicas, p.Target, p.Moved)
	}

	// Deleting a topic forgets its groups; reports for them are ignored.
	mustApply(t, s, &Command{DeleteTopic: str("a")})
	if _, ok := s.Topics["a"]; ok {
		t.Fatalf("topic a still there")
	}
	for gg := g; gg < g+4; gg++ {
		if gg == g+2 {
			continue // topic b
		}
		if _, _, ok := s.PartitionByGroup(gg); ok {
			t.Fatalf("group %d of a deleted topic still resolves", gg)
		}
	}
	before := s.Snapshot()
	mustApply(t, s, &Command{ReportLeaders: []LeaderReport{{Group: g, Leader: 1, Epoch: 100}}})
	if !bytes.Equal(before, s.Snapshot()) {
		t.Fatalf("a report for a deleted group changed the state")
	}
	// A recreated topic gets new groups.
	mustApply(t, s, &Command{CreateTopic: &Topic{Name: "a", Partitions: []Partition{{Index: 0, Replicas: ids(1)}}}})
	if p := s.Topics["a"].Partitions[0]; p.Group != g+4 {
		t.Fatalf("recreated topic group %d, want %d", p.Group, g+4)
	}
}

// Every invalid command returns its error and leaves the state byte for
// byte as it was.
func TestApplyInvalidChangesNothing(t *testing.T) {
	long := string(bytes.Repeat([]byte{'x'}, 250))
	tests := []struct {
		name string
		cmd  *Command
		want error
	}{
		{"empty command", &Command{}, kerr.InvalidRequest},
		{"broker id 0", &Command{RegisterBroker: &Broker{ID: 0}}, kerr.InvalidRequest},
		{"broker id negative", &Command{RegisterBroker: &Broker{ID: -3}}, kerr.InvalidRequest},
		{"decommission unknown", &Command{Decommission: i32(9)}, kerr.BrokerNotAvailable},
		{"topic name empty", &Command{CreateTopic: &Topic{Name: "", Partitions: []Partition{{Index: 0, Replicas: ids(1)}}}}, kerr.InvalidTopicException},
		{"topic name dot", &Command{CreateTopic: &Topic{Name: ".", Partitions: []Partition{{Index: 0, Replicas: ids(1)}}}}, kerr.InvalidTopicException},
		{"topic name dotdot", &Command{CreateTopic: &Topic{Name: "..", Partitions: []Partition{{Index: 0, Replicas: ids(1)}}}}, kerr.InvalidTopicException},
		{"topic name too long", &Command{CreateTopic: &Topic{Name: long, Partitions: []Partition{{Index: 0, Replicas: ids(1)}}}}, kerr.InvalidTopicException},
		{"topic name bad char", &Command{CreateTopic: &Topic{Name: "a/b", Partitions: []Partition{{Index: 0, Replicas: ids(1)}}}}, kerr.InvalidTopicException},
		{"topic exists", &Command{CreateTopic: &Topic{Name: "a", Partitions: []Partition{{Index: 0, Replicas: ids(1)}}}}, kerr.TopicAlreadyExists},
		{"topic without partitions", &Command{CreateTopic: &Topic{Name: "c"}}, kerr.InvalidPartitions},
		{"topic partition index not from 0", &Command{CreateTopic: &Topic{Name: "c", Partitions: []Partition{{Index: 1, Replicas: ids(1)}}}}, kerr.InvalidReplicaAssignment},
		{"topic partition index gap", &Command{CreateTopic: &Topic{Name: "c", Partitions: []Partition{{Index: 0, Replicas: ids(1)}, {Index: 2, Replicas: ids(1)}}}}, kerr.InvalidReplicaAssignment},
		{"topic partition without replicas", &Command{CreateTopic: &Topic{Name: "c", Partitions: []Partition{{Index: 0, Replicas: ids(1)}, {Index: 1}}}}, kerr.InvalidReplicaAssignment},
		{"topic replica unknown", &Command{CreateTopic: &Topic{Name: "c", Partitions: []Partition{{Index: 0, Replicas: ids(1, 7)}}}}, kerr.InvalidReplicaAssignment},
		{"topic replica twice", &Command{CreateTopic: &Topic{Name: "c", Partitions: []Partition{{Index: 0, Replicas: ids(2, 2)}}}}, kerr.InvalidReplicaAssignment},
		{"delete unknown topic", &Command{DeleteTopic: str("zzz")}, kerr.UnknownTopicOrPartition},
		{"voter refusal without request id", &Command{RefuseVoterChange: &VoterRefusal{Code: 7}}, kerr.InvalidRequest},
		{"voter refusal without error code", &Command{RefuseVoterChange: &VoterRefusal{ReqID: "v1"}}, kerr.InvalidRequest},
		{"partitions of unknown topic", &Command{CreatePartitions: &CreatePartitions{Topic: "zzz", Partitions: []Partition{{Index: 0, Replicas: ids(1)}}}}, kerr.UnknownTopicOrPartition},
		{"partitions at wrong index", &Command{CreatePartitions: &CreatePartitions{Topic: "a", Partitions: []Partition{{Index: 1, Replicas: ids(1)}}}}, kerr.InvalidReplicaAssignment},
		{"partitions second bad", &Command{CreatePartitions: &CreatePartitions{Topic: "a", Partitions: []Partition{{Index: 2, Replicas: ids(1)}, {Index: 3, Replicas: ids(8)}}}}, kerr.InvalidReplicaAssignment},
		{"configs of unknown topic", &Command{AlterConfigs: &AlterConfigs{Topic: "zzz", Set: map[string]string{"x": "1"}, Replace: true}}, kerr.UnknownTopicOrPartition},
		{"reassign unknown topic", &Command{Reassign: &Reassign{Topic: "zzz", Partition: 0, Target: ids(1)}}, kerr.UnknownTopicOrPartition},
		{"reassign partition past end", &Command{Reassign: &Reassign{Topic: "a", Partition: 2, Target: ids(1)}}, kerr.UnknownTopicOrPartition},
		{"reassign negative partition", &Command{Reassign: &Reassign{Topic: "a", Partition: -1, Target: ids(1)}}, kerr.UnknownTopicOrPartition},
		{"cancel without reassignment", &Command{Reassign: &Reassign{Topic: "a", Partition: 0}}, kerr.NoReassignmentInProgress},
		{"reassign to unknown broker", &Command{Reassign: &Reassign{Topic: "a", Partition: 0, Target: ids(1, 9)}}, kerr.InvalidReplicaAssignment},
		{"reassign to a broker twice", &Command{Reassign: &Reassign{Topic: "a", Partition: 0, Target: ids(3, 3)}}, kerr.InvalidReplicaAssignment},
		{"set replicas of unknown group", &Command{SetReplicas: &SetReplicas{Group: 999, Replicas: ids(1)}}, kerr.UnknownTopicOrPartition},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := populated(t)
			before := s.Snapshot()
			res := apply(t, s, tc.cmd)
			if !errors.Is(res.Err, tc.want) {
				t.Fatalf("err = %v, want %v", res.Err, tc.want)
			}
			if after := s.Snapshot(); !bytes.Equal(before, after) {
				t.Fatalf("state changed:\nbefore %s\nafter  %s", before, after)
			}
			// The derived group index is unchanged too: the next topic
			// gets the next group, and every old group still resolves.
			for g := FirstPartitionGroup; g < s.NextGroup; g++ {
				if _, _, ok := s.PartitionByGroup(g); !ok {
					t.Fatalf("group %d lost", g)
				}
			}
		})
	}
}

// A command Apply refuses changes nothing, whatever the state and command.
func TestFailedApplyChangesNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := NewState("c")
		for _, c := range genCommands(t) {
			before := s.Snapshot()
			if res := s.Apply(throughLog(t, c)); res.Err != nil {
				if after := s.Snapshot(); !bytes.Equal(before, after) {
					t.Fatalf("%s failed with %v but changed the state:\nbefore %s\nafter  %s", c.Encode(), res.Err, before, after)
				}
			}
		}
	})
}

// The same commands in the same order give the same bytes, on a state
// restored from a snapshot taken at any point as on the original: the
// derived index survives Restore.
func TestDeterministicAndRestorable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cs := genCommands(t)
		cut := rapid.IntRange(0, len(cs)).Draw(t, "cut")
		a, b := NewState("c"), NewState("c")
		var restored *State
		for i, c := range cs {
			if i == cut {
				var err error
				if restored, err = Restore(a.Snapshot()); err != nil {
					t.Fatalf("restore: %v", err)
				}
				if !bytes.Equal(restored.Snapshot(), a.Snapshot()) {
					t.Fatalf("restore changed the bytes")
				}
			}
			ra := a.Apply(throughLog(t, c))
			rb := b.Apply(throughLog(t, c))
			if resultString(ra) != resultString(rb) {
				t.Fatalf("command %d: results %s and %s", i, resultString(ra), resultString(rb))
			}
			if restored != nil {
				if rr := restored.Apply(throughLog(t, c)); resultString(rr) != resultString(ra) {
					t.Fatalf("command %d on the restored state: %s, original %s", i, resultString(rr), resultString(ra))
				}
			}
			if !bytes.Equal(a.Snapshot(), b.Snapshot()) {
				t.Fatalf("command %d: same commands, different states", i)
			}
		}
		if restored != nil && !bytes.Equal(restored.Snapshot(), a.Snapshot()) {
			t.Fatalf("restored state diverged:\n%s\n%s", restored.Snapshot(), a.Snapshot())
		}
		// Clone is a deep copy.
		c := a.Clone()
		for _, tp := range c.Topics {
			tp.Partitions = append(tp.Partitions, Partition{Index: 99})
			tp.Configs = map[string]string{"changed": "1"}
		}
		for _, br := range c.Brokers {
			br.Rack = "changed"
		}
		if !bytes.Equal(a.Snapshot(), b.Snapshot()) {
			t.Fatalf("changing a clone changed the original")
		}
	})
}

func TestRestoreEmpty(t *testing.T) {
	s, err := Restore(nil)
	if err != nil || len(s.Brokers) != 0 || len(s.Topics) != 0 || s.NextGroup != FirstPartitionGroup {
		t.Fatalf("Restore(nil) = %+v, %v", s, err)
	}
	for _, bad := range []string{"{", "[]", `{"brokers": 5}`, `{"next_group": "x"}`} {
		if _, err := Restore([]byte(bad)); err == nil {
			t.Errorf("Restore(%s) accepted", bad)
		}
	}
	// A state with nulls for its maps is usable.
	s, err = Restore([]byte(`{"cluster_id":"c","brokers":null,"topics":null,"next_group":16}`))
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, &Command{RegisterBroker: &Broker{ID: 1}})
	mustApply(t, s, &Command{CreateTopic: &Topic{Name: "t", Partitions: []Partition{{Index: 0, Replicas: ids(1)}}}})
}

// Snapshots arrive from the log and from peers (MsgSnap): malformed ones
// must be refused, never crash the broker (preamble: bad input never
// panics).
func TestRestoreMalformedDoesNotPanic(t *testing.T) {
	for _, in := range []string{`{"topics":{"a":null}}`, `{"brokers":{"1":null}}`} {
		t.Run(in, func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("panic: %v", p)
				}
			}()
			s, err := Restore([]byte(in))
			if err != nil {
				return
			}
			// Accepted: then it must be usable.
			s.Apply(&Command{RegisterBroker: &Broker{ID: 2}})
			_, _ = s.Place(1, 1, 0, nil)
		})
	}
}

func TestDecodeCommandRejectsGarbage(t *testing.T) {
	for _, bad := range []string{"", "{", "[1]", `{"decommission":"x"}`, `{"create_topic":5}`} {
		if _, err := DecodeCommand([]byte(bad)); err == nil {
			t.Errorf("DecodeCommand(%q) accepted", bad)
		}
	}
}

// FuzzApplyDecoded: whatever a log entry holds, decoding and applying it
// never panics, and a refused command changes nothing.
func FuzzApplyDecoded(f *testing.F) {
	f.Add([]byte(`{"create_topic":{"name":"c","partitions":[{"index":0,"replicas":[1,2]}]}}`))
	f.Add([]byte(`{"create_partitions":{"topic":"a","partitions":[{"index":2,"replicas":[3]}]}}`))
	f.Add([]byte(`{"report_leaders":[{"group":16,"leader":2,"epoch":3}]}`))
	f.Add([]byte(`{"reassign":{"topic":"a","partition":0,"target":[3,1]}}`))
	f.Add([]byte(`{"set_replicas":{"group":17,"replicas":[1]}}`))
	f.Add([]byte(`{"alter_configs":{"set":{"a":"b"},"replace":true}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCommand(b)
		if err != nil {
			return
		}
		s := populated(t)
		before := s.Snapshot()
		if res := s.Apply(c); res.Err != nil && !bytes.Equal(before, s.Snapshot()) {
			t.Fatalf("refused (%v) but changed the state", res.Err)
		}
		if _, err := Restore(s.Snapshot()); err != nil {
			t.Fatalf("state after %s does not restore: %v", b, err)
		}
	})
}

func TestValidateTopicName(t *testing.T) {
	for _, ok := range []string{"a", "A-b_c.9", string(bytes.Repeat([]byte{'z'}, 249)), "..."} {
		if err := ValidateTopicName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a b", "ä", "a/b", "a\x00", string(bytes.Repeat([]byte{'z'}, 250))} {
		if err := ValidateTopicName(bad); !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("%q: %v, want INVALID_TOPIC_EXCEPTION", bad, err)
		}
	}
}

func ExampleState_Apply() {
	s := NewState("demo")
	s.Apply(&Command{RegisterBroker: &Broker{ID: 1}})
	res := s.Apply(&Command{CreateTopic: &Topic{Name: "t", Partitions: []Partition{{Index: 0, Replicas: []int32{1}}}}})
	_, p, _ := s.PartitionByGroup(FirstPartitionGroup)
	fmt.Println(res.Err, p.Index, p.Replicas)
	// Output: <nil> 0 [1]
}

// A refused voter change is kept, first refusal standing, through a
// snapshot, and only the latest VoterRefusalsKept are.
func TestVoterRefusalsKept(t *testing.T) {
	s := NewState("c")
	for i := range VoterRefusalsKept + 2 {
		if res := s.Apply(&Command{RefuseVoterChange: &VoterRefusal{ReqID: fmt.Sprintf("v%d", i), Code: 7, Msg: "first"}}); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	s.Apply(&Command{RefuseVoterChange: &VoterRefusal{ReqID: "v5", Code: 8, Msg: "second"}})
	r, err := Restore(s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.VoterRefusal("v1"); ok {
		t.Fatal("the oldest refusals are kept past VoterRefusalsKept")
	}
	if v, ok := r.VoterRefusal("v5"); !ok || v.Code != 7 || v.Msg != "first" {
		t.Fatalf("refusal v5 after a snapshot: %+v %v, want the first refusal", v, ok)
	}
	if n := len(r.VoterRefusals); n != VoterRefusalsKept {
		t.Fatalf("%d refusals kept, want %d", n, VoterRefusalsKept)
	}
}
