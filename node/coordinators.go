package node

// Consumer groups on the node: one group.Coordinator per partition of
// __consumer_offsets that this broker leads.
//
// The coordinator of a group is the leader of partition
// PartitionFor(group, N) of __consumer_offsets (Kafka's hash, so tools
// agree). The topic (internal, compacted, N = Config.OffsetsTopicPartitions,
// the default replication factor) is created through the controller on the
// first FindCoordinator. When a local replica of one of its partitions
// becomes a ready leader (it has committed an entry of its own term, so its
// high watermark covers everything earlier leaders committed), the
// coordinator is rebuilt by replaying the partition's committed records;
// until then group requests get COORDINATOR_LOAD_IN_PROGRESS. When the
// replica stops leading (or changes term), the coordinator is closed: its
// parked requests get NOT_COORDINATOR, and writes in flight fail through
// the partition's own waiters. Requests for groups of partitions led
// elsewhere get NOT_COORDINATOR.
//
// Hooks the rest of the node calls: syncCoordinators after every apply and
// on every tick (reconciles coordinators with leadership), GroupLags for
// metrics.

import (
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/group"
	"github.com/floe-broker/floe/node/partition"
	"github.com/floe-broker/floe/node/records"
	"github.com/floe-broker/floe/node/share"
)

// groupCoordinators is the reactor's consumer-group state.
//
// Invariant: every shard's coordinator is open and its partition was a
// ready leader in shard.term when last reconciled.
type groupCoordinators struct {
	shardSet[*group.Coordinator]      // by Raft group of the offsets partition (shards.go)
	creating                     bool // a CreateTopic for __consumer_offsets is in flight
}

// groupHooks build a group coordinator by replaying its partition and
// close it.
func (r *Reactor) groupHooks() shardHooks[*group.Coordinator] {
	return shardHooks[*group.Coordinator]{load: r.loadCoordinator, close: (*group.Coordinator).Close}
}

// offsetsTopic returns __consumer_offsets, or nil before it exists.
func (r *Reactor) offsetsTopic() *controller.Topic {
	return r.ctl.state.Topics[group.OffsetsTopic]
}

// ensureOffsetsTopic asks the controller to create __consumer_offsets,
// once at a time (ensureInternalTopic).
func (r *Reactor) ensureOffsetsTopic() {
	r.ensureInternalTopic(group.OffsetsTopic, r.offsetsTopic(), &r.groups.creating)
}

// ensureInternalTopic asks the controller to create a compacted internal
// topic of OffsetsTopicPartitions partitions (__consumer_offsets,
// __transaction_state) unless it exists or *creating says a request is in
// flight. In a multi-broker cluster it waits until enough brokers have
// registered for the default replication factor, so the topic is not
// created under-replicated for ever by the first request that needs it.
func (r *Reactor) ensureInternalTopic(name string, existing *controller.Topic, creating *bool) {
	if *creating || existing != nil {
		return
	}
	if r.cfg.DefaultReplication == 0 && len(r.cfg.Peers) > 0 && len(r.ctl.state.Brokers) < min(3, len(r.cfg.Peers)) {
		return
	}
	t, err := r.planTopic(topicSpec{
		name: name, partitions: r.cfg.OffsetsTopicPartitions, replication: -1,
		// Kafka's offsets.topic.segment.bytes: compaction works on closed
		// segments, so a smaller segment keeps replay after failover short.
		configs: map[string]string{"cleanup.policy": "compact", "segment.bytes": "104857600"}, internal: true,
	})
	if err != nil {
		r.env.Logf("node %d: plan %s: %v", r.self, name, err)
		return
	}
	*creating = true
	r.propose(&controller.Command{CreateTopic: t}, func(controller.Result) { *creating = false })
}

// coordinatorFor returns the local coordinator of a group, or the error a
// request for it gets.
func (r *Reactor) coordinatorFor(name string) (*group.Coordinator, *kerr.Error) {
	t := r.offsetsTopic()
	if t == nil || len(t.Partitions) == 0 {
		return nil, kerr.NotCoordinator
	}
	return r.groups.lookup(r, t, group.PartitionFor(name, int32(len(t.Partitions))), r.groupHooks(),
		bugGroupCoordinatorLoading, bugGroupNotCoordinator)
}

// coordinatingPartition returns partition index of internal topic t (a
// coordinator's key hashed to it: a group, a transactional id) when this
// broker leads it and holds its read lease, or NOT_COORDINATOR. A leader
// without the lease may be deposed without knowing it yet: answering from
// its state could hand out a stale committed offset or transaction state
// (lease.go).
func (r *Reactor) coordinatingPartition(t *controller.Topic, index int32) (*controller.Partition, *partition.Partition, *kerr.Error) {
	cp := &t.Partitions[index]
	p, ok := r.parts[cp.Group]
	if !ok || !p.IsLeader() || !r.leaseHeld(p) {
		return nil, nil, kerr.NotCoordinator
	}
	return cp, p, nil
}

// syncCoordinators opens, rebuilds and closes coordinators to match which
// offsets partitions this node leads now.
func (r *Reactor) syncCoordinators() {
	r.groups.sync(r, r.offsetsTopic(), r.groupHooks())
}

// loadCoordinator builds a coordinator from the partition's committed
// records, keeping the last value per key.
func (r *Reactor) loadCoordinator(p *partition.Partition) (*group.Coordinator, error) {
	g := p.Replica().Group
	term := p.Term()
	coord := group.New(r.groupConfig(), group.Env{
		Log:        &offsetsLog{r: r, group: uint64(g), term: term},
		Timers:     reactorTimers{r},
		Rand:       r.env.Rand,
		WallMillis: func() int64 { return r.env.Clock.Now().UnixMilli() },
		Known:      r.partitionExists,
		TxnLog:     &offsetsLog{r: r, group: uint64(g), term: term},
		Topics:     r.consumerTopics,

		ConsumerTimeouts: r.consumerGroupTimeouts,
		MayDescribe:      r.mayDescribeTopic,
		Images:           r.env.GroupImages, // nil in a broker: decode every time (Env.GroupImages)
	})
	skipped := 0
	err := replayBatches(p, func(h records.Header, b []byte) error {
		return records.Records(b, func(rec records.Record) error {
			var err error
			switch {
			case h.IsControl():
				if m, perr := records.ParseMarker(rec); perr == nil {
					coord.ReplayMarker(h.ProducerID, m.Type == records.ControlCommit)
				}
			case h.IsTransactional():
				err = coord.ReplayTxn(h.ProducerID, rec.Key, rec.Value)
			case share.IsStateKey(rec.Key):
				// share-partition state (shares.go)
			default:
				err = coord.Replay(rec.Key, rec.Value)
			}
			if err != nil {
				skipped++
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if skipped > 0 {
		r.env.Logf("node %d: %s-%d: skipped %d records that do not decode", r.self, p.Topic, p.Index, skipped)
	}
	coord.Start(r.env.Clock.Monotonic())
	return coord, nil
}

// replayCommitted calls fn with every record of the partition's committed
// batches, in log order, skipping control batches.
func replayCommitted(p *partition.Partition, fn func(key, value []byte)) error {
	return replayBatches(p, func(h records.Header, b []byte) error {
		if h.IsControl() {
			return nil
		}
		return records.Records(b, func(rec records.Record) error {
			fn(rec.Key, rec.Value)
			return nil
		})
	})
}

// partitionExists reports whether the metadata has this topic partition.
func (r *Reactor) partitionExists(topic string, partition int32) bool {
	t := r.ctl.state.Topics[topic]
	return t != nil && partition >= 0 && int(partition) < len(t.Partitions)
}

// groupConfig is the coordinators' configuration.
func (r *Reactor) groupConfig() group.Config { return r.cfg.Groups }

// offsetsLog is a coordinator's group.Log: its offsets partition, written
// as the leader of the term the coordinator was loaded in.
type offsetsLog struct {
	r     *Reactor
	group uint64
	term  uint64
}

// Write implements group.Log: one uncompressed batch, appended on the
// leader path and reported once committed (acks=all).
func (l *offsetsLog) Write(recs []group.Record, done func(now time.Duration, err error)) {
	l.write(nil, recs, done)
}

// WriteTxn implements group.TxnLog: the batch is producer pid's
// transactional batch (no sequence: the partition checks only its epoch).
func (l *offsetsLog) WriteTxn(pid int64, epoch int16, recs []group.Record, done func(now time.Duration, err error)) {
	l.write(&records.Producer{ID: pid, Epoch: epoch, BaseSequence: records.NoSequence}, recs, done)
}

func (l *offsetsLog) write(producer *records.Producer, recs []group.Record, done func(now time.Duration, err error)) {
	r := l.r
	fail := func(err error) { done(r.env.Clock.Monotonic(), err) }
	p, ok := r.parts[l.group]
	if !ok || !p.IsLeader() || p.Term() != l.term || r.buggify(bugOffsetsWriteFails) {
		fail(kerr.NotLeaderForPartition)
		return
	}
	now := r.env.Clock.Now()
	rs := make([]records.Record, len(recs))
	for i, rec := range recs {
		rs[i] = records.Record{Key: rec.Key, Value: rec.Value}
	}
	batch := records.Build(records.BuildOptions{Codec: records.CodecNone, BaseTimestamp: now.UnixMilli(),
		Producer: producer, Transactional: producer != nil}, rs)
	h, err := records.ParseHeader(batch)
	if err != nil {
		fail(kerr.UnknownServerError)
		return
	}
	if max := p.Cfg.MaxMessageBytes; max > 0 && len(batch) > max {
		fail(kerr.MessageTooLarge)
		return
	}
	res, err := p.Append(batch, h, now)
	if err != nil {
		fail(err)
		return
	}
	p.WaitCommit(res.Index, res.Term, res.BaseOffset, func(err error) { done(r.env.Clock.Monotonic(), err) })
	r.queueProcess()
}

// reactorTimers is group.Timers on the reactor's scheduler.
type reactorTimers struct{ r *Reactor }

func (t reactorTimers) After(d time.Duration, fn func(now time.Duration)) {
	r := t.r
	r.env.Sched.After(d, func() {
		if r.stopped {
			return
		}
		fn(r.env.Clock.Monotonic())
		r.queueProcess()
	})
}

// groupClient is how a coordinator sees a request's connection.
func groupClient(c Client) group.Client {
	host := c.Remote
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return group.Client{ID: c.ClientID, Host: "/" + host}
}

func (r *Reactor) monoNow() time.Duration { return r.env.Clock.Monotonic() }

// GroupLag is one group's position on one partition.
type GroupLag struct {
	Group     string
	Topic     string
	Partition int32
	Committed int64
	// LogEnd is the partition's high watermark as this broker knows it
	// (exact on its leader); -1 when this broker holds no replica.
	LogEnd int64
	// Lag is LogEnd - Committed (never negative), or -1 when LogEnd is
	// unknown.
	Lag int64
}

// GroupLags returns the lag of every group this broker coordinates, per
// committed partition, sorted by group, topic and partition. Groups
// coordinated elsewhere are reported by their own coordinator's broker.
func (r *Reactor) GroupLags() []GroupLag {
	var out []GroupLag
	for _, g := range sortedKeys(r.groups.shards) {
		for _, o := range r.groups.shards[g].coord.Committed() {
			gl := GroupLag{Group: o.Group, Topic: o.Topic, Partition: o.Partition, Committed: o.Offset, LogEnd: -1, Lag: -1}
			if p, ok := r.byName[topicPartition{o.Topic, o.Partition}]; ok {
				gl.LogEnd = p.HighWatermark()
				gl.Lag = max(0, gl.LogEnd-o.Offset)
			}
			out = append(out, gl)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return out
}

// localCoordinators returns the open coordinators, in partition order (for
// ListGroups, which asks each).
func (r *Reactor) localCoordinators() []*group.Coordinator {
	shards := make([]*shard[*group.Coordinator], 0, len(r.groups.shards))
	for _, g := range sortedKeys(r.groups.shards) {
		shards = append(shards, r.groups.shards[g])
	}
	sort.Slice(shards, func(i, j int) bool { return shards[i].index < shards[j].index })
	out := make([]*group.Coordinator, len(shards))
	for i, sh := range shards {
		out[i] = sh.coord
	}
	return out
}

// groupsAfterApply reconciles the coordinator of g when g is a partition of
// __consumer_offsets: it may just have become a ready leader.
func (r *Reactor) groupsAfterApply(g uint64) {
	t, cp, ok := r.ctl.state.PartitionByGroup(g)
	if !ok || t.Name != group.OffsetsTopic {
		return
	}
	r.groups.syncOne(r, cp, r.groupHooks())
}
