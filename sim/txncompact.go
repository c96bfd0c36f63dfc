package sim

// Transactions on a compacted topic (issue 16; logstore/compact_txn.go).
// In the seeds whose retention workload compacts (retention.go), a second
// compacted topic, simtxc (one partition, small segments, a short
// delete.retention.ms so that markers are removed during the run), takes
// keyed writes from transactional producers, committed or aborted, and
// plain keyed writes between them, under the seed's faults. A
// read_committed reader polls it meanwhile, dropping aborted batches
// exactly as franz-go does (a producer's batches are dropped from an
// aborted transaction's first offset until a control batch holding its
// abort record, so a marker removed too early shows). Checked, during the
// run and after the heal:
//
//   - aborted read: a value of a transaction whose abort was acknowledged
//     is read read_committed;
//   - read mismatch: a value is read at another offset than it was
//     written at;
//   - lost latest: for every key, a read_committed read of the whole
//     topic from its start (every fourth poll during the run, one at a
//     time, and once after the heal) holds a record of the key at or
//     after its latest acknowledged committed write below the read's last
//     stable offset (compaction keeps the latest committed value of every
//     key).
//
// Coverage: the final read_uncommitted scan counts aborted transactions'
// batches emptied by compaction and markers removed.
//
// Not checked: that a read_uncommitted reader never sees removed aborted
// records again. Replicas compact on their own, so a new leader that has
// not cleaned yet serves them again, as in Kafka.

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/records"
)

const (
	txcTopic     = "simtxc"
	txcKeys      = 8
	txcProducers = 2
	txcAbortProb = 0.3
	txcPlainProb = 0.3 // a plain keyed write between transactions
)

// txcTxn is one transaction (or plain write) on the topic.
type txcTxn struct {
	name    string
	plain   bool
	keys    []string // of each value
	values  []string
	offsets []int64 // of each value once acknowledged, else -1
	outcome txnOutcome
}

type txcWorkload struct {
	r        *run
	rng      *rand.Rand
	ready    bool
	leader   netx.NodeID // 0: unknown
	retainMs int64       // delete.retention.ms
	txns     []*txcTxn
	byValue  map[string]*txcTxn
	at       map[string]int64 // value -> the offset it was acknowledged at
	readSeen map[string]int64 // value -> the offset a read found it at
	readAt   int64
	n        int
	scanning bool
	scans    int
	polls    int
}

// startTxnCompact starts the workload in seeds whose retention workload
// compacts.
func (r *run) startTxnCompact() {
	if !r.o.Retention.On || !r.o.Retention.Compact {
		return
	}
	w := &txcWorkload{r: r, rng: rand.New(rand.NewSource(r.o.Seed ^ 0x7c7c)),
		byValue: map[string]*txcTxn{}, at: map[string]int64{}, readSeen: map[string]int64{}}
	w.retainMs = 100 + w.rng.Int63n(900)
	r.txc = w
	r.active++
	// Small segments (a few batches each), so that passes run often.
	configs := [][2]string{{"segment.bytes", fmt.Sprint(300 + w.rng.Intn(400))}, {"cleanup.policy", "compact"},
		{"delete.retention.ms", fmt.Sprint(w.retainMs)}}
	r.createTopic(txcTopic, configs, func() {
		w.ready = true
		for i := 0; i < txcProducers; i++ {
			p := w.newProducer(fmt.Sprintf("txc%d", i))
			r.active++
			p.find()
		}
		r.active--
		w.poll()
	})
}

func (w *txcWorkload) think() time.Duration {
	return time.Duration(w.rng.Int63n(int64(w.r.o.ThinkMax) + 1))
}

func (w *txcWorkload) after(f func()) { w.r.w.After(w.think(), f) }

func (w *txcWorkload) backoff() time.Duration {
	return 10*time.Millisecond + time.Duration(w.rng.Int63n(int64(40*time.Millisecond)))
}

// withLeader calls then with the partition's believed leader (0: unknown).
func (w *txcWorkload) withLeader(then func(netx.NodeID)) {
	if w.leader != 0 {
		then(w.leader)
		return
	}
	w.r.askLeader(txcTopic, func(lead netx.NodeID) {
		if lead != 0 {
			w.leader = lead
		}
		w.r.w.After(w.backoff(), func() { then(w.leader) })
	})
}

// newTxn draws 1-3 keyed values.
func (w *txcWorkload) newTxn(plain bool) *txcTxn {
	t := &txcTxn{plain: plain}
	w.n++
	t.name = fmt.Sprintf("C%d", w.n)
	for i := 1 + w.rng.Intn(3); i > 0; i-- {
		k := fmt.Sprintf("k%d", w.rng.Intn(txcKeys))
		v := fmt.Sprintf("%s.%d:%s:%s", t.name, len(t.values), k, strings.Repeat("x", 40))
		t.keys, t.values, t.offsets = append(t.keys, k), append(t.values, v), append(t.offsets, -1)
		w.byValue[v] = t
	}
	w.txns = append(w.txns, t)
	return t
}

// produce sends t's values as one batch (transactional if ps.pid >= 0) to
// the leader and calls done with the error code (or -1 for no answer).
func (w *txcWorkload) produce(t *txcTxn, txnID string, ps producerStamp, done func(code int16)) {
	r := w.r
	w.withLeader(func(leader netx.NodeID) {
		if leader == 0 {
			done(-1)
			return
		}
		o := records.BuildOptions{BaseTimestamp: r.w.Clock().Now().UnixMilli()}
		if ps.pid >= 0 {
			o.Transactional = true
			o.Producer = &records.Producer{ID: ps.pid, Epoch: ps.epoch, BaseSequence: ps.seq}
		}
		recs := make([]records.Record, len(t.values))
		for i, v := range t.values {
			recs[i] = records.Record{Key: []byte(t.keys[i]), Value: []byte(v)}
		}
		r.kn.call(leader, r.txnProduceRequest(txcTopic, 0, txnID, false, records.Build(o, recs)), r.o.RequestTimeout, func(resp kmsg.Response, err error) {
			code := int16(-1)
			if err == nil {
				p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
				if code = p.ErrorCode; code == 0 {
					for i, v := range t.values {
						t.offsets[i] = p.BaseOffset + int64(i)
						w.at[v] = t.offsets[i]
					}
				}
			}
			if code != 0 {
				w.leader = 0
			}
			done(code)
		})
	})
}

// txcProducer runs transactions one after another, with plain writes
// between them.
type txcProducer struct {
	txnSession
	w   *txcWorkload
	seq int32
	cur *txcTxn
}

func (w *txcWorkload) newProducer(id string) *txcProducer {
	p := &txcProducer{w: w}
	p.txnSession = txnSession{r: w.r, id: id, pid: -1, think: w.think, backoff: w.backoff,
		open: func() bool { return p.cur != nil }, next: p.next, abort: func() { p.end(false) },
		ready: func() {
			p.seq = 0
			p.w.after(p.next)
		}}
	return p
}

// next runs a plain write or a transaction.
func (p *txcProducer) next() {
	if p.stopped() {
		return
	}
	w := p.w
	if w.rng.Float64() < txcPlainProb {
		t := w.newTxn(true)
		t.outcome = txnUnknown
		w.produce(t, "", producerStamp{pid: -1}, func(code int16) {
			if code == 0 {
				t.outcome = txnCommitted
			}
			w.after(p.next)
		})
		return
	}
	p.begin()
}

func (p *txcProducer) begin() {
	w, r := p.w, p.w.r
	t := w.newTxn(false)
	p.cur = t
	p.addPartitions(txcTopic, []int32{0}, func(code int16, _ error) {
		if code != 0 {
			p.end(false)
			return
		}
		p.write(r.now() + r.o.OpTimeout)
	})
}

// write produces the transaction's batch (retried with the same sequence:
// idempotent), then ends the transaction.
func (p *txcProducer) write(deadline time.Duration) {
	w, r := p.w, p.w.r
	if r.now() >= deadline {
		p.gaveUp = true
		p.end(false)
		return
	}
	t := p.cur
	w.produce(t, p.id, producerStamp{pid: p.pid, epoch: p.epoch, seq: p.seq}, func(code int16) {
		switch {
		case code == 0:
			p.seq += int32(len(t.values))
			w.after(func() { p.end(w.rng.Float64() >= txcAbortProb) })
		case code == -1 || retriable(code):
			r.w.After(w.backoff(), func() { p.write(deadline) })
		default:
			p.gaveUp = true
			p.end(false)
		}
	})
}

// end commits or aborts (txnSession.end); an abort refused leaves the
// outcome unknown and the producer initializes again.
func (p *txcProducer) end(commit bool) {
	t := p.cur
	p.txnSession.end(commit, txnEnd{
		settled: func(o txnOutcome) {
			t.outcome, p.cur = o, nil
		},
	})
}

// txcRead is one fetch answer as a client sees it.
type txcRead struct {
	recs     []decodedRecord // read_committed: what franz-go would return
	next     int64
	lso, hw  int64
	batches  [][]byte // the raw batches
	ok       bool
	answered netx.NodeID
}

// fetch reads the partition from offset, read_committed or not.
func (w *txcWorkload) fetch(offset int64, committed bool, done func(txcRead)) {
	r := w.r
	w.withLeader(func(leader netx.NodeID) {
		if leader == 0 {
			done(txcRead{})
			return
		}
		r.kn.call(leader, txnFetchRequest(txcTopic, 0, offset, 16<<10, committed), r.o.RequestTimeout, func(resp kmsg.Response, err error) {
			if err != nil {
				w.leader = 0
				done(txcRead{})
				return
			}
			sp, ok := fetchedPartition(resp.(*kmsg.FetchResponse))
			if !ok || sp.ErrorCode != 0 {
				w.leader = 0
				done(txcRead{})
				return
			}
			aborted := sp.AbortedTransactions
			if !committed {
				aborted = nil
			}
			rd, err := kgoReadCommitted(sp.RecordBatches, offset, aborted)
			if err != nil {
				r.violation("served-corruption", fmt.Sprintf("n%d served %s/0 from %d: %v", leader, txcTopic, offset, err))
				done(txcRead{})
				return
			}
			rd.lso, rd.hw, rd.ok, rd.answered = sp.LastStableOffset, sp.HighWatermark, true, leader
			done(rd)
		})
	})
}

// kgoReadCommitted is franz-go's read_committed filter (pkg/kgo/source.go,
// aborter): a listed producer's transactional batches are dropped from the
// smallest first offset listed for it until a control batch of it holds an
// abort record; control batches are never returned. With aborted nil it is
// a read_uncommitted read.
func kgoReadCommitted(data []byte, offset int64, aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction) (txcRead, error) {
	rd := txcRead{next: offset}
	bs, err := records.Split(data)
	if err != nil {
		return rd, err
	}
	ab := map[int64][]int64{}
	for _, a := range aborted {
		ab[a.ProducerID] = append(ab[a.ProducerID], a.FirstOffset)
	}
	for pid := range ab { //floe:unordered each list is sorted on its own
		sort.Slice(ab[pid], func(i, j int) bool { return ab[pid][i] < ab[pid][j] })
	}
	for _, b := range bs {
		h, err := records.Verify(b)
		if err != nil {
			return rd, err
		}
		rd.batches = append(rd.batches, b)
		rd.next = h.NextOffset()
		abort := h.IsTransactional() && len(ab[h.ProducerID]) > 0 && h.BaseOffset >= ab[h.ProducerID][0]
		popped := false
		err = records.Records(b, func(rec records.Record) error {
			o := h.BaseOffset + int64(rec.OffsetDelta)
			if h.IsControl() {
				if abort && !popped && len(rec.Key) >= 4 && rec.Key[2] == 0 && rec.Key[3] == 0 {
					ab[h.ProducerID], popped = ab[h.ProducerID][1:], true
				}
				return nil
			}
			if !abort && o >= offset {
				rd.recs = append(rd.recs, decodedRecord{offset: o, value: string(rec.Value)})
			}
			return nil
		})
		if err != nil {
			return rd, err
		}
	}
	return rd, nil
}

// saw checks values a read_committed read returned.
func (w *txcWorkload) saw(recs []decodedRecord) {
	for _, rec := range recs {
		t, ok := w.byValue[rec.value]
		if !ok {
			w.r.violation("checker", fmt.Sprintf("txncompact read-mismatch invalid: %s offset %d holds %q, never written", txcTopic, rec.offset, rec.value))
			continue
		}
		if off, ok := w.at[rec.value]; ok && off != rec.offset {
			w.r.violation("checker", fmt.Sprintf("txncompact read-mismatch invalid: %s value %q read at offset %d, written at %d", txcTopic, rec.value, rec.offset, off))
		}
		if t.outcome == txnAborted {
			w.r.violation("checker", fmt.Sprintf("txncompact aborted-read invalid: %s offset %d: %q of %s, whose abort was acknowledged, read read_committed",
				txcTopic, rec.offset, rec.value, t.name))
		}
		w.readSeen[rec.value] = rec.offset
	}
}

// poll is the read_committed reader during the run.
func (w *txcWorkload) poll() {
	r := w.r
	if r.stopping {
		return
	}
	w.fetch(w.readAt, true, func(rd txcRead) {
		if rd.ok {
			w.saw(rd.recs)
			w.readAt = max(w.readAt, rd.next)
		}
	})
	if w.polls++; w.polls%4 == 0 {
		w.scan()
	}
	r.w.After(100*time.Millisecond+time.Duration(w.rng.Int63n(int64(r.o.ThinkMax)+1)), w.poll)
}

// finishTxnCompact, after the heal: waits for no transaction open, reads
// the topic read_committed from the start and checks it; then scans it
// read_uncommitted for what compaction removed.
func (r *run) finishTxnCompact() {
	w := r.txc
	if w == nil || !w.ready {
		return
	}
	read := func(committed bool) ([]decodedRecord, [][]byte, bool) {
		return w.readAll(w.fetch, committed)
	}
	recs, _, ok := read(true)
	if !ok {
		r.violation("liveness", fmt.Sprintf("%s was not read read_committed to its high watermark (no transaction open) within %v", txcTopic, r.o.LivenessMax))
		return
	}
	w.saw(recs)
	latest, val := w.committedLatest(math.MaxInt64)
	w.checkLatest("final", recs, latest, val)
	committed, aborted := 0, 0
	for _, t := range w.txns {
		switch t.outcome {
		case txnCommitted:
			committed++
		case txnAborted:
			aborted++
		}
	}
	r.w.Tracef("txncompact: %d writes committed, %d aborted, %d keys checked, %d records read back, %d scans during the run", committed, aborted, len(latest), len(recs), w.scans)
	_, batches, ok := read(false)
	if !ok {
		return
	}
	w.coverRemoved(batches)
}

// readAll reads the topic from its start to its high watermark through
// fetch (read_committed when committed: only once no transaction is open,
// the last stable offset at the high watermark), within the liveness bound.
// The records of one read all come from one broker (each replica compacts
// its own copy). A failed fetch (NOT_LEADER_OR_FOLLOWER from BUGGIFY or a
// lease lapse, a timeout) is retried at the offset reached, keeping what was
// read, and so is an empty answer below the high watermark; the read starts
// over from offset 0 only when another broker answers or a transaction is
// open. (Starting over on every failed or empty fetch, as this did, could
// not finish a long seed's topic: 3800026's simtxc held 23,987 offsets,
// some 130 fetches a pass, and about 4.5% of fetches failed or came back
// empty under BUGGIFY: 137 passes in 30 s, none past offset 18,724.)
func (w *txcWorkload) readAll(fetch func(off int64, committed bool, done func(txcRead)), committed bool) ([]decodedRecord, [][]byte, bool) {
	r := w.r
	var recs []decodedRecord
	var batches [][]byte
	var src netx.NodeID // the broker recs came from (0: none yet)
	finished, busy, over := false, false, false
	deadline := r.now() + r.o.LivenessMax
	var from func(off int64)
	from = func(off int64) {
		if over {
			return
		}
		fetch(off, committed, func(rd txcRead) {
			if over {
				return
			}
			s := nextReadStep(off, rd.ok, rd.answered, src, committed && rd.lso < rd.hw, rd.next, rd.hw)
			switch {
			case !rd.ok:
				r.w.After(w.backoff(), func() { from(off) }) // from where it failed, recs kept
				return
			case s == readOver:
				busy = false // start over (another broker, or a transaction open)
				return
			}
			src = rd.answered
			recs, batches = append(recs, rd.recs...), append(batches, rd.batches...)
			switch s {
			case readDone:
				finished, busy = true, false
			case readAgain:
				// Nothing at off below the high watermark (BUGGIFY's
				// fetch-empty, a wait that ended first): ask again.
				r.w.After(w.backoff(), func() { from(off) }) // recs kept
			default:
				from(rd.next)
			}
		})
	}
	for !finished && r.now() < deadline && !r.halted {
		if !busy {
			busy, recs, batches, src = true, nil, nil, 0
			from(0)
		}
		r.runFor(200 * time.Millisecond)
	}
	over = true
	return recs, batches, finished
}

// committedLatest returns, for every key, the offset and value of its
// latest acknowledged committed write below bound.
func (w *txcWorkload) committedLatest(bound int64) (map[string]int64, map[string]string) {
	latest, val := map[string]int64{}, map[string]string{}
	for _, t := range w.txns {
		if t.outcome != txnCommitted {
			continue
		}
		for i, k := range t.keys {
			if off := t.offsets[i]; off >= 0 && off < bound {
				if o, ok := latest[k]; !ok || off > o {
					latest[k], val[k] = off, t.values[i]
				}
			}
		}
	}
	return latest, val
}

// checkLatest: for every key, a read_committed read of the topic from its
// start (recs) holds a record at or after the key's latest acknowledged
// committed write (latest, val: committedLatest when the read began).
func (w *txcWorkload) checkLatest(when string, recs []decodedRecord, latest map[string]int64, val map[string]string) {
	read := map[string]int64{}
	for _, rec := range recs {
		if t, ok := w.byValue[rec.value]; ok {
			for i, v := range t.values {
				if v == rec.value {
					read[t.keys[i]] = max(read[t.keys[i]], rec.offset)
				}
			}
		}
	}
	for _, k := range sortedStrings(latest) {
		if got, ok := read[k]; !ok || got < latest[k] {
			w.r.violation("checker", fmt.Sprintf("txncompact lost-latest invalid: %s key %s: latest committed write %q at offset %d, the %s read_committed read's latest for the key is at %d (found %v)",
				txcTopic, k, val[k], latest[k], when, got, ok))
		}
	}
}

// scan reads the topic read_committed from its start up to the last
// stable offset its first answer gives, and checks every key's latest
// committed value below it (during the run, one scan at a time).
func (w *txcWorkload) scan() {
	if w.scanning || w.r.stopping {
		return
	}
	w.scanning = true
	latest, val := w.committedLatest(math.MaxInt64)
	var recs []decodedRecord
	lso := int64(-1)
	var step func(off int64)
	step = func(off int64) {
		w.fetch(off, true, func(rd txcRead) {
			if !rd.ok {
				w.scanning = false
				return
			}
			if lso < 0 {
				lso = rd.lso
			}
			w.saw(rd.recs)
			recs = append(recs, rd.recs...)
			if rd.next >= lso {
				for k, off := range latest { //floe:unordered deleting from a map
					if off >= lso {
						delete(latest, k)
					}
				}
				w.checkLatest("scan", recs, latest, val)
				w.scans++
				w.scanning = false
				return
			}
			if rd.next <= off {
				w.scanning = false
				return
			}
			step(rd.next)
		})
	}
	step(0)
}

// coverRemoved counts, in a read_uncommitted scan, the aborted
// transactions' batches compaction emptied and the markers it removed.
func (w *txcWorkload) coverRemoved(batches [][]byte) {
	abortedAt := map[int64]bool{}
	for _, t := range w.txns {
		if t.outcome == txnAborted && t.offsets[0] >= 0 {
			abortedAt[t.offsets[0]] = true
		}
	}
	emptied, markers := 0, 0
	for _, b := range batches {
		h, err := records.ParseHeader(b)
		if err != nil || h.RecordCount > 0 {
			continue
		}
		switch {
		case h.IsControl():
			markers++
		case abortedAt[h.BaseOffset]:
			emptied++
		}
	}
	w.r.coverN("compaction removed an aborted transaction's records", emptied)
	w.r.coverN("compaction removed a transaction marker", markers)
	w.r.note(fmt.Sprintf("txncompact: %d aborted batches emptied and %d markers removed by compaction (read_uncommitted, leader n%d)", emptied, markers, w.leader))
}
