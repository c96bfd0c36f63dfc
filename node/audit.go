package node

// The audit log on the node: records go to the internal topic __audit_log,
// chained per partition (node/audit).
//
// Every broker generates records (auditEvent) for what it sees: the
// authentications of its connections, its authorization decisions, the
// changes its clients ask for. It queues them (bounded: past
// AuditConfig.QueueMax new records are dropped and counted) and sends them
// to the leader of one partition of __audit_log, self % partitions, as an
// idempotent producer: a producer id from the controller, sequence numbers
// from 0, one batch in flight at a time, the same batch sent again until
// the leader acknowledges it committed. The leader (rpcAuditAppend, or a
// direct call when it is this broker) links each record to the one before
// it in the partition (audit.Link), appends one batch under the sender's
// producer id and sequence, and acknowledges (rpcAuditAck) once the batch
// is committed. The partition's producer table (node/partition) makes a
// resent batch a duplicate, whichever leader gets it, so a record is
// written once even across failovers.
//
// The chain across failovers: only the partition's ready leader appends,
// and it takes the link to its first record from its own log, once per
// term (auditShard): the hash of the last record in the log. A ready leader
// has committed an entry of its own term, so everything in its log before
// that is committed and stays; after it come only its own appends. An
// append the old leader made that the new one lacks was never committed;
// its sender had no ack, sends it again, and the new leader links it to
// its own log's last record. So every partition's records, in offset
// order, form one chain.
//
// What is lost: the records in a broker's queue when it crashes (not yet
// acknowledged); records dropped by a full queue (Stats.AuditDropped). A
// sender that gets OUT_OF_ORDER_SEQUENCE_NUMBER or INVALID_PRODUCER_EPOCH
// (its producer state was lost) starts over with a new producer id, which
// may write its in-flight batch twice (the copies have distinct
// positions in the chain and the same metadata.uid).

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/internal/plant"
	"github.com/floe-broker/floe/internal/wire"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/audit"
	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/partition"
	"github.com/floe-broker/floe/node/records"
)

// AuditTopic is the internal topic holding the audit log.
const AuditTopic = "__audit_log"

// Audit RPCs (beside rpcForward and friends in rpc.go).
const (
	rpcAuditAppend = 10 // a sender's batch of records for the partition leader
	rpcAuditAck    = 11 // the leader: the batch is committed (or failed for good)
)

const (
	// auditResend is how long a sender waits for an ack before sending
	// the same batch again (the leader may have changed).
	auditResend = time.Second
	// auditBatchRecords and auditBatchBytes bound one batch.
	auditBatchRecords = 500
	auditBatchBytes   = 256 << 10
)

// auditState is the node's audit log state.
//
// Invariant: queue[:inflight] is the batch in flight (sent under pid with
// sequences from firstSeq, and not acknowledged); inflight is 0 when none
// is. pid < 0 until a producer id arrives.
type auditState struct {
	nonce, seq uint64 // record uids: node-nonce-seq

	queue    [][]byte // unlinked records, oldest first
	pid      int64
	firstSeq int32
	inflight int
	sentAt   time.Duration

	started    bool
	allocating bool
	creating   bool

	shards map[uint64]*auditShard // audit partitions this broker leads, by Raft group
}

// auditShard is a led partition of __audit_log: the hash its next record
// links to, valid for the term it was loaded in.
type auditShard struct {
	term uint64
	head [32]byte
}

// auditEvent records an event seen on connection c (its principal,
// address, listener and client id fill the event's).
func (r *Reactor) auditEvent(c Client, e audit.Event) {
	cfg := r.cfg.Security.Audit
	if !cfg.Enabled && r.env.AuditSink == nil {
		return
	}
	a := &r.sec.audit
	if a.nonce == 0 {
		a.nonce = r.env.Rand.Uint64() | 1
	}
	a.seq++
	e.TimeMs = r.env.Clock.Now().UnixMilli()
	e.Node = int32(r.self)
	e.UID = formatUID(r.self, a.nonce, a.seq)
	if e.Principal == "" {
		e.Principal = principalOf(c)
	}
	e.Client, e.ClientID, e.Listener = c.Remote, c.ClientID, c.Listener
	rec := e.Record().Marshal()
	if r.env.AuditSink != nil {
		r.env.AuditSink(rec)
	}
	if !cfg.Enabled {
		return
	}
	if len(a.queue) >= cfg.QueueMax {
		r.stats.AuditDropped++
		return
	}
	a.queue = append(a.queue, rec)
	r.stats.AuditRecords++
	r.auditPump()
}

func formatUID(node, nonce, seq uint64) string {
	return strconv.FormatUint(node, 10) + "-" + strconv.FormatUint(nonce, 16) + "-" + strconv.FormatUint(seq, 10)
}

// AuditAuthentication records an authentication on connection c: its
// outcome, the mechanism ("PLAIN", "SCRAM-SHA-256", "OAUTHBEARER", "SSL"),
// and why it failed. principal is who it was for (the claimed one when it
// failed). The transport's authentication code calls it on the reactor's
// thread; it never takes a password or token.
func (r *Reactor) AuditAuthentication(c Client, principal, mechanism string, ok bool, reason string) {
	r.auditEvent(c, audit.Event{Kind: audit.Authentication, Principal: principal, API: "SaslAuthenticate",
		Action: "authenticate", Mechanism: mechanism, Success: ok, Reason: reason,
		Resource: audit.Resource{Type: "principal", Name: principal}})
}

// auditPump sends the batch at the head of the queue when none is in
// flight: creating __audit_log or taking a producer id first if need be.
func (r *Reactor) auditPump() {
	a := &r.sec.audit
	if !a.started {
		a.started, a.pid = true, -1
	}
	if a.inflight > 0 || len(a.queue) == 0 {
		return
	}
	if r.ctl.state.Topics[AuditTopic] == nil {
		r.ensureAuditTopic()
		return
	}
	if a.pid < 0 {
		if !a.allocating {
			a.allocating = true
			r.allocProducerID(func(pid int64, err error) {
				a.allocating = false
				if err == nil {
					a.pid, a.firstSeq = pid, 0
					r.auditPump()
				}
			})
		}
		return
	}
	n, size := 0, 0
	for n < len(a.queue) && n < auditBatchRecords && (n == 0 || size+len(a.queue[n]) <= auditBatchBytes) {
		size += len(a.queue[n])
		n++
	}
	a.inflight = n
	r.auditSend()
}

// auditSend sends the batch in flight to its partition's leader.
func (r *Reactor) auditSend() {
	a := &r.sec.audit
	a.sentAt = r.env.Clock.Monotonic()
	t := r.ctl.state.Topics[AuditTopic]
	if t == nil || len(t.Partitions) == 0 {
		return
	}
	cp := &t.Partitions[int(r.self%uint64(len(t.Partitions)))]
	m := auditAppendMsg{group: cp.Group, pid: a.pid, firstSeq: a.firstSeq, records: a.queue[:a.inflight]}
	leader, _ := r.partitionLeader(cp)
	switch {
	case leader <= 0:
		// Nobody to send to yet; the tick sends again.
	case uint64(leader) == r.self:
		r.auditAppend(r.self, m)
	default:
		r.env.Net.Send(netx.NodeID(leader), m.encode())
	}
}

// auditTick resends a batch that waited too long for its ack, and drops
// the shards of partitions this broker no longer leads.
func (r *Reactor) auditTick() {
	a := &r.sec.audit
	if !r.cfg.Security.Audit.Enabled {
		return
	}
	if a.inflight > 0 && r.env.Clock.Monotonic()-a.sentAt >= auditResend {
		r.auditSend()
	}
	if len(a.queue) > 0 && a.inflight == 0 {
		r.auditPump()
	}
	for _, g := range sortedKeys(a.shards) {
		if p, ok := r.parts[g]; !ok || (!plant.Enabled(plant.AuditStaleChainHead) && (!p.Ready() || p.Term() != a.shards[g].term)) {
			delete(a.shards, g)
		}
	}
}

// ensureAuditTopic asks the controller to create __audit_log, once at a
// time, waiting (like __consumer_offsets) for enough brokers to replicate
// it.
func (r *Reactor) ensureAuditTopic() {
	a := &r.sec.audit
	if a.creating || r.ctl.state.Topics[AuditTopic] != nil {
		return
	}
	if r.cfg.DefaultReplication == 0 && len(r.cfg.Peers) > 0 && len(r.ctl.state.Brokers) < min(3, len(r.cfg.Peers)) {
		return
	}
	cfg := r.cfg.Security.Audit
	t, err := r.planTopic(topicSpec{
		name: AuditTopic, partitions: cfg.Partitions, replication: -1, internal: true,
		configs: map[string]string{"cleanup.policy": "delete", "retention.ms": formatMs(cfg.Retention)},
	})
	if err != nil {
		r.env.Logf("node %d: plan %s: %v", r.self, AuditTopic, err)
		return
	}
	a.creating = true
	r.propose(&controller.Command{CreateTopic: t}, func(controller.Result) {
		a.creating = false
		r.auditPump()
	})
}

func formatMs(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// auditAppendMsg is a sender's batch for a partition leader.
type auditAppendMsg struct {
	group    uint64
	pid      int64
	firstSeq int32
	records  [][]byte
}

func (m auditAppendMsg) encode() []byte {
	var w wire.Writer
	w.U8(frameRPC)
	w.U8(rpcAuditAppend)
	w.Uvarint(m.group)
	w.Varint(m.pid)
	w.Varint(int64(m.firstSeq))
	w.Uvarint(uint64(len(m.records)))
	for _, rec := range m.records {
		w.Bytes(rec)
	}
	return w.B
}

// handleAuditRPC handles the audit RPCs (the reader is past the kind).
func (r *Reactor) handleAuditRPC(from uint64, kind uint8, rd *wire.Reader) {
	switch kind {
	case rpcAuditAppend:
		m := auditAppendMsg{group: rd.Uvarint(), pid: rd.Varint(), firstSeq: int32(rd.Varint())}
		n := rd.Count(1)
		for i := 0; i < n && rd.Err() == nil; i++ {
			m.records = append(m.records, rd.Bytes())
		}
		if rd.Done() != nil || len(m.records) == 0 {
			r.stats.BadFrames++
			return
		}
		r.auditAppend(from, m)
	case rpcAuditAck:
		pid, lastSeq, code := rd.Varint(), int32(rd.Varint()), int16(rd.Varint())
		if rd.Done() != nil {
			r.stats.BadFrames++
			return
		}
		r.auditAcked(pid, lastSeq, code)
	}
}

// auditAppend, on the leader of an audit partition, links and appends a
// sender's batch and acknowledges it once committed. A batch it cannot
// take now (not the ready leader) gets no answer: the sender sends it
// again.
func (r *Reactor) auditAppend(from uint64, m auditAppendMsg) {
	p, ok := r.parts[m.group]
	if t, _, known := r.ctl.state.PartitionByGroup(m.group); !known || t.Name != AuditTopic {
		return
	}
	if !ok || !p.Ready() {
		return
	}
	sh := r.auditShard(p)
	if sh == nil {
		return
	}
	now := r.env.Clock.Now()
	head := sh.head
	recs := make([]records.Record, len(m.records))
	for i, raw := range m.records {
		rec, err := audit.Unmarshal(raw)
		if err != nil {
			r.stats.BadFrames++
			return
		}
		v := audit.Link(rec, head)
		head = audit.Hash(v)
		recs[i] = records.Record{Value: v}
	}
	batch := records.Build(records.BuildOptions{Codec: records.CodecNone, BaseTimestamp: now.UnixMilli(),
		Producer: &records.Producer{ID: m.pid, BaseSequence: m.firstSeq}}, recs)
	lastSeq := partition.LastSeq(m.firstSeq, int32(len(recs)))
	h, err := records.ParseHeader(batch)
	if err != nil {
		return
	}
	if max := p.Cfg.MaxMessageBytes; max > 0 && len(batch) > max {
		r.auditAck(from, m.pid, lastSeq, kerr.MessageTooLarge.Code)
		return
	}
	res, err := p.Append(batch, h, now)
	switch {
	case err == kerr.OutOfOrderSequenceNumber || err == kerr.InvalidProducerEpoch:
		r.auditAck(from, m.pid, lastSeq, errCode(err))
		return
	case err != nil:
		return
	}
	if !res.Duplicate {
		sh.head = head
	}
	p.WaitCommit(res.Index, res.Term, res.BaseOffset, func(err error) {
		if err == nil {
			r.auditAck(from, m.pid, lastSeq, 0)
		}
	})
	r.queueProcess()
}

// auditShard returns the shard of a ready led audit partition, loading
// its head from the log when the term is new.
func (r *Reactor) auditShard(p *partition.Partition) *auditShard {
	a := &r.sec.audit
	g := uint64(p.Replica().Group)
	if sh := a.shards[g]; sh != nil && (sh.term == p.Term() || plant.Enabled(plant.AuditStaleChainHead)) {
		return sh
	}
	head, err := lastRecordHash(p)
	if err != nil {
		r.env.Logf("node %d: %s-%d: chain head: %v", r.self, p.Topic, p.Index, err)
		return nil
	}
	if a.shards == nil {
		a.shards = map[uint64]*auditShard{}
	}
	sh := &auditShard{term: p.Term(), head: head}
	a.shards[g] = sh
	return sh
}

// lastRecordHash is the chain hash of the last record in a partition's
// log (committed or not: on a ready leader, what follows the committed
// part is its own), or Genesis for an empty log.
func lastRecordHash(p *partition.Partition) ([32]byte, error) {
	log := p.Replica()
	next := log.NextOffset()
	if next <= log.StartOffset() {
		return audit.Genesis, nil
	}
	res, err := log.Read(next-1, 1<<20, next)
	if err != nil {
		return audit.Genesis, err
	}
	batches, err := records.Split(res.Data)
	if err != nil {
		return audit.Genesis, err
	}
	var last []byte
	found := false
	for _, b := range batches {
		err := records.Records(b, func(rec records.Record) error {
			last, found = rec.Value, true
			return nil
		})
		if err != nil {
			return audit.Genesis, err
		}
	}
	if !found {
		return audit.Genesis, nil
	}
	return audit.Hash(last), nil
}

func (r *Reactor) auditAck(to uint64, pid int64, lastSeq int32, code int16) {
	if to == r.self {
		r.auditAcked(pid, lastSeq, code)
		return
	}
	var w wire.Writer
	w.U8(frameRPC)
	w.U8(rpcAuditAck)
	w.Varint(pid)
	w.Varint(int64(lastSeq))
	w.Varint(int64(code))
	r.env.Net.Send(netx.NodeID(to), w.B)
}

// auditAcked takes a leader's answer for the batch in flight.
func (r *Reactor) auditAcked(pid int64, lastSeq int32, code int16) {
	a := &r.sec.audit
	if pid != a.pid || a.inflight == 0 || lastSeq != partition.LastSeq(a.firstSeq, int32(a.inflight)) {
		return // an answer to an earlier send
	}
	n := a.inflight
	a.inflight = 0
	switch code {
	case 0:
	case kerr.MessageTooLarge.Code:
		r.stats.AuditDropped += uint64(n)
		r.env.Logf("node %d: %d audit records dropped: larger than %s's max.message.bytes", r.self, n, AuditTopic)
	default:
		// The partition lost this producer's state: start over.
		a.pid = -1
		r.auditPump()
		return
	}
	a.queue = a.queue[n:]
	a.firstSeq = partition.LastSeq(a.firstSeq, int32(n)+1)
	r.auditPump()
}
