package workload

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"github.com/floe-broker/floe/jepsen/history"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The transactional workload (issue 16): TxnProducers producers, each
// under its own transactional id, run transactions over 1 to 3 partitions
// of TxnTopic (one unique value per partition), aborting TxnAbortProb of
// them on purpose, and reading (read_committed) after each write half of
// the time, consume-transform-produce style, for the G1c check; some send
// their group's offsets to the transaction (txnoffsets.go). One
// read_committed and one read_uncommitted reader poll random partitions.
// After the producers stop, a final read_committed read of every
// partition waits until its last stable offset reaches its high watermark
// (open transactions time out after TxnTimeout). jepsen/check's txn,
// lso-regression and txn-reads checkers judge the result; the first is
// the simulator's transactional checker.

const (
	txnAbortProb = 0.25
	txnReadProb  = 0.5
	txnReadBack  = 16 // how far below the last stable offset a read starts
)

// txnID names producer i's transactional id.
func txnID(i int) string { return fmt.Sprintf("jepsen-tx%d", i) }

// txnLoop runs producer i's transactions until ctx ends. After any error
// it closes its client and starts a new one under the same transactional
// id: InitProducerId fences the old one and settles its open transaction.
func (w *Workload) txnLoop(ctx context.Context, i int) {
	rnd := rand.New(rand.NewSource(w.cfg.Seed*1000 + 700 + int64(i)))
	var interval time.Duration
	if w.cfg.TxnRate > 0 {
		interval = time.Duration(float64(w.cfg.TxnProducers) / w.cfg.TxnRate * float64(time.Second))
	}
	for ctx.Err() == nil {
		cl, err := kgo.NewClient(producerOpts(w.cfg, w.cfg.TxnTopic,
			kgo.TransactionalID(txnID(i)),
			kgo.TransactionTimeout(w.cfg.TxnTimeout),
		)...)
		if err != nil {
			_ = sleep(ctx, time.Second)
			continue
		}
		t := &txnClient{w: w, cl: cl, proc: w.newProcess(), id: txnID(i), rnd: rnd, lso: map[int32]int64{}}
		for ctx.Err() == nil && t.one(ctx) {
			if interval > 0 {
				_ = sleep(ctx, time.Duration(float64(interval)*(0.5+rnd.Float64())))
			}
		}
		cl.Close()
		if ctx.Err() == nil {
			_ = sleep(ctx, 500*time.Millisecond)
		}
	}
}

// txnClient is one client of a transactional producer.
type txnClient struct {
	w    *Workload
	cl   *kgo.Client
	proc int64
	id   string
	rnd  *rand.Rand
	lso  map[int32]int64 // the largest LSO its reads saw, per partition
}

// one runs one transaction; false if the client must be replaced.
func (t *txnClient) one(ctx context.Context) bool {
	w := t.w
	n := 1 + t.rnd.Intn(int(min(3, w.cfg.TxnPartitions)))
	var recs []history.Record
	for _, p := range t.rnd.Perm(int(w.cfg.TxnPartitions))[:n] {
		v := fmt.Sprintf("t%d", w.txnValues.Add(1))
		recs = append(recs, history.Record{Topic: w.cfg.TxnTopic, Partition: int32(p), Offset: -1, Value: v})
	}
	abort := t.rnd.Float64() < txnAbortProb
	offs := t.txnOffsets(recs)
	inv := w.rec.Invoke(history.Op{Process: t.proc, F: history.Txn, Group: t.id, Records: recs, Abort: abort, Offsets: offs})
	// Operations keep their own deadlines: stopping the producers must
	// not turn a transaction in flight into an unknown one.
	octx := context.WithoutCancel(ctx)
	var reads []history.Record
	giveUp := func(err error) bool {
		// The commit was never asked for: whatever happens to the abort,
		// nothing of this transaction may become visible.
		t.cl.AbortBufferedRecords(octx)
		ectx, cancel := context.WithTimeout(octx, w.cfg.OpTimeout)
		aerr := t.cl.EndTransaction(ectx, kgo.TryAbort)
		cancel()
		typ := history.OK
		if aerr != nil {
			typ, err = history.Info, fmt.Errorf("%v; abort: %v", err, aerr)
		}
		w.rec.Complete(inv, typ, history.Op{Abort: true, Reads: reads, Error: err.Error()})
		return false
	}
	if err := t.cl.BeginTransaction(); err != nil {
		return giveUp(err)
	}
	for _, r := range recs {
		pctx, cancel := context.WithTimeout(octx, w.cfg.OpTimeout+time.Second)
		err := t.cl.ProduceSync(pctx, &kgo.Record{Topic: r.Topic, Partition: r.Partition, Value: []byte(r.Value)}).FirstErr()
		cancel()
		if err != nil {
			return giveUp(err)
		}
		if t.rnd.Float64() < txnReadProb {
			reads = append(reads, t.read(octx)...)
		}
	}
	if len(offs) > 0 {
		octx2, cancel := context.WithTimeout(octx, w.cfg.OpTimeout)
		err := t.sendOffsets(octx2, offs)
		cancel()
		if err != nil {
			return giveUp(fmt.Errorf("offsets: %w", err))
		}
	}
	var commitAt int64
	if !abort {
		commitAt = w.rec.Now()
	}
	ectx, cancel := context.WithTimeout(octx, w.cfg.OpTimeout)
	err := t.cl.EndTransaction(ectx, kgo.TransactionEndTry(!abort))
	cancel()
	if err != nil {
		// A commit's outcome is unknown now (a retried abort would not
		// tell: re-initializing completes a commit already decided).
		w.rec.Complete(inv, history.Info, history.Op{Abort: abort, Reads: reads, Error: err.Error(), CommitAt: commitAt})
		return false
	}
	w.rec.Complete(inv, history.OK, history.Op{Abort: abort, Reads: reads, CommitAt: commitAt})
	return true
}

// read is a read_committed fetch of a random partition just below the
// last stable offset seen there; errors read nothing.
func (t *txnClient) read(ctx context.Context) []history.Record {
	w := t.w
	p := int32(t.rnd.Intn(int(w.cfg.TxnPartitions)))
	rctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	f, err := w.fetchAt(rctx, w.cfg.TxnTopic, p, max(0, t.lso[p]-txnReadBack), 1)
	if err != nil {
		return nil
	}
	t.lso[p] = max(t.lso[p], f.lso)
	return f.recs
}

// txnReadLoop polls random partitions of TxnTopic at one isolation level
// from just below where it read last.
func (w *Workload) txnReadLoop(ctx context.Context, isolation string) {
	rnd := rand.New(rand.NewSource(w.cfg.Seed*1000 + 900 + int64(len(isolation))))
	proc := w.newProcess()
	next := map[int32]int64{}
	for sleep(ctx, 200*time.Millisecond) == nil {
		p := int32(rnd.Intn(int(w.cfg.TxnPartitions)))
		start := max(0, next[p]-int64(rnd.Intn(txnReadBack)))
		inv := w.rec.Invoke(history.Op{Process: proc, F: history.TxnRead, Isolation: isolation,
			Offsets: []history.Offset{{Topic: w.cfg.TxnTopic, Partition: p, Offset: start}}})
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.OpTimeout)
		f, err := w.fetchAt(octx, w.cfg.TxnTopic, p, start, isolationCode(isolation))
		cancel()
		if err != nil {
			w.rec.Complete(inv, history.Fail, history.Op{Error: err.Error(), Node: f.node})
			continue
		}
		next[p] = max(next[p], f.next)
		w.rec.Complete(inv, history.OK, history.Op{Records: f.recs, Node: f.node,
			HWMs: []history.Offset{{Topic: w.cfg.TxnTopic, Partition: p, Offset: f.hwm}},
			LSOs: []history.Offset{{Topic: w.cfg.TxnTopic, Partition: p, Offset: f.lso}}})
	}
}

func isolationCode(isolation string) int8 {
	if isolation == history.ReadCommitted {
		return 1
	}
	return 0
}

// txnFinalRead reads every partition of TxnTopic read_committed from 0,
// waiting until its last stable offset reaches its high watermark.
func (w *Workload) txnFinalRead(ctx context.Context) error {
	proc := w.newProcess()
	var failed []int32
	for p := int32(0); p < w.cfg.TxnPartitions; p++ {
		inv := w.rec.Invoke(history.Op{Process: proc, F: history.TxnFinal, Isolation: history.ReadCommitted,
			Offsets: []history.Offset{{Topic: w.cfg.TxnTopic, Partition: p, Offset: 0}}})
		recs, f, err := w.readStable(ctx, p)
		if err != nil {
			w.rec.Complete(inv, history.Info, history.Op{Error: err.Error()})
			failed = append(failed, p)
			continue
		}
		w.rec.Complete(inv, history.OK, history.Op{Records: recs,
			HWMs: []history.Offset{{Topic: w.cfg.TxnTopic, Partition: p, Offset: f.hwm}},
			LSOs: []history.Offset{{Topic: w.cfg.TxnTopic, Partition: p, Offset: f.lso}}})
	}
	if len(failed) > 0 {
		return fmt.Errorf("final read_committed read failed on partitions %v of %s", failed, w.cfg.TxnTopic)
	}
	return nil
}

// readStable reads partition p read_committed from 0 until a response
// shows the last stable offset at the high watermark and nothing is left
// below it. Records below the last stable offset never change, so reads
// accumulate across responses.
func (w *Workload) readStable(ctx context.Context, p int32) ([]history.Record, fetched, error) {
	var all []history.Record
	next := int64(0)
	for {
		fctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
		f, err := w.fetchAt(fctx, w.cfg.TxnTopic, p, next, 1)
		cancel()
		switch {
		case err != nil:
			fmt.Fprintf(w.cfg.Log, "final read_committed read of %s/%d at %d: %v\n", w.cfg.TxnTopic, p, next, err)
		case f.next > next:
			all, next = append(all, f.recs...), f.next
			continue
		case next >= f.hwm && f.lso == f.hwm:
			return all, f, nil
		}
		if serr := sleep(ctx, 500*time.Millisecond); serr != nil {
			return nil, f, fmt.Errorf("%w: at %d, last stable offset %d, high watermark %d (last error: %v)", serr, next, f.lso, f.hwm, err)
		}
	}
}
