package itest

// librdkafka's transactional producer and read_committed consumer
// (python3-confluent-kafka 1.7, librdkafka 2.0.2; issue 16): committed and
// aborted transactions over three partitions; the read_committed consumer
// must see exactly the committed records, the read_uncommitted one the
// aborted ones too.

import (
	"strings"
	"testing"
)

func TestTxnLibrdkafka(t *testing.T) {
	requirePython(t, "confluent_kafka")
	b := start(t)
	makeTopic(t, b.KafkaAddr, "rdk-txn", 3, nil)
	out := runPython(t, librdkafkaTxn, b.KafkaAddr)
	if !strings.Contains(out, "ok committed 60 uncommitted 120") {
		t.Fatalf("librdkafka script:\n%s", out)
	}
}

const librdkafkaTxn = `
import sys
from confluent_kafka import Producer, Consumer, TopicPartition, OFFSET_BEGINNING

servers = sys.argv[1]
p = Producer({"bootstrap.servers": servers, "transactional.id": "rdk-tx", "transaction.timeout.ms": 20000})
p.init_transactions(30)
committed = set()
for t in range(6):
    p.begin_transaction()
    vals = ["t%d-%d" % (t, i) for i in range(20)]
    for i, v in enumerate(vals):
        p.produce("rdk-txn", value=v.encode(), partition=i % 3)
    p.flush(30)
    if t % 2 == 0:
        p.commit_transaction(30)
        committed.update(vals)
    else:
        p.abort_transaction(30)

def read(isolation):
    c = Consumer({"bootstrap.servers": servers, "group.id": "rdk-" + isolation, "isolation.level": isolation,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition("rdk-txn", part, OFFSET_BEGINNING) for part in range(3)])
    got, idle = [], 0
    while idle < 10:
        m = c.poll(0.5)
        if m is None:
            idle += 1
            continue
        if m.error():
            sys.exit("consume %s: %s" % (isolation, m.error()))
        got.append(m.value().decode())
        idle = 0
    c.close()
    return got

rc = read("read_committed")
if sorted(rc) != sorted(committed):
    sys.exit("read_committed saw %d records (%d distinct), want the %d committed; extra %s missing %s" % (
        len(rc), len(set(rc)), len(committed), sorted(set(rc) - committed)[:5], sorted(committed - set(rc))[:5]))
ru = read("read_uncommitted")
print("ok committed %d uncommitted %d" % (len(rc), len(ru)))
`
