package txn

import (
	"errors"
	"math"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/internal/plant"
)

// Coordinator serves the transactional ids of one __transaction_state
// partition while its node leads that partition.
//
// Lifecycle: New, then Replay for every committed record of the partition
// in log order, then Start (which resends the markers of every decided
// transaction and arms the timeouts of open ones); serve requests; Close
// when leadership is lost. After Close, writes and markers still in flight
// answer their requests NOT_COORDINATOR and start nothing new.
//
// Invariants: a txn's committed fields are what the last committed record
// says; busy is set exactly while a write of it (or its markers) is in
// flight; Partitions is empty outside Ongoing and the Prepare states.
type Coordinator struct {
	cfg     Config
	env     Env
	txns    map[string]*txnMeta
	started bool
	closed  bool
	token   uint64
	stats   Stats
}

// txnMeta is one transactional id.
type txnMeta struct {
	id         string
	pid        int64
	epoch      int16
	timeoutMs  int32
	state      State
	partitions []TopicPartition // sorted
	startMs    int64            // wall time the transaction started (Ongoing)
	updateMs   int64            // wall time of the last record

	busy     bool          // a record or the markers are in flight
	deadline time.Duration // monotonic: when an Ongoing transaction times out
	timer    uint64        // token of the armed timeout
}

// Stats counts what the coordinator did, for metrics.
type Stats struct {
	Starts        int64 // transactions begun (Empty/Complete → Ongoing)
	Commits       int64
	AbortsByEnd   int64 // EndTxn(abort)
	AbortsByTime  int64 // transaction.timeout.ms passed
	AbortsByFence int64 // InitProducerId fenced an open transaction
	MarkerRetries int64
}

// New returns a coordinator with no transactional ids.
func New(cfg Config, env Env) *Coordinator {
	return &Coordinator{cfg: cfg.WithDefaults(), env: env, txns: map[string]*txnMeta{}}
}

// Start ends the replay: decided transactions get their markers sent again
// and open ones a timeout counted from now (the coordinator cannot know how
// long the previous one had let them run, so it gives them a full timeout).
func (c *Coordinator) Start(now time.Duration) {
	if c.started {
		return
	}
	c.started = true
	for _, id := range c.ids() {
		m := c.txns[id]
		switch {
		case m.state.decided():
			c.sendMarkers(m)
		case m.state == Ongoing:
			c.armTimeout(m, now)
		}
	}
}

// Close stops the coordinator (its node lost leadership of the partition).
func (c *Coordinator) Close() { c.closed = true }

// Closed reports whether Close was called.
func (c *Coordinator) Closed() bool { return c.closed }

// Stats returns the counters.
func (c *Coordinator) Stats() Stats { return c.stats }

func (c *Coordinator) ids() []string {
	ids := make([]string, 0, len(c.txns))
	for id := range c.txns { //floe:unordered sorted below
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (c *Coordinator) wallMillis() int64 {
	if c.env.WallMillis == nil {
		return 0
	}
	return c.env.WallMillis()
}

// next is the metadata a transition writes: a copy with the changes.
func (m *txnMeta) next() txnMeta {
	n := *m
	n.partitions = append([]TopicPartition(nil), m.partitions...)
	return n
}

// commit makes the written metadata n the committed state of m.
func (m *txnMeta) commit(n txnMeta) {
	m.pid, m.epoch, m.timeoutMs, m.state = n.pid, n.epoch, n.timeoutMs, n.state
	m.partitions, m.startMs, m.updateMs = n.partitions, n.startMs, n.updateMs
}

// write makes n durable and then the committed state of m. m is busy until
// done runs; done gets the error a request is told.
func (c *Coordinator) write(m *txnMeta, n txnMeta, done func(now time.Duration, err *kerr.Error)) {
	if !canMove(m.state, n.state) {
		done(0, kerr.InvalidTxnState)
		return
	}
	n.updateMs = c.wallMillis()
	m.busy = true
	c.env.Log.Write([]Record{{Key: metaKey(m.id), Value: metaValue(n)}}, func(now time.Duration, err error) {
		m.busy = false
		if c.closed {
			done(now, kerr.NotCoordinator)
			return
		}
		if err != nil {
			done(now, storeError(err))
			return
		}
		m.commit(n)
		done(now, nil)
	})
}

// check is the common validation of a request naming a transactional id,
// its producer id and epoch.
func (c *Coordinator) check(id string, pid int64, epoch int16) (*txnMeta, *kerr.Error) {
	if c.closed {
		return nil, kerr.NotCoordinator
	}
	m := c.txns[id]
	switch {
	case m == nil || m.pid != pid:
		return nil, kerr.InvalidProducerIDMapping
	case epoch != m.epoch:
		return nil, kerr.ProducerFenced
	case m.busy:
		return nil, kerr.ConcurrentTransactions
	}
	return m, nil
}

// InitProducerID answers InitProducerId for a transactional id: a producer
// id and a new epoch. timeoutMs is the producer's transaction.timeout.ms;
// pid and epoch are what a v3+ client already holds (-1 otherwise). An
// open transaction is aborted at the new epoch first: the client is told
// CONCURRENT_TRANSACTIONS and retries.
func (c *Coordinator) InitProducerID(id string, timeoutMs int32, pid int64, epoch int16, now time.Duration, done func(pid int64, epoch int16, err *kerr.Error)) {
	fail := func(err *kerr.Error) { done(-1, -1, err) }
	switch {
	case c.closed:
		fail(kerr.NotCoordinator)
		return
	case timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > c.cfg.MaxTimeout:
		fail(kerr.InvalidTransactionTimeout)
		return
	}
	m := c.txns[id]
	if m == nil {
		c.env.ProducerIDs.Next(func(newPID int64, err error) {
			if err != nil {
				fail(storeError(err))
				return
			}
			if c.closed {
				fail(kerr.NotCoordinator)
				return
			}
			if c.txns[id] != nil {
				fail(kerr.ConcurrentTransactions) // another init got there first
				return
			}
			m := &txnMeta{id: id, pid: -1, epoch: -1, state: Empty}
			c.txns[id] = m
			c.bump(m, newPID, 0, timeoutMs, done)
		})
		return
	}
	switch {
	case m.busy || m.state.decided():
		fail(kerr.ConcurrentTransactions)
		return
	case pid >= 0 && (pid != m.pid || epoch != m.epoch):
		fail(kerr.ProducerFenced)
		return
	case m.state == Ongoing:
		c.stats.AbortsByFence++
		c.abort(m, true, func(*kerr.Error) {})
		fail(kerr.ConcurrentTransactions)
		return
	}
	if m.epoch < math.MaxInt16-1 {
		c.bump(m, m.pid, m.epoch+1, timeoutMs, done)
		return
	}
	c.env.ProducerIDs.Next(func(newPID int64, err error) {
		switch {
		case err != nil:
			fail(storeError(err))
		case c.closed:
			fail(kerr.NotCoordinator)
		case m.busy || m.state.decided() || m.state == Ongoing:
			fail(kerr.ConcurrentTransactions)
		default:
			c.bump(m, newPID, 0, timeoutMs, done)
		}
	})
}

// bump writes m as Empty at (pid, epoch) and answers with them.
func (c *Coordinator) bump(m *txnMeta, pid int64, epoch int16, timeoutMs int32, done func(int64, int16, *kerr.Error)) {
	n := m.next()
	n.pid, n.epoch, n.timeoutMs, n.state, n.partitions, n.startMs = pid, epoch, timeoutMs, Empty, nil, -1
	c.write(m, n, func(_ time.Duration, err *kerr.Error) {
		if err != nil {
			if m.pid < 0 {
				delete(c.txns, m.id) // its first record never committed
			}
			done(-1, -1, err)
			return
		}
		done(pid, epoch, nil)
	})
}

// AddPartitions adds partitions to the producer's transaction, starting it
// if none is open. A partition of __consumer_offsets stands for a group's
// offsets (AddOffsetsToTxn). err is the answer for every partition.
func (c *Coordinator) AddPartitions(id string, pid int64, epoch int16, tps []TopicPartition, now time.Duration, done func(err *kerr.Error)) {
	m, err := c.check(id, pid, epoch)
	if err != nil {
		done(err)
		return
	}
	switch m.state {
	case PrepareCommit, PrepareAbort:
		done(kerr.ConcurrentTransactions)
		return
	case Empty, CompleteCommit, CompleteAbort, Ongoing:
	default:
		done(kerr.InvalidTxnState)
		return
	}
	parts, grew := unionTPs(m.partitions, tps)
	starts := m.state != Ongoing
	if !starts && !grew {
		done(nil)
		return
	}
	n := m.next()
	n.partitions = parts
	if starts {
		n.state, n.startMs = Ongoing, c.wallMillis()
	}
	c.write(m, n, func(now time.Duration, err *kerr.Error) {
		if err == nil && starts {
			c.stats.Starts++
			c.armTimeout(m, now)
		}
		done(err)
	})
}

// Verify reports, per partition, whether it is part of the producer's open
// transaction: the check a partition leader makes before a transactional
// append (KIP-890 part 1, AddPartitionsToTxn VerifyOnly). The error is
// for all partitions (the producer's own state is wrong); otherwise absent
// partitions get INVALID_TXN_STATE.
func (c *Coordinator) Verify(id string, pid int64, epoch int16, tps []TopicPartition) ([]*kerr.Error, *kerr.Error) {
	if c.closed {
		return nil, kerr.NotCoordinator
	}
	m := c.txns[id]
	switch {
	case m == nil || m.pid != pid:
		return nil, kerr.InvalidProducerIDMapping
	case epoch != m.epoch:
		return nil, kerr.ProducerFenced
	}
	out := make([]*kerr.Error, len(tps))
	for i, tp := range tps {
		if m.state != Ongoing || !containsTP(m.partitions, tp) {
			out[i] = kerr.InvalidTxnState
		}
	}
	return out, nil
}

// EndTxn commits or aborts the producer's transaction. It answers once the
// decision (PrepareCommit or PrepareAbort) is durable; the markers follow.
// A retry of an EndTxn that already completed succeeds.
func (c *Coordinator) EndTxn(id string, pid int64, epoch int16, commit bool, now time.Duration, done func(err *kerr.Error)) {
	m, err := c.check(id, pid, epoch)
	if err != nil {
		done(err)
		return
	}
	switch {
	case m.state == Ongoing && commit:
		c.prepare(m, PrepareCommit, false, done)
	case m.state == Ongoing:
		c.stats.AbortsByEnd++
		c.abort(m, false, done)
	case m.state == CompleteCommit && commit, m.state == CompleteAbort && !commit:
		done(nil)
	case m.state == PrepareCommit && commit, m.state == PrepareAbort && !commit:
		done(kerr.ConcurrentTransactions)
	default:
		done(kerr.InvalidTxnState)
	}
}

// EndTxnV2 is EndTxn for a client of transaction version 2 (KIP-890 part
// 2, EndTxn v5+): every decision bumps the producer epoch, written with
// the decision, so the markers carry the new epoch and fence whatever the
// client still had in flight at the old one (a late produce, which would
// otherwise join the next transaction at the same epoch; a late EndTxn,
// which would end it). done gets the producer id and epoch the client
// uses next. A retry at the previous epoch of an end that completed
// succeeds with the current epoch; an abort with nothing open (Kafka's
// empty abort) bumps the epoch too. When the epoch is exhausted it is not
// bumped (docs/transactions.md, Not done).
func (c *Coordinator) EndTxnV2(id string, pid int64, epoch int16, commit bool, now time.Duration, done func(pid int64, epoch int16, err *kerr.Error)) {
	m := c.txns[id]
	answer := func(err *kerr.Error) {
		if err != nil {
			done(-1, -1, err)
			return
		}
		done(m.pid, m.epoch, nil)
	}
	switch {
	case c.closed:
		answer(kerr.NotCoordinator)
		return
	case m == nil || m.pid != pid:
		answer(kerr.InvalidProducerIDMapping)
		return
	case m.busy:
		answer(kerr.ConcurrentTransactions)
		return
	case epoch == m.epoch-1:
		answer(retriedEnd(m.state, commit))
		return
	case epoch != m.epoch:
		answer(kerr.ProducerFenced)
		return
	}
	bump := m.epoch < math.MaxInt16-1 && !plant.Enabled(plant.TxnEndNoBump)
	switch {
	case m.state == Ongoing && commit:
		c.prepare(m, PrepareCommit, bump, answer)
	case m.state == Ongoing:
		c.stats.AbortsByEnd++
		c.prepare(m, PrepareAbort, bump, answer)
	case !commit && (m.state == Empty || m.state == CompleteCommit || m.state == CompleteAbort) && bump:
		c.bump(m, m.pid, m.epoch+1, m.timeoutMs, func(_ int64, _ int16, err *kerr.Error) { answer(err) })
	case !commit && (m.state == Empty || m.state == CompleteCommit || m.state == CompleteAbort):
		answer(nil)
	case m.state == PrepareCommit, m.state == PrepareAbort:
		answer(kerr.ConcurrentTransactions)
	default:
		answer(kerr.InvalidTxnState)
	}
}

// retriedEnd answers an EndTxn v5 at the epoch before m's: the retry of an
// end that bumped it (the client never saw the answer). The same decision
// succeeds once complete (the client is told the current epoch); anything
// else is a fenced producer.
func retriedEnd(st State, commit bool) *kerr.Error {
	switch {
	case st == CompleteCommit && commit, st == CompleteAbort && !commit:
		return nil
	case st == PrepareCommit && commit, st == PrepareAbort && !commit:
		return kerr.ConcurrentTransactions
	}
	return kerr.ProducerFenced
}

// abort decides to abort m's open transaction; bumpEpoch fences its
// producer (a timeout or another InitProducerId), unless the epoch is
// exhausted, in which case the next InitProducerId hands out a new id.
func (c *Coordinator) abort(m *txnMeta, bumpEpoch bool, done func(*kerr.Error)) {
	c.prepare(m, PrepareAbort, bumpEpoch && m.epoch < math.MaxInt16-1, done)
}

// prepare writes the decision and, once it is durable, sends the markers.
func (c *Coordinator) prepare(m *txnMeta, to State, bumpEpoch bool, done func(err *kerr.Error)) {
	n := m.next()
	n.state = to
	if bumpEpoch {
		n.epoch++
	}
	if to == PrepareCommit && plant.Enabled(plant.TxnMarkerBeforeDecision) {
		// Planted bug: the commit markers go out before the decision is
		// durable; a failed write then leaves a torn transaction.
		c.env.Markers.Write(Marker{TransactionalID: m.id, ProducerID: m.pid, ProducerEpoch: m.epoch, Commit: true,
			CoordinatorEpoch: c.env.Epoch, Partitions: append([]TopicPartition(nil), m.partitions...)}, func(time.Duration, error) {})
	}
	c.write(m, n, func(_ time.Duration, err *kerr.Error) {
		if err == nil {
			m.timer = 0 // the transaction's timeout no longer applies
			if to == PrepareCommit {
				c.stats.Commits++
			}
			c.sendMarkers(m)
		}
		done(err)
	})
}

// sendMarkers writes the markers of m's decided transaction, then its
// Complete record; on a failure it tries again after RetryBackoff, for as
// long as the coordinator is open.
func (c *Coordinator) sendMarkers(m *txnMeta) {
	if c.closed {
		return
	}
	mk := Marker{
		TransactionalID: m.id, ProducerID: m.pid, ProducerEpoch: m.epoch, Commit: m.state == PrepareCommit,
		CoordinatorEpoch: c.env.Epoch, Partitions: append([]TopicPartition(nil), m.partitions...),
	}
	m.busy = true
	c.env.Markers.Write(mk, func(now time.Duration, err error) {
		m.busy = false
		if c.closed {
			return
		}
		if err != nil {
			c.retryMarkers(m)
			return
		}
		n := m.next()
		n.state, n.partitions = CompleteAbort, nil
		if mk.Commit {
			n.state = CompleteCommit
		}
		c.write(m, n, func(_ time.Duration, err *kerr.Error) {
			if err != nil && !c.closed {
				c.retryMarkers(m)
			}
		})
	})
}

func (c *Coordinator) retryMarkers(m *txnMeta) {
	c.stats.MarkerRetries++
	m.busy = true
	c.env.Timers.After(c.cfg.RetryBackoff, func(time.Duration) {
		m.busy = false
		c.sendMarkers(m)
	})
}

// armTimeout arms m's transaction timeout, counted from now.
func (c *Coordinator) armTimeout(m *txnMeta, now time.Duration) {
	c.token++
	tok := c.token
	m.timer = tok
	d := time.Duration(m.timeoutMs) * time.Millisecond
	m.deadline = now + d
	c.env.Timers.After(d, func(now time.Duration) { c.timeout(m, tok, now) })
}

// timeout aborts m's transaction if it is still the one the timer was
// armed for and still open. A busy transaction (a write in flight) is
// looked at again after RetryBackoff.
func (c *Coordinator) timeout(m *txnMeta, tok uint64, now time.Duration) {
	if c.closed || m.timer != tok {
		return
	}
	m.timer = 0
	if m.state != Ongoing {
		return
	}
	if m.busy {
		m.timer = tok
		c.env.Timers.After(c.cfg.RetryBackoff, func(now time.Duration) { c.timeout(m, tok, now) })
		return
	}
	c.stats.AbortsByTime++
	c.abort(m, true, func(*kerr.Error) {
		if m.state == Ongoing && !c.closed && m.timer == 0 {
			// The decision did not become durable: try again.
			m.timer = tok
			c.env.Timers.After(c.cfg.RetryBackoff, func(now time.Duration) { c.timeout(m, tok, now) })
		}
	})
}

// storeError maps a log or producer-id error to what a transactional
// request is told: the partition moved → NOT_COORDINATOR (the client looks
// for the coordinator again), anything else transient →
// COORDINATOR_NOT_AVAILABLE.
func storeError(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.NotLeaderForPartition, kerr.NotCoordinator, kerr.KafkaStorageError:
			return kerr.NotCoordinator
		case kerr.ConcurrentTransactions, kerr.InvalidTxnState:
			return ke
		}
	}
	return kerr.CoordinatorNotAvailable
}
