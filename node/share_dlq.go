package node

// Dead-letter topics of share groups (issue 18; KIP-1191's config name,
// Floe's design): a record a consumer rejects, or that reaches
// share.delivery.count.limit, in a group whose errors.deadletterqueue.topic.name
// is set, is copied to that topic and only then archived.
//
// The order that keeps a dead letter from being lost: node/share turns
// the record DeadLettering (persisted with the share-partition's state,
// never acquired, holding the start offset); the coordinator copies it
// (one copy in flight per share-partition, lowest offset first) to
// partition (source partition mod partitions) of the dead-letter topic;
// once that partition's leader says the copy is committed, one state write
// marks the record Archived. A coordinator that fails between the two
// finds the record still DeadLettering (or, for a lock that lapsed at the
// limit and was never written, Available at the limit, which Restore
// dead-letters) and copies it again.
//
// Duplicates: the copies of one share-partition are written as an
// idempotent producer whose id, next sequence and pending record (the one
// the copy under that sequence is for) are part of the persisted state:
// the id is taken from the controller and written before the first copy,
// the pending record written before each copy is sent. A copy sent again,
// by this coordinator after a lost answer or by the next one after a
// failover, is the same record under the same producer id and sequence,
// and the dead-letter partition's producer table (rebuilt from its log on
// every replica) answers it as a duplicate. Without the pending record a
// new coordinator could copy a different record (the lowest waiting one)
// under a sequence its predecessor had used, and the partition would drop
// that copy as a duplicate: a lost dead letter (simulator seed 68 found
// it). A duplicate copy can still appear when the dead-letter partition
// refuses the sequence (it forgot the producer: producer.id.expiration.ms
// passed, or its records were deleted) and the coordinator starts over
// with a new producer id while its last copy's fate is unknown, or when
// the log's start passes the pending record. So at least once, and in
// practice once.
//
// The copy keeps the record's key, value and headers, and adds headers
// (dlqHeader*) naming the source topic, partition and offset, the group,
// the delivery count, the reason (rejected or delivery-limit) and the
// time it was dead-lettered (ms); its timestamp is that time. With the
// group's errors.deadletterqueue.copy.record.enable=false (KIP-1191;
// Floe's default is true, Kafka's false) it has those headers only: a null
// key and value, none of the record's headers. The choice is made when a
// copy is built: a copy sent again after a failover may follow a config
// changed meanwhile (it is the same dead letter, deduplicated by its
// producer sequence either way).
//
// Failures: the dead-letter topic must pass KIP-1191's rules
// (share_dlq_check.go: opted in, named with the prefix); until it does,
// copies wait. It is created when missing, opted in, with the broker's
// other defaults (unless auto-creation is off); until it exists, or while its leader does
// not answer, copies wait (retried every dlqResend) and the records hold
// the share-partition's start offset. A copy the dead-letter partition
// refuses for good (larger than its max.message.bytes) is archived
// uncopied, logged and counted (ShareGroupStats.DeadLetterDropped), so one record
// cannot stall the queue. A record no longer in the source log (deleted
// by retention first) is archived uncopied when the share-partition's
// start is trimmed (share.Partition.Trim), as any record there.
//
// The record is read from the coordinator's own replica of the source
// partition, or, when it holds none, from that partition's leader
// (readDeadLetterRemote, share_read.go); until the answer comes the
// record waits, as for any copy not yet made.
//
// The copy is written by the broker for the group: the group's consumers
// need no WRITE on the dead-letter topic (as for __consumer_offsets).

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/internal/plant"
	"github.com/floe-broker/floe/internal/wire"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/records"
	"github.com/floe-broker/floe/node/share"
)

// The dead-letter copy's headers beside the record's own.
const (
	dlqHeaderTopic     = "__dlq.errors.topic"
	dlqHeaderPartition = "__dlq.errors.partition"
	dlqHeaderOffset    = "__dlq.errors.offset"
	dlqHeaderGroup     = "__dlq.errors.group.id"
	dlqHeaderCount     = "__dlq.errors.delivery.count"
	dlqHeaderReason    = "__dlq.errors.reason"
	dlqHeaderTime      = "__dlq.errors.timestamp"
)

// Dead-letter RPCs (beside the share forwards in share_forward.go).
const (
	rpcShareDLQAppend = 24 // a share coordinator's dead-letter copy for the dead-letter partition's leader
	rpcShareDLQAck    = 25 // that leader: the copy committed, or the error

	// dlqResend is how long a copy waits for its answer before it is sent
	// again (the leader may have moved, or a message been lost).
	dlqResend = time.Second
	// dlqReadBytes bounds the read of the batch holding a dead letter.
	dlqReadBytes = 1 << 20
)

// dlqCopy is a share-partition's dead-letter copy in flight.
type dlqCopy struct {
	off    int64
	id     uint64 // matches the leader's answer
	group  uint64 // the dead-letter partition's Raft group
	topic  string
	batch  []byte // built once; each send gives the leader its own copy
	sentAt time.Duration
	// busy: a producer id is being taken, or the answer arrived and the
	// archiving state write is under way; nothing to resend.
	busy bool
}

// dlqRead is a remote read of the dead letter at off of a share-partition
// of shard sh.
type dlqRead struct {
	sh  *shareShard
	off int64
	v   *shareView
}

// dlqState is the coordinator side's bookkeeping, beside the shards.
type dlqState struct {
	seq     uint64                      // copy ids
	waiting map[uint64]func(code int16) // by copy id: the sender's handler of the answer
	copies  map[*shareShard]map[share.Key]*dlqCopy
	// reads are remote reads of dead letters (readDeadLetterRemote), by
	// share-partition, until the copy is started.
	reads map[share.Key]dlqRead
	// blocked: why a group's dead letters wait for a topic that fails
	// KIP-1191's rules (share_dlq_check.go), as last logged.
	blocked map[string]string
}

// pumpDeadLetters starts the next copy of every share-partition of sh
// that owes one and has none in flight, and sends again copies whose
// answer is overdue. The tick calls it for every current shard; so do the
// share APIs after their writes.
func (r *Reactor) pumpDeadLetters(sh *shareShard) {
	if r.shares.shards[sh.raftGroup] != sh {
		return
	}
	now := r.monoNow()
	for _, k := range sortedShareKeys(sh.parts) {
		cfg := r.groupShareConfig(k.Group)
		if cfg.DeadLetterTopic == "" {
			r.archiveUnlettered(sh, k)
			continue
		}
		if c := r.dlqCopies(sh)[k]; c != nil {
			if !c.busy && now-c.sentAt >= dlqResend {
				r.sendDeadLetter(c)
			}
			continue
		}
		r.startDeadLetter(sh, k, cfg)
	}
}

func (r *Reactor) dlqCopies(sh *shareShard) map[share.Key]*dlqCopy {
	d := &r.shares.dlq
	if d.copies == nil {
		d.copies = map[*shareShard]map[share.Key]*dlqCopy{}
	}
	if d.copies[sh] == nil {
		d.copies[sh] = map[share.Key]*dlqCopy{}
	}
	return d.copies[sh]
}

// shareDLQTick drops the copies of replaced shards and pumps the current
// ones. When some group has a dead-letter topic it first loads the share
// state of every offsets partition this broker leads (shards are
// otherwise loaded by the first share request): a coordinator that took
// over must finish the copies its predecessor began even if no member
// comes back.
func (r *Reactor) shareDLQTick() {
	if r.anyDeadLetterTopic() {
		if t := r.offsetsTopic(); t != nil {
			for i := range t.Partitions {
				cp := &t.Partitions[i]
				if p, ok := r.parts[cp.Group]; ok && p.Ready() && r.leaseHeld(p) {
					_, _ = r.loadShareShard(cp, p) // a failed load is tried again next tick
				}
			}
		}
	}
	d := &r.shares.dlq
	for sh := range d.copies { //floe:unordered deleting stale entries; order is invisible
		if r.shares.shards[sh.raftGroup] != sh {
			delete(d.copies, sh)
		}
	}
	for _, g := range sortedKeys(r.shares.shards) {
		sh := r.shares.shards[g]
		if p, ok := r.parts[g]; ok && p.Ready() && p.Term() == sh.term {
			r.pumpDeadLetters(sh)
		}
	}
}

// startDeadLetter begins the copy of k's next dead letter, if it owes
// one: creating the topic or taking a producer id first when need be, and
// persisting which record the copy under the current sequence is for
// before sending it (share.Producer says why).
func (r *Reactor) startDeadLetter(sh *shareShard, k share.Key, cfg ShareConfig) {
	sp := sh.parts[k]
	sp.Configure(cfg.partition())
	dl, ok := sp.NextDeadLetter(r.monoNow())
	if !ok {
		return
	}
	if r.deadLetterBlocked(k.Group, cfg.DeadLetterTopic) {
		return // the records wait: never archived uncopied
	}
	t := r.ctl.state.Topics[cfg.DeadLetterTopic]
	if t == nil || len(t.Partitions) == 0 {
		r.autoCreateWith(cfg.DeadLetterTopic, deadLetterTopicConfigs())
		return
	}
	copies := r.dlqCopies(sh)
	if sp.DeadLetterProducer().PID < 0 {
		c := &dlqCopy{off: dl.Offset, busy: true}
		copies[k] = c
		r.allocProducerID(func(pid int64, err error) {
			if err != nil || copies[k] != c || r.shares.shards[sh.raftGroup] != sh {
				delete(copies, k)
				return
			}
			sp.SetDeadLetterProducer(pid)
			// Durable before the first copy: a copy sent again after a
			// failover must carry the same producer id to be deduplicated.
			r.writeShareStates(sh, []share.Key{k}, func(error) { delete(copies, k) })
		})
		return
	}
	var v *shareView
	if dp, _ := r.shareReplica(k.Topic, k.Partition); dp != nil {
		v = localShareView(dp)
	} else if v = r.takeDeadLetterRead(sh, k, dl.Offset); v == nil {
		r.readDeadLetterRemote(sh, k, dl.Offset) // no replica here: read it from the partition's leader
		return
	}
	rec, found, err := readDeadLetter(v, dl.Offset)
	if err != nil {
		return // not readable now (below the local log's start, or an I/O error): try again
	}
	if !found {
		// No record at that offset (a control record, or compacted
		// away): nothing to copy.
		r.archiveDeadLetter(sh, k, dl.Offset, false)
		return
	}
	if cfg.DeadLetterNoCopy {
		rec = records.Record{} // errors.deadletterqueue.copy.record.enable=false: the headers only
	}
	c := r.buildDeadLetter(sp, k, t, dl, rec)
	copies[k] = c
	if sp.DeadLetterProducer().Pending == dl.Offset {
		r.sendDeadLetterFirst(sh, k, c)
		return
	}
	if err := sp.BeginDeadLetter(dl.Offset); err != nil {
		delete(copies, k)
		return
	}
	c.busy = true
	r.writeShareStates(sh, []share.Key{k}, func(err error) {
		if copies[k] != c {
			return
		}
		if err != nil || r.shares.shards[sh.raftGroup] != sh {
			delete(copies, k)
			return
		}
		c.busy = false
		r.sendDeadLetterFirst(sh, k, c)
	})
}

// buildDeadLetter makes the copy of dead letter dl (record rec of k) for
// its dead-letter partition, under the producer's current sequence.
func (r *Reactor) buildDeadLetter(sp *share.Partition, k share.Key, t *controller.Topic, dl share.DeadLetter, rec records.Record) *dlqCopy {
	dest := &t.Partitions[int(k.Partition)%len(t.Partitions)]
	prod := sp.DeadLetterProducer()
	now := r.env.Clock.Now().UnixMilli()
	rec.Headers = append(rec.Headers,
		records.RecordHeader{Key: dlqHeaderTopic, Value: []byte(k.Topic)},
		records.RecordHeader{Key: dlqHeaderPartition, Value: []byte(strconv.Itoa(int(k.Partition)))},
		records.RecordHeader{Key: dlqHeaderOffset, Value: []byte(strconv.FormatInt(dl.Offset, 10))},
		records.RecordHeader{Key: dlqHeaderGroup, Value: []byte(k.Group)},
		records.RecordHeader{Key: dlqHeaderCount, Value: []byte(strconv.Itoa(int(dl.DeliveryCount)))},
		records.RecordHeader{Key: dlqHeaderReason, Value: []byte(dl.Reason.String())},
		records.RecordHeader{Key: dlqHeaderTime, Value: []byte(strconv.FormatInt(now, 10))})
	rec.TimestampDelta, rec.OffsetDelta = 0, 0
	batch := records.Build(records.BuildOptions{Codec: records.CodecNone, BaseTimestamp: now,
		Producer: &records.Producer{ID: prod.PID, BaseSequence: prod.Seq}}, []records.Record{rec})
	r.shares.dlq.seq++
	return &dlqCopy{off: dl.Offset, id: r.shares.dlq.seq, group: dest.Group, topic: t.Name, batch: batch}
}

// sendDeadLetterFirst sends copy c of k for the first time and waits for
// its answer.
func (r *Reactor) sendDeadLetterFirst(sh *shareShard, k share.Key, c *dlqCopy) {
	if plant.Enabled(plant.ShareDLQArchiveBeforeCopy) {
		r.sendDeadLetter(c)
		r.archiveDeadLetter(sh, k, c.off, true) // not waiting for the copy to commit
		return
	}
	r.dlqWait(c.id, func(code int16) { r.deadLetterAnswered(sh, k, c, code) })
	r.sendDeadLetter(c)
}

// readDeadLetterRemote reads k's dead letter at off from the partition's
// leader (share_read.go), for a coordinator with no replica of it; a
// placeholder copy holds k meanwhile. With the answer, the pump starts the
// copy again and takeDeadLetterRead hands it the answer; without one, the
// next pump asks again.
func (r *Reactor) readDeadLetterRemote(sh *shareShard, k share.Key, off int64) {
	copies := r.dlqCopies(sh)
	c := &dlqCopy{off: off, busy: true}
	copies[k] = c
	r.shareRead(k.Topic, k.Partition, off, dlqReadBytes, func(v *shareView) {
		if copies[k] != c {
			return
		}
		delete(copies, k)
		if v == nil || v.code != 0 || r.shares.shards[sh.raftGroup] != sh {
			return
		}
		d := &r.shares.dlq
		if d.reads == nil {
			d.reads = map[share.Key]dlqRead{}
		}
		d.reads[k] = dlqRead{sh: sh, off: off, v: v}
		r.pumpDeadLetters(sh)
	})
}

// takeDeadLetterRead returns (and forgets) the remote read of k's dead
// letter at off for shard sh, or nil.
func (r *Reactor) takeDeadLetterRead(sh *shareShard, k share.Key, off int64) *shareView {
	d := &r.shares.dlq
	rd, ok := d.reads[k]
	if !ok {
		return nil
	}
	delete(d.reads, k)
	if rd.sh != sh || rd.off != off {
		return nil
	}
	return rd.v
}

// readDeadLetter reads the record at off from a replica's committed log,
// copied out of the batch; found is false when the log has no record at
// that offset (a control batch, or a gap left by compaction).
func readDeadLetter(v *shareView, off int64) (rec records.Record, found bool, err error) {
	data, err := v.read(off, dlqReadBytes)
	if err != nil || len(data) == 0 {
		return rec, false, kerr.OffsetNotAvailable
	}
	batches, err := records.Split(data)
	if err != nil {
		return rec, false, err
	}
	for _, b := range batches {
		h, err := records.ParseHeader(b)
		if err != nil {
			return rec, false, err
		}
		if off < h.BaseOffset {
			return rec, false, nil
		}
		if off > h.LastOffset() {
			continue
		}
		if h.IsControl() {
			return rec, false, nil
		}
		err = records.Records(b, func(x records.Record) error {
			if h.BaseOffset+int64(x.OffsetDelta) != off {
				return nil
			}
			found = true
			rec = records.Record{Key: clone(x.Key), Value: clone(x.Value)}
			for _, hd := range x.Headers {
				rec.Headers = append(rec.Headers, records.RecordHeader{Key: hd.Key, Value: clone(hd.Value)})
			}
			return nil
		})
		return rec, found, err
	}
	return rec, false, kerr.OffsetNotAvailable
}

// clone copies b, keeping nil as nil (a null key or value).
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// dlqWait registers the handler of a copy's answer.
func (r *Reactor) dlqWait(id uint64, done func(code int16)) {
	d := &r.shares.dlq
	if d.waiting == nil {
		d.waiting = map[uint64]func(int16){}
	}
	d.waiting[id] = done
}

// sendDeadLetter sends a copy to its partition's leader (or appends it
// here when this broker leads it). No leader yet: the tick sends again.
func (r *Reactor) sendDeadLetter(c *dlqCopy) {
	c.sentAt = r.monoNow()
	_, cp, ok := r.ctl.state.PartitionByGroup(c.group)
	if !ok {
		return
	}
	leader, _ := r.partitionLeader(cp)
	m := dlqAppendMsg{id: c.id, group: c.group, topic: c.topic, batch: append([]byte{}, c.batch...)}
	switch {
	case leader <= 0:
	case uint64(leader) == r.self:
		r.dlqAppend(m, func(code int16) { r.dlqAnswered(c.id, code) })
	default:
		r.env.Net.Send(netx.NodeID(leader), m.encode())
	}
}

// dlqAnswered hands a copy's answer to its sender (once: a duplicate or
// late answer finds no handler).
func (r *Reactor) dlqAnswered(id uint64, code int16) {
	d := &r.shares.dlq
	done := d.waiting[id]
	if done == nil {
		return
	}
	delete(d.waiting, id)
	done(code)
}

// deadLetterAnswered acts on the leader's answer to copy c of k: archive
// the record once the copy is committed; start over with a new producer
// when the partition refused the sequence; archive uncopied what can never
// be copied; otherwise send again later.
func (r *Reactor) deadLetterAnswered(sh *shareShard, k share.Key, c *dlqCopy, code int16) {
	copies := r.dlqCopies(sh)
	if copies[k] != c || r.shares.shards[sh.raftGroup] != sh {
		return // the shard moved on: its successor copies again
	}
	sp := sh.parts[k]
	switch code {
	case 0:
		r.archiveDeadLetter(sh, k, c.off, true)
	case kerr.OutOfOrderSequenceNumber.Code, kerr.InvalidProducerEpoch.Code, kerr.UnknownProducerID.Code:
		r.env.Logf("node %d: dead letter %s-%d@%d: %s refused producer %d: a new producer id", r.self,
			k.Topic, k.Partition, c.off, c.topic, sp.DeadLetterProducer().PID)
		sp.SetDeadLetterProducer(-1)
		delete(copies, k)
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidRecord.Code, kerr.CorruptMessage.Code:
		r.env.Logf("node %d: dead letter %s-%d@%d cannot be written to %s (%s): archived uncopied", r.self,
			k.Topic, k.Partition, c.off, c.topic, errName(code))
		r.shares.counters.of(k.Group).DeadLetterDropped++
		r.archiveDeadLetter(sh, k, c.off, false)
	default:
		r.dlqWait(c.id, func(code int16) { r.deadLetterAnswered(sh, k, c, code) })
		c.sentAt = r.monoNow() // sent again at the next dlqResend
	}
}

func errName(code int16) string {
	if err := kerr.ErrorForCode(code); err != nil {
		return err.Error()
	}
	return "unknown error"
}

// archiveDeadLetter archives k's dead letter at off (its copy committed
// when copied) with one state write, then starts the next copy.
func (r *Reactor) archiveDeadLetter(sh *shareShard, k share.Key, off int64, copied bool) {
	copies := r.dlqCopies(sh)
	c := copies[k]
	if c == nil {
		c = &dlqCopy{off: off}
		copies[k] = c
	}
	c.busy = true
	if err := sh.parts[k].DeadLettered(off, copied); err != nil {
		delete(copies, k)
		return
	}
	r.writeShareStates(sh, []share.Key{k}, func(err error) {
		if copies[k] == c {
			delete(copies, k)
		}
		if err == nil {
			if copied {
				r.shares.counters.of(k.Group).DeadLettered++
			}
			r.pumpDeadLetters(sh)
		}
	})
}

// archiveUnlettered archives, uncopied, k's DeadLettering records of a
// group that has no dead-letter topic, once a metadata barrier confirms
// it has none: a topic set before a record was rejected (or reached its
// limit) is then known here, and the record is copied instead. Only the
// records that were waiting when the barrier was asked for are archived.
// A copy or an archive in flight goes first.
func (r *Reactor) archiveUnlettered(sh *shareShard, k share.Key) {
	copies := r.dlqCopies(sh)
	if copies[k] != nil {
		return
	}
	offs := sh.parts[k].DeadLetteringOffsets()
	if len(offs) == 0 {
		return
	}
	c := &dlqCopy{off: offs[0], busy: true}
	copies[k] = c
	r.afterFreshMetadata(func() {
		if copies[k] != c || r.shares.shards[sh.raftGroup] != sh {
			return
		}
		if r.groupShareConfig(k.Group).DeadLetterTopic != "" {
			delete(copies, k) // set after all: the next pump copies them
			return
		}
		sp := sh.parts[k]
		for _, off := range offs {
			_ = sp.DeadLettered(off, false) // archived meanwhile (trimmed): nothing to do
		}
		r.writeShareStates(sh, []share.Key{k}, func(error) {
			if copies[k] == c {
				delete(copies, k)
			}
		})
	})
}

// dlqAppendMsg is a copy for the dead-letter partition's leader.
type dlqAppendMsg struct {
	id    uint64
	group uint64
	topic string
	batch []byte
}

func (m dlqAppendMsg) encode() []byte {
	var w wire.Writer
	w.U8(frameRPC)
	w.U8(rpcShareDLQAppend)
	w.Uvarint(m.id)
	w.Uvarint(m.group)
	w.String(m.topic)
	w.Bytes(m.batch)
	return w.B
}

// handleShareDLQRPC handles the dead-letter RPCs (the reader is past the
// kind).
func (r *Reactor) handleShareDLQRPC(from uint64, kind uint8, rd *wire.Reader) {
	switch kind {
	case rpcShareDLQAppend:
		m := dlqAppendMsg{id: rd.Uvarint(), group: rd.Uvarint(), topic: rd.String(), batch: rd.Bytes()}
		if rd.Done() != nil {
			r.stats.BadFrames++
			return
		}
		r.dlqAppend(m, func(code int16) {
			var w wire.Writer
			w.U8(frameRPC)
			w.U8(rpcShareDLQAck)
			w.Uvarint(m.id)
			w.Varint(int64(code))
			r.env.Net.Send(netx.NodeID(from), w.B)
		})
	case rpcShareDLQAck:
		id, code := rd.Uvarint(), int16(rd.Varint())
		if rd.Done() != nil {
			r.stats.BadFrames++
			return
		}
		r.dlqAnswered(id, code)
	}
}

// dlqAppend, on the leader of a dead-letter partition, appends a copy and
// answers once it is committed (0) or refused for good. A copy it cannot
// take now (not the ready leader, the partition not the named topic's)
// gets no answer: the sender sends it again.
func (r *Reactor) dlqAppend(m dlqAppendMsg, answer func(code int16)) {
	t, _, known := r.ctl.state.PartitionByGroup(m.group)
	p, ok := r.parts[m.group]
	if !known || t.Name != m.topic || t.Internal || !ok || !p.Ready() {
		return
	}
	h, err := records.Verify(m.batch)
	if err != nil || h.RecordCount != 1 || !h.HasProducerID() {
		r.stats.BadFrames++
		answer(kerr.CorruptMessage.Code)
		return
	}
	if max := p.Cfg.MaxMessageBytes; max > 0 && len(m.batch) > max {
		answer(kerr.MessageTooLarge.Code)
		return
	}
	res, err := p.Append(m.batch, h, r.env.Clock.Now())
	switch {
	case err == kerr.OutOfOrderSequenceNumber || err == kerr.InvalidProducerEpoch:
		answer(errCode(err))
		return
	case err != nil:
		return
	}
	p.WaitCommit(res.Index, res.Term, res.BaseOffset, func(err error) {
		if err == nil {
			answer(0)
		}
	})
	r.queueProcess()
}

// anyDeadLetterTopic reports whether some group has a dead-letter topic.
func (r *Reactor) anyDeadLetterTopic() bool {
	for _, g := range sortedKeys(r.ctl.state.GroupConfigs) {
		if r.ctl.state.GroupConfigs[g][dlqTopicConfig] != "" {
			return true
		}
	}
	return r.cfg.Shares.DeadLetterTopic != ""
}
