package txn

// The records of __transaction_state, in Kafka's formats so Kafka tooling
// can read the topic: key TxnMetadataKey version 0 (the transactional id),
// value TxnMetadataValue version 0 (producer id and epoch, timeout, state,
// partitions, timestamps). A null value is a tombstone. Compaction keeps
// the last record per key, so replaying the log in order and keeping the
// last value per key rebuilds the coordinator's state.

import (
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func metaKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.TransactionalID = id
	return k.AppendTo(nil)
}

func metaValue(m txnMeta) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = m.pid, m.epoch, m.timeoutMs
	v.State = kmsg.TransactionState(m.state)
	v.LastUpdateTimestamp, v.StartTimestamp = m.updateMs, m.startMs
	for _, tp := range m.partitions {
		if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != tp.Topic {
			v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
		}
		t := &v.Topics[len(v.Topics)-1]
		t.Partitions = append(t.Partitions, tp.Partition)
	}
	return v.AppendTo(nil)
}

// ErrUnknownRecord is returned by Replay for a record it does not know (a
// newer key version); the record is skipped.
var ErrUnknownRecord = errors.New("txn: unknown __transaction_state record")

// Replay applies one committed record of the partition, in log order,
// before Start. A record that does not decode changes nothing and returns
// an error (the caller logs it and goes on).
func (c *Coordinator) Replay(key, value []byte) error {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("txn: record key: %w", err)
	}
	if k.Version != 0 {
		return fmt.Errorf("%w: key version %d", ErrUnknownRecord, k.Version)
	}
	if value == nil {
		delete(c.txns, k.TransactionalID)
		return nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("txn: record value: %w", err)
	}
	st := State(v.State)
	if st < Empty || st > PrepareEpochFence {
		return fmt.Errorf("txn: record of %q: state %d", k.TransactionalID, v.State)
	}
	if st == PrepareEpochFence {
		st = PrepareAbort // Kafka never writes it; treat as the abort it leads to
	}
	m := &txnMeta{
		id: k.TransactionalID, pid: v.ProducerID, epoch: v.ProducerEpoch, timeoutMs: v.TimeoutMillis,
		state: st, startMs: v.StartTimestamp, updateMs: v.LastUpdateTimestamp,
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.partitions = append(m.partitions, TopicPartition{t.Topic, p})
		}
	}
	sort.Slice(m.partitions, func(i, j int) bool { return lessTP(m.partitions[i], m.partitions[j]) })
	if st == Dead {
		delete(c.txns, m.id)
		return nil
	}
	c.txns[m.id] = m
	return nil
}

// Description is one transactional id as DescribeTransactions shows it.
type Description struct {
	TransactionalID string
	State           State
	ProducerID      int64
	ProducerEpoch   int16
	TimeoutMs       int32
	StartMs         int64 // -1 when no transaction is open
	Partitions      []TopicPartition
}

// Describe returns the committed state of a transactional id.
func (c *Coordinator) Describe(id string) (Description, bool) {
	m := c.txns[id]
	if m == nil {
		return Description{}, false
	}
	start := m.startMs
	if m.state != Ongoing && !m.state.decided() {
		start = -1
	}
	return Description{
		TransactionalID: id, State: m.state, ProducerID: m.pid, ProducerEpoch: m.epoch,
		TimeoutMs: m.timeoutMs, StartMs: start, Partitions: append([]TopicPartition(nil), m.partitions...),
	}, true
}

// List returns the transactional ids, sorted, that are in one of states
// (all if empty) and held by one of pids (all if empty).
func (c *Coordinator) List(states []State, pids []int64) []Description {
	var out []Description
	for _, id := range c.ids() {
		m := c.txns[id]
		if len(states) > 0 && !hasState(states, m.state) || len(pids) > 0 && !hasPID(pids, m.pid) {
			continue
		}
		d, _ := c.Describe(id)
		out = append(out, d)
	}
	return out
}

func hasState(s []State, x State) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func hasPID(s []int64, x int64) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
