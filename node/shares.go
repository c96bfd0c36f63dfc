package node

// Share groups (KIP-932 queues) on the node: the glue between the Kafka
// APIs (api_share_*.go) and node/share's state machines.
//
// Where the state lives: a share group's coordinator is its consumer group
// coordinator, the leader of partition PartitionFor(group, N) of
// __consumer_offsets (coordinators.go). That broker keeps the group's
// membership, its share sessions and one share.Partition per topic
// partition the group consumes. Every change a client can observe (an
// acquisition, which bumps delivery counts; an acknowledgement; a new
// share-partition's start offset) is written as one record per changed
// share-partition, key share.EncodeKey, value share.EncodeState, to that
// __consumer_offsets partition through Raft, and the request is answered
// only once the write is committed. Floe keeps these records in
// __consumer_offsets (compacted, last value per key) rather than in a
// separate __share_group_state topic: the group's coordinator is also its
// share coordinator, so one Raft group orders both.
//
// Failover: when another broker becomes the leader of that partition it
// replays the committed records (shareShardFor, lazily on the first share
// request, like the consumer group coordinator); share.Restore turns
// records that were acquired into available ones, delivery counts kept, so
// they are redelivered and no acknowledgement is lost. Membership and
// share sessions are not persisted: members get UNKNOWN_MEMBER_ID or
// SHARE_SESSION_NOT_FOUND and rejoin, as Kafka's clients do.
//
// Which broker serves ShareFetch: the group's coordinator, for every
// partition of the group, whatever the placement. From its own replica
// when it holds one, leader or follower (shareReplica), acquiring only
// records below that replica's high watermark, which are committed and the
// same on every replica, so a lagging follower hands out fewer records,
// never different ones. When it holds none (more brokers than the
// replication factor, or a replica moved away by a reassignment, the
// balancer or a join) it reads the partition from its leader over the peer
// network, bounded by the leader's high watermark (share_read.go), and
// acquires from that answer as from a replica of its own; so are dead
// letters read (share_dlq.go). Until h-share it served only partitions it
// held a replica of, and such a partition was silently never served nor
// its dead letters copied (simulator seed 171 with -join). A broker that
// does not coordinate the group forwards the request to the coordinator
// (share_forward.go).
//
// Kafka's clients send ShareFetch to each partition's leader, not to the
// coordinator; that broker forwards it. The simulator's share clients
// (sim/share.go) send to the coordinator and, now and then, to another
// broker.

import (
	"bytes"
	"errors"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/internal/plant"
	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/group"
	"github.com/floe-broker/floe/node/partition"
	"github.com/floe-broker/floe/node/share"
)

// ShareConfig configures share groups (zero fields: Kafka's defaults).
type ShareConfig struct {
	AutoOffsetReset   string        // share.auto.offset.reset: "latest" (default) or "earliest"
	Lock              time.Duration // share.record.lock.duration.ms, 30s
	DeliveryLimit     int16         // share.delivery.count.limit, 5
	MaxInFlight       int64         // group.share.partition.max.record.locks, 2000
	SessionTimeout    time.Duration // group.share.session.timeout.ms, 45s
	HeartbeatInterval time.Duration // group.share.heartbeat.interval.ms, 5s
	MaxSize           int           // group.share.max.size, 200
	// Backoff is the redelivery backoff (Floe's retry policy, the group
	// configs floe.share.retry.backoff.*; share_configs.go); zero: none.
	Backoff share.Backoff
	// DeadLetterTopic is errors.deadletterqueue.topic.name (share_dlq.go);
	// empty: rejected and over-limit records are archived, not copied.
	DeadLetterTopic string
	// DeadLetterPrefix is errors.deadletterqueue.topic.name.prefix
	// (KIP-1191; share_dlq_check.go): the prefix every dead-letter topic's
	// name must have; nil: "dlq."; empty: no rule.
	DeadLetterPrefix *string
	// DeadLetterNoCopy is errors.deadletterqueue.copy.record.enable false
	// (KIP-1191, a group config; share_dlq.go): a dead-letter record
	// carries only the __dlq.errors.* headers, no key, value or headers of
	// the record (Floe's default copies them, as issue 18 asks; Kafka's
	// does not).
	DeadLetterNoCopy bool
	// DeadLetterNoAutoCreate is errors.deadletterqueue.auto.create.topics.enable
	// false: a missing dead-letter topic is not created (Floe creates it by
	// default, as issue 18 asks; Kafka's default is false).
	DeadLetterNoAutoCreate bool
}

// deadLetterPrefix is the effective errors.deadletterqueue.topic.name.prefix.
func (c ShareConfig) deadLetterPrefix() string {
	if c.DeadLetterPrefix == nil {
		return dlqDefaultPrefix
	}
	return *c.DeadLetterPrefix
}

func (c ShareConfig) withDefaults() ShareConfig {
	d := share.DefaultConfig()
	if c.AutoOffsetReset == "" {
		c.AutoOffsetReset = "latest"
	}
	if c.Lock <= 0 {
		c.Lock = d.Lock
	}
	if c.DeliveryLimit <= 0 {
		c.DeliveryLimit = d.DeliveryLimit
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = d.MaxInFlight
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 45 * time.Second
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = 5 * time.Second
	}
	if c.MaxSize <= 0 {
		c.MaxSize = 200
	}
	return c
}

// partition is the share-partition's configuration. Settle is always on:
// a released record's backoff is drawn only after a metadata barrier, from
// the group's retry policy as the controller has it
// (share_backoff.go). DeadLetter is always on: a rejected record, or one at the delivery limit, waits
// DeadLettering until the coordinator knows, with fresh metadata, whether
// the group has a dead-letter topic (share_dlq.go archiveUnlettered).
// Deciding with the coordinator's possibly stale copy of the group's
// configs instead lost dead letters of a topic set just before (simulator
// seed 910380 with --corrupt --reassign).
func (c ShareConfig) partition() share.Config {
	return share.Config{DeliveryLimit: c.DeliveryLimit, Lock: c.Lock, MaxInFlight: c.MaxInFlight, Backoff: c.Backoff,
		DeadLetter: true, Settle: true}
}

func (c ShareConfig) group() share.GroupConfig {
	return share.GroupConfig{SessionTimeout: c.SessionTimeout, MaxSize: c.MaxSize}
}

// shareCoordinators is the reactor's share-group state: one shard per
// __consumer_offsets partition this broker led when a share request
// last needed it.
type shareCoordinators struct {
	shards map[uint64]*shareShard // by Raft group of the offsets partition
	// forwards are this broker's share requests passed to other
	// brokers' coordinators (share_forward.go).
	forwards shareForwards
	// reads are this broker's reads, as coordinator, of partitions it
	// holds no replica of (share_read.go).
	reads shareReads
	// dlq are the dead-letter copies this broker makes as coordinator
	// (share_dlq.go).
	dlq dlqState
	// counters are the share groups' counters, for metrics
	// (share_stats.go).
	counters shareCounters
}

// shareShard is the share state of one offsets partition, loaded in term.
type shareShard struct {
	raftGroup uint64
	term      uint64
	groups    map[string]*share.Group
	parts     map[share.Key]*share.Partition
	sessions  map[sessionKey]*shareSession
	// settling: a metadata barrier to settle backoffs is asked for
	// (share_backoff.go).
	settling bool
}

// sessionKey names a share session: a member's, opened directly with the
// coordinator (via 0) or through the partition leader via that forwarded
// it (share_forward.go). Kafka's clients keep one session per broker they
// fetch from, each with its own epochs, so each is its own session here.
type sessionKey struct {
	group, member string
	via           uint64
}

// shareSession is a ShareFetch session: the partitions a member fetches
// and the epoch its next request must carry.
type shareSession struct {
	epoch int32
	parts []share.Key // sorted
}

func (s *shareSession) add(k share.Key) {
	i := sort.Search(len(s.parts), func(i int) bool { return !keyLess(s.parts[i], k) })
	if i < len(s.parts) && s.parts[i] == k {
		return
	}
	s.parts = append(s.parts, share.Key{})
	copy(s.parts[i+1:], s.parts[i:])
	s.parts[i] = k
}

func (s *shareSession) remove(k share.Key) {
	for i, p := range s.parts {
		if p == k {
			s.parts = append(s.parts[:i], s.parts[i+1:]...)
			return
		}
	}
}

func keyLess(a, b share.Key) bool {
	if a.Topic != b.Topic {
		return a.Topic < b.Topic
	}
	return a.Partition < b.Partition
}

// authorizedShareShard is how a request about one share group begins: op
// on the group (GROUP_AUTHORIZATION_FAILED), then the shard coordinating
// it here (shareShardFor's errors).
func (r *Reactor) authorizedShareShard(az *authz, name string, op kmsg.ACLOperation) (*shareShard, *kerr.Error) {
	if !az.group(name, op) {
		return nil, errGroupAuth
	}
	return r.shareShardFor(name)
}

// shareShardFor returns the share state of group's coordinator, loading
// it when this broker became the offsets partition's ready leader since,
// or the error a request gets.
func (r *Reactor) shareShardFor(name string) (*shareShard, *kerr.Error) {
	t := r.offsetsTopic()
	if t == nil || len(t.Partitions) == 0 {
		r.ensureOffsetsTopic()
		return nil, kerr.CoordinatorNotAvailable
	}
	cp, p, errV := r.coordinatingPartition(t, group.PartitionFor(name, int32(len(t.Partitions))))
	if errV != nil {
		return nil, errV
	}
	if !p.Ready() || r.buggify(bugShareCoordinatorLoading) {
		return nil, kerr.CoordinatorLoadInProgress
	}
	return r.loadShareShard(cp, p)
}

// loadShareShard returns the share state of the offsets partition cp
// (p, its ready led replica here), replaying its committed records when
// this term has none loaded yet.
func (r *Reactor) loadShareShard(cp *controller.Partition, p *partition.Partition) (*shareShard, *kerr.Error) {
	if r.shares.shards == nil {
		r.shares.shards = map[uint64]*shareShard{}
	}
	if sh := r.shares.shards[cp.Group]; sh != nil && sh.term == p.Term() {
		return sh, nil
	}
	// Loading applies the group configs to the stored state (Restore
	// archives, or dead-letters, records available at the delivery
	// limit), so it waits until this broker's metadata has caught up with
	// the controller since it started: a broker restarted behind a
	// dead-letter config change would otherwise archive such a record
	// uncopied (simulator seed 910114 --corrupt --reassign).
	if ok, _ := r.metadataReady(); !ok {
		return nil, kerr.CoordinatorLoadInProgress
	}
	sh := &shareShard{raftGroup: cp.Group, term: p.Term(), groups: map[string]*share.Group{},
		parts: map[share.Key]*share.Partition{}, sessions: map[sessionKey]*shareSession{}}
	states, err := replayShareStates(p)
	if err != nil {
		r.env.Logf("node %d: load share state of %s-%d: %v", r.self, p.Topic, p.Index, err)
		return nil, kerr.CoordinatorLoadInProgress
	}
	for k, s := range states { //floe:unordered each key is restored on its own
		if sp, err := share.Restore(r.groupShareConfig(k.Group).partition(), s, r.monoNow()); err == nil {
			sp.SetRand(r.env.Rand)
			sh.parts[k] = sp
		}
	}
	r.shares.shards[cp.Group] = sh
	return sh, nil
}

// replayShareStates returns the share-partition states of p's committed
// records: per key, the last value that decodes, unless a tombstone
// follows it; records whose key does not decode are skipped.
//
// It decodes each distinct key once and, walking the records backwards,
// only the values that decide the result (normally one per key): the
// state records of a busy offsets partition are mostly overwritten, and
// decoding every one of them (JSON) at every leader change made loading
// quadratic in the log's length. The result is the same as decoding every
// record in log order, keeping the last decodable value and dropping it
// at a tombstone.
func replayShareStates(p *partition.Partition) (map[share.Key]share.State, error) {
	var recs []shareStateRecord
	err := replayCommitted(p, func(key, value []byte) {
		if !share.IsStateKey(key) {
			return
		}
		// The record's bytes may be a decompression buffer reused for
		// the next batch.
		recs = append(recs, shareStateRecord{key: string(key), value: bytes.Clone(value)})
	})
	if err != nil {
		return nil, err
	}
	return lastShareStates(recs), nil
}

// shareStateRecord is one share-state record of an offsets partition.
type shareStateRecord struct {
	key   string
	value []byte // nil: a tombstone
}

// lastShareStates is replayShareStates' result for recs, in log order.
func lastShareStates(recs []shareStateRecord) map[share.Key]share.State {
	type decodedKey struct {
		k  share.Key
		ok bool
	}
	keys := map[string]decodedKey{}
	decided := map[share.Key]bool{}
	states := map[share.Key]share.State{}
	for i := len(recs) - 1; i >= 0; i-- {
		rec := recs[i]
		dk, seen := keys[rec.key]
		if !seen {
			k, err := share.DecodeKey([]byte(rec.key))
			dk = decodedKey{k: k, ok: err == nil}
			keys[rec.key] = dk
		}
		if !dk.ok || decided[dk.k] {
			continue
		}
		if rec.value == nil {
			decided[dk.k] = true // deleted: no state
			continue
		}
		if s, err := share.DecodeState(rec.value); err == nil {
			states[dk.k] = s
			decided[dk.k] = true
		}
		// A value that does not decode leaves the previous one in force.
	}
	return states
}

// shareGroup returns the named group of sh, created empty when create.
func (sh *shareShard) shareGroup(name string, create bool) *share.Group {
	g := sh.groups[name]
	if g == nil && create {
		g = share.NewGroup(name)
		sh.groups[name] = g
	}
	return g
}

// expireMembers drops members of g whose session timed out and releases
// what they held.
func (r *Reactor) expireMembers(sh *shareShard, g *share.Group) {
	now := r.monoNow()
	for _, id := range g.Expire(now, r.cfg.Shares.withDefaults().group()) {
		r.releaseMember(sh, g.Name, id)
	}
}

// releaseMember releases every record member holds in the group and
// closes its session. Releases need no write: the persisted image stores
// acquired records as available (share.State).
func (r *Reactor) releaseMember(sh *shareShard, groupName, member string) {
	now := r.monoNow()
	for _, k := range sortedShareKeys(sh.parts) {
		if k.Group == groupName {
			sh.parts[k].ReleaseMember(now, member)
		}
	}
	for k := range sh.sessions { //floe:unordered deleting every via of one member
		if k.group == groupName && k.member == member {
			delete(sh.sessions, k)
		}
	}
}

func sortedShareKeys[V any](m map[share.Key]V) []share.Key {
	keys := make([]share.Key, 0, len(m))
	for k := range m { //floe:unordered sorted below
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Group != keys[j].Group {
			return keys[i].Group < keys[j].Group
		}
		return keyLess(keys[i], keys[j])
	})
	return keys
}

// sharePartition returns the share-partition of k, created when the group
// never fetched it, starting per share.auto.offset.reset (created: the
// caller writes it, since a start offset handed out must be durable); nil
// without a view of the partition (v: the coordinator's replica, or a
// remote read, share_read.go; nil or a failed read: none).
func (r *Reactor) sharePartition(sh *shareShard, k share.Key, v *shareView) (sp *share.Partition, created bool) {
	cfg := r.groupShareConfig(k.Group)
	if sp := sh.parts[k]; sp != nil {
		sp.Configure(cfg.partition())
		return sp, false
	}
	if v == nil || (v.local == nil && v.code != 0) {
		return nil, false
	}
	start := v.highWatermark()
	if cfg.AutoOffsetReset == "earliest" {
		start = v.startOffset()
	}
	sp = share.New(cfg.partition(), start)
	sp.SetRand(r.env.Rand)
	sh.parts[k] = sp
	return sp, true
}

// writeShareStates writes the states of keys (sorted, distinct) to the
// shard's offsets partition and calls done once committed. On failure the
// shard is dropped, so the next request reloads what is durable: the
// in-memory changes of the failed write are never served.
//
// Only the shard in force writes: a replaced one (its term over, or
// dropped by a failed write and reloaded in the same term) fails with
// NOT_LEADER_OR_FOLLOWER and writes nothing. Its image is behind the log
// (its successor loaded the log and may have written since), and the term
// check of the offsets log alone would let it commit over the newer
// states: records acknowledged or handed out on the successor went back to
// an older delivery count and were handed out again (simulator seed
// 2500971, a ShareFetch answered after its remote read timed out,
// docs/testing.md "Bugs found").
func (r *Reactor) writeShareStates(sh *shareShard, keys []share.Key, done func(err error)) {
	if len(keys) == 0 {
		done(nil)
		return
	}
	if r.shares.shards[sh.raftGroup] != sh {
		done(kerr.NotLeaderForPartition)
		return
	}
	recs := make([]group.Record, 0, len(keys))
	for _, k := range keys {
		recs = append(recs, group.Record{Key: share.EncodeKey(k), Value: share.EncodeState(sh.parts[k].State(r.monoNow()))})
	}
	log := &offsetsLog{r: r, group: sh.raftGroup, term: sh.term}
	if plant.Enabled(plant.ShareAckBeforeDurable) {
		done(nil)
		done = func(error) {}
	}
	log.Write(recs, func(_ time.Duration, err error) {
		r.shareWritten(sh, err, done)
	})
}

// shareReplica returns this broker's replica of a partition, leader or
// follower, for the share coordinator to read committed records from, or
// the partition's error code.
func (r *Reactor) shareReplica(topic string, part int32) (*partition.Partition, int16) {
	p, ok := r.byName[topicPartition{topic, part}]
	if !ok {
		return nil, r.missingPartition(topic, part).Code
	}
	return p, 0
}

// shareTopicByID returns the topic with id, or nil.
func (r *Reactor) shareTopicByID(id [16]byte) *controller.Topic {
	return lookupTopic(r.ctl.state, nil, id)
}

// sharePartitions lists a topic's partitions, for assignment.
func (r *Reactor) sharePartitions(topic string) []int32 {
	t := r.ctl.state.Topics[topic]
	if t == nil || t.Internal {
		return nil
	}
	out := make([]int32, len(t.Partitions))
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// localShareGroups lists the share groups this broker coordinates, sorted.
func (r *Reactor) localShareGroups() []*share.Group {
	var out []*share.Group
	for _, g := range sortedKeys(r.shares.shards) {
		sh := r.shares.shards[g]
		if p, ok := r.parts[g]; !ok || !p.IsLeader() || p.Term() != sh.term {
			continue
		}
		for _, name := range sortedKeys(sh.groups) {
			out = append(out, sh.groups[name])
		}
	}
	return out
}

// useSession checks a ShareFetch or ShareAcknowledge session epoch for
// member and returns its session, or the top-level error (nothing
// changed). Epoch 0 opens a new session (allowOpen: ShareFetch only), -1
// names the one to close, any other must be the session's next epoch.
func (sh *shareShard) useSession(groupName, member string, via uint64, epoch int32, allowOpen bool) (*shareSession, *kerr.Error) {
	g := sh.groups[groupName]
	if g == nil || !g.Has(member) {
		return nil, kerr.UnknownMemberID
	}
	s := sh.sessions[sessionKey{groupName, member, via}]
	switch {
	case epoch == 0 && allowOpen:
		return &shareSession{}, nil
	case epoch == 0:
		return nil, kerr.InvalidShareSessionEpoch
	case s == nil:
		return nil, kerr.ShareSessionNotFound
	case epoch != -1 && epoch != s.epoch:
		return nil, kerr.InvalidShareSessionEpoch
	}
	return s, nil
}

// advanceSession records a request's effect on its session: a new one is
// installed, a closed one dropped (and the member's records released), an
// open one moves to its next epoch.
func (r *Reactor) advanceSession(sh *shareShard, groupName, member string, via uint64, epoch int32, s *shareSession) {
	switch {
	case epoch == -1:
		r.releaseMember(sh, groupName, member)
	case epoch == 0:
		s.epoch = 1
		sh.sessions[sessionKey{groupName, member, via}] = s
	default:
		s.epoch++
		if s.epoch < 0 {
			s.epoch = 1 // wraps past MaxInt32 to 1, as Kafka's does
		}
	}
}

// shareAcks applies one partition's acknowledgement batches and returns
// the partition's error code (0, or INVALID_RECORD_STATE / INVALID_REQUEST
// with nothing changed) and whether its state changed.
func (r *Reactor) shareAcks(sh *shareShard, k share.Key, member string, batches []share.Ack) (int16, bool) {
	sp := sh.parts[k]
	if sp == nil {
		return kerr.InvalidRecordState.Code, false
	}
	sp.Configure(r.groupShareConfig(k.Group).partition())
	if err := sp.Acknowledge(r.monoNow(), member, batches); err != nil {
		if errors.Is(err, share.ErrInvalidRequest) {
			return kerr.InvalidRequest.Code, false
		}
		return kerr.InvalidRecordState.Code, false
	}
	r.settleBackoffs(sh) // a release waits for its backoff to be drawn
	r.shares.counters.countAcks(k.Group, batches)
	for _, b := range batches {
		for _, t := range b.Types {
			if t != share.AckRenew {
				return 0, true
			}
		}
	}
	return 0, false // renewals only: locks are not persisted
}

// hasShareGroup reports whether the shard knows a share group of this
// name: live members, or share state (membership is not persisted, so
// after a failover a group is known by its share-partitions).
func (sh *shareShard) hasShareGroup(name string) bool {
	if sh.groups[name] != nil {
		return true
	}
	for k := range sh.parts { //floe:unordered an existence check
		if k.Group == name {
			return true
		}
	}
	return false
}

// shareGroupEmpty reports whether the group has no members (offsets may
// be altered or deleted only then, as in Kafka).
func (sh *shareShard) shareGroupEmpty(name string) bool {
	g := sh.groups[name]
	return g == nil || len(g.Members()) == 0
}

// shareTopics lists the group's share-partitions by topic, sorted, as a
// DescribeShareGroupOffsets request would name them.
func (sh *shareShard) shareTopics(name string) []kmsg.DescribeShareGroupOffsetsRequestGroupTopic {
	var out []kmsg.DescribeShareGroupOffsetsRequestGroupTopic
	for _, k := range sortedShareKeys(sh.parts) {
		if k.Group != name {
			continue
		}
		if n := len(out); n == 0 || out[n-1].Topic != k.Topic {
			t := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
			t.Topic = k.Topic
			out = append(out, t)
		}
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, k.Partition)
	}
	return out
}

// writeShareRecords writes share-state records (a nil value deletes the
// key) and calls done once committed; on failure the shard is dropped, as
// in writeShareStates.
func (r *Reactor) writeShareRecords(sh *shareShard, recs []group.Record, done func(err error)) {
	if len(recs) == 0 {
		done(nil)
		return
	}
	log := &offsetsLog{r: r, group: sh.raftGroup, term: sh.term}
	log.Write(recs, func(_ time.Duration, err error) {
		r.shareWritten(sh, err, done)
	})
}

// shareWritten completes a share-state write. A failed write drops the
// shard, so the next request reloads what is durable. A write that
// committed after its shard was replaced (the broker lost and regained
// the partition, and the new shard was loaded before this entry
// committed) is answered as failed too: the new shard never saw it and
// may hand out the same records with the same delivery counts, so its
// answer must not reach the client (the outcome is unknown to it, as
// for any lost answer).
func (r *Reactor) shareWritten(sh *shareShard, err error, done func(error)) {
	switch {
	case err != nil && r.shares.shards[sh.raftGroup] == sh:
		delete(r.shares.shards, sh.raftGroup)
	case err == nil && r.shares.shards[sh.raftGroup] != sh:
		err = kerr.NotLeaderForPartition
	}
	done(err)
}
