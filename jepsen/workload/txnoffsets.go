package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/jepsen/history"
)

// Transactional offsets (issue 16), as in the simulator
// (sim/txnoffsets.go): txnOffsetsProb of the transactions also send
// offsets of a consumer group (named as the producer's transactional id)
// to the transaction, after their writes and before their end, as
// franz-go's GroupTransactSession does in a consume-transform-produce
// loop. On Floe franz-go runs transaction version 2, so this is
// TxnOffsetCommit v5 with no AddOffsetsToTxn (the version the client
// negotiates; a broker without v5 would refuse the commit, and the
// transaction aborts). The offsets are the transaction's own number for
// each partition it writes, so a read names its transaction and one
// producer's offsets only go up. A poller reads the groups' offsets
// (OffsetFetch, requireStable every other time) during the run and once
// more after the final read; jepsen/check's txn checker
// (check.TxnOffsetAnomalies) judges them.

const txnOffsetsProb = 0.6

// txnOffsets chooses whether a transaction writing recs sends offsets,
// and which: its number n for every partition it writes.
func (t *txnClient) txnOffsets(recs []history.Record) []history.Offset {
	if t.rnd.Float64() >= txnOffsetsProb {
		return nil
	}
	n := t.w.txnOffsetSeq.Add(1)
	out := make([]history.Offset, 0, len(recs))
	for _, r := range recs {
		out = append(out, history.Offset{Topic: r.Topic, Partition: r.Partition, Offset: n})
	}
	return out
}

// sendOffsets sends the transaction's offsets with TxnOffsetCommit,
// retrying retriable errors until ctx ends.
func (t *txnClient) sendOffsets(ctx context.Context, offs []history.Offset) error {
	id, epoch, err := t.cl.ProducerID(ctx)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = t.id, t.id, id, epoch, -1
	md, err := t.w.adm.Metadata(ctx, t.w.cfg.TxnTopic)
	if err != nil {
		return err
	}
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	// Named both ways: v6 (KIP-1319, which kfake serves) names topics by
	// id; Floe serves up to v5, by name.
	rt.Topic, rt.TopicID = t.w.cfg.TxnTopic, md.Topics[t.w.cfg.TxnTopic].ID
	for _, o := range offs {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = o.Partition, o.Offset, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	for {
		err := txnOffsetCommitErr(req.RequestWith(ctx, t.cl))
		if err == nil || !(kerr.IsRetriable(err) || errors.Is(err, kerr.ConcurrentTransactions)) {
			return err
		}
		if serr := sleep(ctx, 100*time.Millisecond); serr != nil {
			return fmt.Errorf("%w (last error: %v)", serr, err)
		}
	}
}

// txnOffsetCommitErr is a TxnOffsetCommit's first error.
func txnOffsetCommitErr(resp *kmsg.TxnOffsetCommitResponse, err error) error {
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

// txnOffsetLoop reads a random producer's group offsets now and then.
func (w *Workload) txnOffsetLoop(ctx context.Context) {
	rnd := rand.New(rand.NewSource(w.cfg.Seed*1000 + 950))
	proc := w.newProcess()
	for n := 0; sleep(ctx, 200*time.Millisecond) == nil; n++ {
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.OpTimeout)
		_ = w.readTxnOffsets(octx, proc, history.TxnOffsets, txnID(rnd.Intn(w.cfg.TxnProducers)), n%2 == 0)
		cancel()
	}
}

// readTxnOffsets is one OffsetFetch of group's offsets of TxnTopic,
// recorded as an f operation; it fails when any partition was answered
// with an error (those partitions are left out of the completion).
func (w *Workload) readTxnOffsets(ctx context.Context, proc int64, f history.Func, group string, stable bool) error {
	inv := w.rec.Invoke(history.Op{Process: proc, F: f, Group: group})
	req := kmsg.NewPtrOffsetFetchRequest()
	req.RequireStable = stable
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic = w.cfg.TxnTopic
	for p := int32(0); p < w.cfg.TxnPartitions; p++ {
		rt.Partitions = append(rt.Partitions, p)
	}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, w.admin)
	if err == nil && len(resp.Groups) != 1 {
		err = fmt.Errorf("OffsetFetch answered %d groups", len(resp.Groups))
	}
	if err == nil {
		err = kerr.ErrorForCode(resp.Groups[0].ErrorCode)
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		// No offset ever committed (kfake's answer; Floe answers -1s).
		w.rec.Complete(inv, history.OK, history.Op{Group: group, Offsets: w.noTxnOffsets()})
		return nil
	}
	if err != nil {
		w.rec.Complete(inv, history.Fail, history.Op{Group: group, Error: err.Error()})
		return err
	}
	var got []history.Offset
	var perr error
	for _, t := range resp.Groups[0].Topics {
		for _, p := range t.Partitions {
			if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
				perr = e
				continue
			}
			got = append(got, history.Offset{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset})
		}
	}
	done := history.Op{Group: group, Offsets: got}
	if perr != nil {
		done.Error = perr.Error()
	}
	w.rec.Complete(inv, history.OK, done)
	if perr == nil && len(got) != int(w.cfg.TxnPartitions) {
		perr = fmt.Errorf("OffsetFetch answered %d of %d partitions", len(got), w.cfg.TxnPartitions)
	}
	return perr
}

// noTxnOffsets is "no offset committed" for every partition of TxnTopic.
func (w *Workload) noTxnOffsets() []history.Offset {
	out := make([]history.Offset, w.cfg.TxnPartitions)
	for p := range out {
		out[p] = history.Offset{Topic: w.cfg.TxnTopic, Partition: int32(p), Offset: history.NoOffset}
	}
	return out
}

// txnOffsetsFinal reads every producer's group offsets once nothing is
// pending (requireStable), retrying until ctx ends.
func (w *Workload) txnOffsetsFinal(ctx context.Context) error {
	proc := w.newProcess()
	var errs error
	for i := 0; i < w.cfg.TxnProducers; i++ {
		for {
			octx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
			err := w.readTxnOffsets(octx, proc, history.TxnOffsetsFinal, txnID(i), true)
			cancel()
			if err == nil {
				break
			}
			if serr := sleep(ctx, 500*time.Millisecond); serr != nil {
				errs = errors.Join(errs, fmt.Errorf("final offsets of group %s: %w (last error: %v)", txnID(i), serr, err))
				break
			}
		}
	}
	return errs
}
