package node

// Fetch (key 1), versions 4-12.
//
// v4 is the first version whose responses carry v2 batches only (and
// librdkafka needs 4 and 10 exactly); v9+ carries CurrentLeaderEpoch, which
// is checked against the partition's Raft term (FENCED_LEADER_EPOCH when the
// client's is older, UNKNOWN_LEADER_EPOCH when newer); v13+ (topic ids) is
// not advertised. Fetch sessions (v7+) are declined the way KIP-227 allows:
// the response's session id is 0, so clients send full fetches.
//
// Only the leader serves reads, and only once it has committed an entry of
// its own term, so its high watermark never goes below one a previous
// leader served. Records are the stored batches, returned whole and
// undecoded, up to the high watermark: at most PartitionMaxBytes per
// partition and MaxBytes in all, except that the first partition with data
// always returns at least one whole batch (KIP-74). When fewer than MinBytes
// are ready the fetch waits for up to MaxWaitMillis and is answered as soon
// as a high watermark it watches moves far enough. IsolationLevel 1
// (read_committed) reads only up to the last stable offset (held back by
// the oldest open transaction) and lists the aborted transactions that
// overlap the returned batches (docs/transactions.md); read_uncommitted
// reads to the high watermark.
//
// Authorization: READ on each topic, decided once when the request
// arrives; a topic the client may not read gets TOPIC_AUTHORIZATION_FAILED
// on its partitions (and the answer goes out at once).

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/clock"
	"github.com/floe-broker/floe/internal/plant"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/node/partition"
	"github.com/floe-broker/floe/node/records"
)

// fetchWait is a parked fetch.
type fetchWait struct {
	req     *kmsg.FetchRequest
	denied  map[string]bool // topics the client may not read
	respond func(kmsg.Response)
	done    bool
	timer   clock.TimerID // the max wait
	trace   *Trace        // the request's trace, or nil (trace.go)
	stage   int           // its park stage
}

// answerParked ends the park stage of a traced fetch and sends resp.
func (r *Reactor) answerParked(fw *fetchWait, resp kmsg.Response) {
	if fw.trace != nil {
		fw.trace.end(fw.stage, r.env.Clock.Now())
	}
	fw.respond(resp)
}

func serveFetch(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.FetchRequest)
	denied := deniedTopics(r.authorize(c, req), req.Topics, func(t kmsg.FetchRequestTopic) string { return t.Topic }, kmsg.ACLOperationRead)
	if req.Version >= 7 && req.SessionID != 0 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		respond(resp)
		return
	}
	resp, n, failed := r.evalFetch(req, denied)
	if failed || n >= int(req.MinBytes) || req.MaxWaitMillis <= 0 {
		r.countFetched(resp, n)
		respond(resp)
		return
	}
	fw := &fetchWait{req: req, respond: respond, denied: denied, trace: c.Trace}
	if c.Trace != nil {
		fw.stage = c.Trace.begin(StagePark, "", -1, r.env.Clock.Now())
	}
	r.fetches = append(r.fetches, fw)
	// On the reactor's deadline queue, so the max wait answers before the
	// request's deadline (deadline.go), due at the same instant.
	fw.timer = r.after(time.Duration(req.MaxWaitMillis)*time.Millisecond, func() {
		if fw.done {
			return
		}
		r.finishFetch(fw)
	})
}

func (r *Reactor) finishFetch(fw *fetchWait) {
	fw.done = true
	resp, n, _ := r.evalFetch(fw.req, fw.denied)
	r.countFetched(resp, n)
	r.answerParked(fw, resp)
	r.dropDoneFetches()
}

// countFetched adds a fetch response that is being sent, n bytes of
// batches, to the broker's and its partitions' traffic.
func (r *Reactor) countFetched(resp *kmsg.FetchResponse, n int) {
	r.stats.BytesOut += int64(n)
	if n == 0 {
		return
	}
	for _, t := range resp.Topics {
		for _, sp := range t.Partitions {
			if len(sp.RecordBatches) == 0 {
				continue
			}
			if p, ok := r.byName[topicPartition{t.Topic, sp.Partition}]; ok {
				p.Traffic.BytesOut += int64(len(sp.RecordBatches))
				p.Traffic.RecordsOut += recordsIn(sp.RecordBatches)
			}
		}
	}
}

// recordsIn counts the records of the batches in data, from their
// headers; a truncated last batch (a fetch may end mid-batch) is not
// counted.
func recordsIn(data []byte) int64 {
	var n int64
	for len(data) > 0 {
		h, err := records.ParseHeader(data)
		if err != nil || h.Size() > len(data) {
			break
		}
		n += int64(h.RecordCount)
		data = data[h.Size():]
	}
	return n
}

// wakeFetches answers parked fetches whose partitions now have enough data.
func (r *Reactor) wakeFetches() {
	if len(r.fetches) == 0 {
		return
	}
	for _, fw := range r.fetches {
		if fw.done || !r.fetchMayHaveData(fw.req) {
			continue
		}
		resp, n, failed := r.evalFetch(fw.req, fw.denied)
		if failed || n >= int(fw.req.MinBytes) {
			fw.done = true
			r.cancelTimer(fw.timer)
			r.countFetched(resp, n)
			r.answerParked(fw, resp)
		}
	}
	r.dropDoneFetches()
}

func (r *Reactor) dropDoneFetches() {
	live := r.fetches[:0]
	for _, fw := range r.fetches {
		if !fw.done {
			live = append(live, fw)
		}
	}
	for i := len(live); i < len(r.fetches); i++ {
		r.fetches[i] = nil
	}
	r.fetches = live
}

// fetchMayHaveData is the cheap test before a full evaluation: some
// partition's high watermark is past the fetch offset, or it lost its
// leader (the answer is then an error, which is news too).
func (r *Reactor) fetchMayHaveData(req *kmsg.FetchRequest) bool {
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			p, ok := r.byName[topicPartition{rt.Topic, rp.Partition}]
			if !ok || !p.IsLeader() || p.HighWatermark() > rp.FetchOffset {
				return true
			}
		}
	}
	return false
}

// evalFetch builds a response from what is committed now. failed is set
// when some partition has an error (the client should hear of it at once).
func (r *Reactor) evalFetch(req *kmsg.FetchRequest, denied map[string]bool) (*kmsg.FetchResponse, int, bool) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	budget := int(req.MaxBytes)
	if req.Version < 3 || budget <= 0 {
		budget = 1 << 30
	}
	total, failed := 0, false
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			if denied[rt.Topic] {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, errTopicAuth.Code
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
				sp.RecordBatches = []byte{}
				failed = true
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			sp := r.fetchPartition(rt.Topic, rp, &budget, total == 0, req.IsolationLevel == 1)
			total += len(sp.RecordBatches)
			if sp.ErrorCode != 0 {
				failed = true
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, total, failed
}

func (r *Reactor) fetchPartition(topic string, rp kmsg.FetchRequestTopicPartition, budget *int, first, readCommitted bool) kmsg.FetchResponseTopicPartition {
	sp := kmsg.NewFetchResponseTopicPartition()
	sp.Partition = rp.Partition
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
	sp.PreferredReadReplica = -1
	// Non-flexible versions encode nil bytes as a null (-1) length, which
	// clients reject as a message set size; an empty partition is empty.
	sp.RecordBatches = []byte{}
	p, code := r.readLeader(topic, rp.Partition, rp.CurrentLeaderEpoch)
	if p == nil {
		sp.ErrorCode = code
		return sp
	}
	hw, lso := p.HighWatermark(), p.LastStableOffset()
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, lso, p.StartOffset()
	end := hw
	if readCommitted && !plant.Enabled(plant.TxnFetchServesOpen) {
		end = lso
	}
	limit := min(int(rp.PartitionMaxBytes), *budget)
	if first && r.buggify(bugFetchOneBatch) {
		limit = 1 // BUGGIFY: one batch only (buggify.go)
	}
	if r.buggify(bugFetchEmpty) {
		return sp // BUGGIFY: no records this time (buggify.go)
	}
	if limit <= 0 && !first {
		return sp
	}
	data, err := p.ReadTo(rp.FetchOffset, max(limit, 1), end)
	if err != nil {
		sp.ErrorCode = errCode(err)
		if errors.Is(err, logstore.ErrCorrupt) {
			// Damaged data is never served. The error is retriable; the
			// replica is repaired from a peer (repair.go).
			sp.ErrorCode = kerr.KafkaStorageError.Code
			r.stats.CorruptReads++
			p.Replica().MarkDamaged()
		}
		return sp
	}
	if len(data) > limit && !first {
		return sp // only the first partition may exceed the budget
	}
	if len(data) > 0 {
		if readCommitted {
			var n int
			sp.AbortedTransactions, n = abortedIn(p, rp.FetchOffset, data)
			data = data[:n]
		}
		sp.RecordBatches = data
	}
	*budget -= len(data)
	return sp
}

// abortedIn lists the aborted transactions a read_committed client must
// skip in data (read from offset): those whose range overlaps it. The
// client drops a listed producer's batches from FirstOffset up to its abort
// marker. n is how much of data to serve: less when a marker removed by
// compaction would leave the client dropping too much (partition.ReadCommitted).
func abortedIn(p *partition.Partition, offset int64, data []byte) (out []kmsg.FetchResponseTopicPartitionAbortedTransaction, n int) {
	as, n := p.ReadCommitted(offset, data)
	for _, a := range as {
		at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
		out = append(out, at)
	}
	return out, n
}

// readLeader returns the partition whose reads (Fetch, ListOffsets) this
// broker serves, or the error code to answer instead: the partition is not
// here, the client's leader epoch is not the current one (checkLeaderEpoch),
// or this broker does not hold the leader's read lease (lease.go).
func (r *Reactor) readLeader(topic string, part, currentEpoch int32) (*partition.Partition, int16) {
	p, ok := r.byName[topicPartition{topic, part}]
	if !ok {
		return nil, r.missingPartition(topic, part).Code
	}
	if err := checkLeaderEpoch(p, currentEpoch); err != nil {
		return nil, errCode(err)
	}
	if !r.leaseHeld(p) || r.buggify(bugFetchNotLeader) {
		return nil, kerr.NotLeaderForPartition.Code
	}
	return p, 0
}

// checkLeaderEpoch compares a client's idea of the leader epoch (-1: none)
// with this replica's.
func checkLeaderEpoch(p *partition.Partition, epoch int32) error {
	if !p.IsLeader() {
		return kerr.NotLeaderForPartition
	}
	switch {
	case epoch < 0:
		return nil
	case uint64(epoch) < p.Term():
		return kerr.FencedLeaderEpoch
	case uint64(epoch) > p.Term():
		return kerr.UnknownLeaderEpoch
	}
	return nil
}
