package itest

// Exactly-once with sarama (issue 16): sarama's transactional producer
// (Producer.Transaction.ID) commits and aborts transactions over three
// partitions, one of them holding the consumer group's offsets sent to the
// transaction (AddMessageToTxn). Read read_committed, the topic holds
// exactly the committed records; read_uncommitted, all of them; the group's
// committed offset is the one the last committed transaction sent.

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestTxnSarama(t *testing.T) {
	b := start(t)
	const topic, group = "txn-sarama", "sarama-g"
	makeTopic(t, b.KafkaAddr, topic, 3, nil)
	makeTopic(t, b.KafkaAddr, "txn-sarama-in", 1, nil)

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_0_0_0
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Transaction.ID = "sarama-tx"
	cfg.Producer.Transaction.Timeout = 20 * time.Second
	cfg.Net.MaxOpenRequests = 1
	cfg.Metadata.RefreshFrequency = time.Second
	p, err := sarama.NewSyncProducer([]string{b.KafkaAddr}, cfg)
	if err != nil {
		t.Fatalf("sarama transactional producer: %v", err)
	}
	defer p.Close()
	if !p.IsTransactional() {
		t.Fatal("sarama producer is not transactional")
	}

	const perTxn, txns = 6, 6
	committed := 0
	for i := range txns {
		if err := p.BeginTxn(); err != nil {
			t.Fatalf("begin %d: %v", i, err)
		}
		var msgs []*sarama.ProducerMessage
		for k := range perTxn {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: int32(k % 3), Value: sarama.StringEncoder(fmt.Sprintf("t%d-%d", i, k))})
		}
		if err := p.SendMessages(msgs); err != nil {
			t.Fatalf("send in transaction %d: %v", i, err)
		}
		// The group's offset of the input partition goes with the transaction.
		offsets := map[string][]*sarama.PartitionOffsetMetadata{"txn-sarama-in": {{Partition: 0, Offset: int64(i + 1)}}}
		if err := p.AddOffsetsToTxn(offsets, group); err != nil {
			t.Fatalf("offsets to transaction %d: %v", i, err)
		}
		if i%2 == 1 {
			if err := p.AbortTxn(); err != nil {
				t.Fatalf("abort %d: %v", i, err)
			}
			continue
		}
		if err := p.CommitTxn(); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		committed++
	}

	read := func(level kgo.IsolationLevel, want int) map[string]int {
		got := map[string]int{}
		for _, r := range consumeAll(t, b.KafkaAddr, topic, level, want) {
			got[string(r.Value)]++
		}
		return got
	}
	rc := read(kgo.ReadCommitted(), committed*perTxn)
	for i := range txns {
		for k := range perTxn {
			v, want := fmt.Sprintf("t%d-%d", i, k), 0
			if i%2 == 0 {
				want = 1
			}
			if rc[v] != want {
				t.Fatalf("read_committed: %s seen %d times, want %d (transaction %d)", v, rc[v], want, i)
			}
		}
	}
	if len(rc) != committed*perTxn {
		t.Fatalf("read_committed: %d distinct values, want %d", len(rc), committed*perTxn)
	}
	if ru := read(kgo.ReadUncommitted(), txns*perTxn); len(ru) != txns*perTxn {
		t.Fatalf("read_uncommitted: %d distinct values, want %d", len(ru), txns*perTxn)
	}
	// The last committed transaction (4) sent offset 5; the aborted one
	// after it (5, offset 6) must not count.
	adm := kadm.NewClient(kgoClient(t, b.KafkaAddr))
	offs, err := adm.FetchOffsets(ctxFor(t, opWaitMax), group)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	if o, ok := offs.Lookup("txn-sarama-in", 0); !ok || o.At != 5 {
		t.Fatalf("group %s offset %+v (found %v), want 5 from the last committed transaction", group, o, ok)
	}
}
