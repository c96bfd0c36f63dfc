package txn

import (
	"sort"

	"github.com/floe-broker/floe/node/group"
)

// StateTopic is the internal topic holding transaction metadata.
const StateTopic = "__transaction_state"

// PartitionFor returns the partition of __transaction_state (of n) that
// holds a transactional id: Kafka's hash, the one consumer groups use.
func PartitionFor(transactionalID string, n int32) int32 {
	return group.PartitionFor(transactionalID, n)
}

// State is a transaction's state, numbered as Kafka numbers it in
// __transaction_state records.
type State int8

const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
	PrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// ParseState returns the state of a name as String writes it (the names
// ListTransactions filters by).
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// validFrom lists, per state, the states it may be entered from (Kafka's
// TransactionState.validPreviousStates, without the TV2 additions).
var validFrom = map[State][]State{
	Empty:          {Empty, CompleteCommit, CompleteAbort},
	Ongoing:        {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit:  {Ongoing},
	PrepareAbort:   {Ongoing, PrepareEpochFence},
	CompleteCommit: {PrepareCommit},
	CompleteAbort:  {PrepareAbort},
}

// canMove reports whether a transaction may go from one state to another.
func canMove(from, to State) bool {
	for _, s := range validFrom[to] {
		if s == from {
			return true
		}
	}
	return false
}

// decided reports whether s is a Prepare state: the outcome is durable and
// the markers are (being) sent.
func (s State) decided() bool { return s == PrepareCommit || s == PrepareAbort }

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func lessTP(a, b TopicPartition) bool {
	if a.Topic != b.Topic {
		return a.Topic < b.Topic
	}
	return a.Partition < b.Partition
}

// unionTPs returns the sorted union of a (sorted) and b, and whether it
// adds anything to a.
func unionTPs(a, b []TopicPartition) ([]TopicPartition, bool) {
	out := append([]TopicPartition(nil), a...)
	grew := false
	for _, tp := range b {
		if !containsTP(out, tp) {
			out = append(out, tp)
			grew = true
		}
	}
	sort.Slice(out, func(i, j int) bool { return lessTP(out[i], out[j]) })
	return out, grew
}

func containsTP(s []TopicPartition, tp TopicPartition) bool {
	for _, x := range s {
		if x == tp {
			return true
		}
	}
	return false
}
