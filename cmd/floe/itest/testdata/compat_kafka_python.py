# kafka-python compatibility run: admin, produce with every codec, a group
# of three members that loses one. Prints one "ok ..." line per step; any
# failure exits non-zero with the reason.
import sys, threading, time
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic, ConfigResource, ConfigResourceType

addr, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]
deadline = time.time() + 120

def fail(msg):
    print("FAIL " + msg, flush=True)
    sys.exit(1)

admin = KafkaAdminClient(bootstrap_servers=addr, client_id="kp-admin", request_timeout_ms=30000)
admin.create_topics([NewTopic(topic, num_partitions=6, replication_factor=1, topic_configs={"retention.ms": "86400000"})])
if topic not in admin.list_topics():
    fail("created topic not listed")
conf = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
if "retention.ms" not in str(conf):
    fail("describe_configs lacks retention.ms: %s" % conf)
print("ok admin create/list/describe", flush=True)

want = set()
def produce(codec, n, tag):
    p = KafkaProducer(bootstrap_servers=addr, compression_type=codec, acks="all", linger_ms=5)
    futs = []
    for i in range(n):
        v = ("%s-%s-%d" % (tag, codec, i)).encode() * 3
        want.add(v)
        futs.append(p.send(topic, key=str(i).encode(), value=v))
    for f in futs:
        f.get(timeout=30)
    p.close()
for codec in [None, "gzip", "snappy", "lz4", "zstd"]:
    produce(codec, 100, "a")
print("ok produced %d records with every codec" % len(want), flush=True)

got, lock = {}, threading.Lock()
class Member(threading.Thread):
    def __init__(self, name):
        super().__init__(daemon=True)
        self.name, self.stop, self.assigned = name, False, set()
        self.c = KafkaConsumer(topic, bootstrap_servers=addr, group_id=group, client_id=name,
                               auto_offset_reset="earliest", enable_auto_commit=False,
                               session_timeout_ms=10000, heartbeat_interval_ms=500, max_poll_interval_ms=30000)
    def run(self):
        while not self.stop:
            recs = self.c.poll(timeout_ms=200)
            with lock:
                for tp, rs in recs.items():
                    for r in rs:
                        got.setdefault(r.value, 0)
                        got[r.value] += 1
                self.assigned = {tp.partition for tp in self.c.assignment()}
            if recs:
                self.c.commit()
        self.c.close()

def wait_all(what):
    while time.time() < deadline:
        with lock:
            missing = want - set(got)
        if not missing:
            return
        time.sleep(0.2)
    fail("%s: %d records never consumed" % (what, len(missing)))

members = [Member("m%d" % i) for i in range(3)]
for m in members:
    m.start()
wait_all("three members")
while time.time() < deadline:
    with lock:
        sets = [set(m.assigned) for m in members]
    if all(len(s) == 2 for s in sets) and set().union(*sets) == set(range(6)):
        break
    time.sleep(0.2)
else:
    fail("three members never shared six partitions two each: %s" % sets)
print("ok three members consumed every record, two partitions each", flush=True)

members[2].stop = True
members[2].join(30)
produce("gzip", 100, "b")
wait_all("after a member left")
while time.time() < deadline:
    with lock:
        sets = [set(m.assigned) for m in members[:2]]
    if set().union(*sets) == set(range(6)) and not (sets[0] & sets[1]):
        break
    time.sleep(0.2)
else:
    fail("two members never took over all six partitions: %s" % sets)
print("ok after a member left, two members own all six partitions", flush=True)
for m in members[:2]:
    m.stop = True
    m.join(30)

c = KafkaConsumer(bootstrap_servers=addr, group_id=group, enable_auto_commit=False)
tps = [TopicPartition(topic, p) for p in range(6)]
committed = sum(c.committed(tp) or 0 for tp in tps)
end = sum(c.end_offsets(tps).values())
c.close()
if committed != end or end != len(want):
    fail("committed %d, end offsets %d, produced %d" % (committed, end, len(want)))
groups = [g[0] for g in admin.list_consumer_groups()]
if group not in groups:
    fail("list_consumer_groups lacks %s: %s" % (group, groups))
admin.delete_topics([topic])
print("ok committed offsets reach the end; group listed; topic deleted", flush=True)
