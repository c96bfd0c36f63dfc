package sim

// Transactional offsets in the transactional workload (txn.go, issue 16):
// with txnOffsetsProb a transaction also commits its producer's consumer
// group offsets (group txnGroup(producer)), after its writes and before
// its end, as franz-go's GroupTransactSession does in a
// consume-transform-produce loop: the classic flow sends AddOffsetsToTxn
// to the transaction coordinator and then TxnOffsetCommit v3 to the
// group's coordinator; transaction version 2 sends TxnOffsetCommit v5 alone
// (the group coordinator's broker adds the group's __consumer_offsets
// partition, node/api_txn_offset_commit.go). The offsets are the
// transaction's number for every partition it wrote (metadata: its name),
// so an offset read names its transaction and one producer's offsets only
// go up. Generation -1 and no member id: the commit is not checked
// against a group membership (the group has no members).
//
// An OffsetFetch poller reads every group's offsets during the run
// (requireStable every other time), and after the heal a final read per
// group (requireStable, until nothing is pending). check.TxnOffsetAnomalies
// (jepsen/check/txnoffsets.go) then finds offsets read before their
// transaction's commit was asked for, offsets of aborted transactions,
// offsets that went back, and committed offsets the final read lacks.

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/jepsen/check"
	"github.com/floe-broker/floe/netx"
)

const txnOffsetsProb = 0.6

// txnGroup is the consumer group whose offsets producer id's transactions
// commit.
func txnGroup(id string) string { return "simtxn-" + id }

// tick advances the workload's logical clock: the order of commit
// requests and offset reads, for the checker.
func (w *txnWorkload) tick() int64 {
	w.ticks++
	return w.ticks
}

// chooseOffsets decides whether transaction t, number n, sends offsets.
func (w *txnWorkload) chooseOffsets(t *txnRec, n int) {
	if w.r.rng.Float64() >= txnOffsetsProb {
		return
	}
	t.offsets = map[int32]int64{}
	for pt := range t.values { //floe:unordered filling a map
		t.offsets[pt] = int64(n)
	}
}

// offsetsThen sends the current transaction's offsets, if it has any,
// then calls next; a refusal ends the transaction with an abort (as
// GroupTransactSession aborts when its offsets fail).
func (p *txnProducer) offsetsThen(deadline time.Duration, next func()) {
	switch {
	case p.cur == nil || p.cur.offsets == nil:
		next()
	case p.tv2:
		p.commitOffsets(deadline, next)
	default:
		p.addOffsets(deadline, func() { p.commitOffsets(deadline, next) })
	}
}

// addOffsets sends AddOffsetsToTxn (v3), retrying what clients retry.
func (p *txnProducer) addOffsets(deadline time.Duration, next func()) {
	r := p.w.r
	if r.now() >= deadline || p.coord == 0 {
		p.end(false)
		return
	}
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = 3, p.id, p.pid, p.epoch, txnGroup(p.id)
	r.kn.call(p.coord, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		code := kerr.UnknownServerError.Code
		if err == nil {
			code = resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode
		}
		switch {
		case code == 0:
			next()
		case r.now() < deadline && notCoord(err, code):
			p.coord, p.afterFind = 0, func() { p.addOffsets(deadline, next) }
			r.w.After(r.backoff(), p.find)
		case r.now() < deadline && (code == kerr.ConcurrentTransactions.Code || code == kerr.CoordinatorLoadInProgress.Code):
			r.w.After(r.backoff(), func() { p.addOffsets(deadline, next) })
		default:
			r.w.Tracef("txn: %s add offsets: %s (err %v)", p.cur.name, errName(code), err)
			p.end(false)
		}
	})
}

// commitOffsets sends TxnOffsetCommit (v3, or v5 for transaction version
// 2) to the group's coordinator. Retrying is harmless: the same offsets
// again.
func (p *txnProducer) commitOffsets(deadline time.Duration, next func()) {
	w, r := p.w, p.w.r
	if r.now() >= deadline {
		p.end(false)
		return
	}
	group := txnGroup(p.id)
	retry := func() { r.w.After(r.backoff(), func() { p.commitOffsets(deadline, next) }) }
	w.groupCoord(group, func(coord netx.NodeID) {
		if coord == 0 {
			retry()
			return
		}
		r.kn.call(coord, p.txnOffsetCommitRequest(group), r.o.RequestTimeout, func(resp kmsg.Response, err error) {
			code := kerr.UnknownServerError.Code
			if err == nil {
				code = firstTxnOffsetCode(resp.(*kmsg.TxnOffsetCommitResponse))
			}
			switch {
			case code == 0:
				next()
			case notCoord(err, code):
				delete(r.meta.coords, group)
				retry()
			case retriable(code) || code == kerr.ConcurrentTransactions.Code:
				retry()
			default:
				r.w.Tracef("txn: %s offsets: %s", p.cur.name, errName(code))
				p.end(false)
			}
		})
	})
}

func (p *txnProducer) txnOffsetCommitRequest(group string) *kmsg.TxnOffsetCommitRequest {
	t := p.cur
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	if p.tv2 {
		req.Version = 5
	}
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = p.id, group, p.pid, p.epoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = txnTopic
	for _, pt := range sortedOffsetParts(t.offsets) {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = pt, t.offsets[pt], -1, kmsg.StringPtr(t.name)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// firstTxnOffsetCode is the first partition error of an answer.
func firstTxnOffsetCode(resp *kmsg.TxnOffsetCommitResponse) int16 {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return p.ErrorCode
			}
		}
	}
	return 0
}

func sortedOffsetParts(m map[int32]int64) []int32 {
	vals := make(map[int32][]string, len(m))
	for pt := range m { //floe:unordered filling a map
		vals[pt] = nil
	}
	return sortedParts(vals)
}

// groupCoord calls then with group's coordinator (0: not known now).
func (w *txnWorkload) groupCoord(group string, then func(netx.NodeID)) {
	if id, ok := w.r.meta.coords[group]; ok {
		then(id)
		return
	}
	w.r.meta.findCoordinator(group, then)
}

// pollOffsets reads every group's offsets now and then during the run.
func (w *txnWorkload) pollOffsets() {
	r := w.r
	if r.stopping {
		return
	}
	for _, g := range w.groups {
		w.fetchOffsets(g, w.ticks%2 == 0, false, func(bool) {})
	}
	r.w.After(100*time.Millisecond+r.think(), w.pollOffsets)
}

// fetchOffsets reads group's committed offsets of the topic's partitions
// (OffsetFetch v7) into offsetReads, and calls done with whether every
// partition was answered.
func (w *txnWorkload) fetchOffsets(group string, stable, final bool, done func(ok bool)) {
	r := w.r
	w.groupCoord(group, func(coord netx.NodeID) {
		if coord == 0 {
			done(false)
			return
		}
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group, req.RequireStable = 7, group, stable
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic = txnTopic
		for pt := int32(0); pt < txnPartitions; pt++ {
			rt.Partitions = append(rt.Partitions, pt)
		}
		req.Topics = append(req.Topics, rt)
		sent := w.tick()
		r.kn.call(coord, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
			if err != nil {
				delete(r.meta.coords, group)
				done(false)
				return
			}
			fr := resp.(*kmsg.OffsetFetchResponse)
			if fr.ErrorCode != 0 {
				if notCoord(nil, fr.ErrorCode) {
					delete(r.meta.coords, group)
				}
				done(false)
				return
			}
			done(w.recordOffsets(group, fr, sent, final))
		})
	})
}

// recordOffsets keeps the partitions of an OffsetFetch answer that came
// without an error; true if all of them did.
func (w *txnWorkload) recordOffsets(group string, fr *kmsg.OffsetFetchResponse, sent int64, final bool) bool {
	at, n := w.tick(), 0
	for _, t := range fr.Topics {
		if t.Topic != txnTopic {
			continue
		}
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				continue
			}
			n++
			w.offsetReads = append(w.offsetReads, check.TxnOffsetRead{Group: group, Partition: p.Partition,
				Offset: p.Offset, Sent: sent, Done: at, Final: final})
		}
	}
	return n == txnPartitions
}

// finishOffsets, after the heal and the final read of the topic, reads
// every group's offsets once nothing is pending (requireStable), within
// the liveness bound.
func (w *txnWorkload) finishOffsets() bool {
	r := w.r
	done := map[string]bool{}
	asking := map[string]bool{}
	deadline := r.now() + r.o.LivenessMax
	for len(done) < len(w.groups) && r.now() < deadline && !r.halted {
		for _, g := range w.groups {
			if !done[g] && !asking[g] {
				asking[g] = true
				w.fetchOffsets(g, true, true, func(ok bool) {
					asking[g] = false
					if ok {
						done[g] = true
					}
				})
			}
		}
		r.runFor(time.Second)
	}
	if len(done) < len(w.groups) {
		r.violation("liveness", fmt.Sprintf("the transactional offsets of %d of %d groups were read without pending offsets within %v",
			len(done), len(w.groups), r.o.LivenessMax))
		return false
	}
	return true
}
