package sim

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node"
)

// Retention under faults (issue 15, "more of the product under test").
// In about half the seeds a second topic, simret (one partition,
// replication 3), runs with small segments and a retention limit by size
// or by time, so retention deletes segments while the nemesis crashes,
// cuts and moves replicas, and followers that fall behind the new log
// start are caught up with a Raft snapshot (the retention checkpoint).
//
// One producer writes unique values once each (no retries: an unknown
// outcome is simply not tracked) and remembers the offset and timestamp
// of every acknowledged record. A reader asks for the log start offset
// (ListOffsets earliest) and fetches from it. Checked:
//
//   - retention-too-early: a record below an observed log start offset
//     was allowed to go: by time, its timestamp is older than retention.ms
//     before the observation (checked in seeds with no clock fault, where
//     brokers' clocks are the true time);
//   - retention-read-mismatch: every offset reads the same value every
//     time, and an acknowledged record reads as acknowledged;
//   - retention-lost-record: after the heal, every acknowledged record at
//     or above the final log start offset is read back;
//   - white-box (retentionInvariants): retention never chooses an entry
//     not yet applied (retention-past-limit), and a deletion by size
//     leaves at least retention.bytes (retention-below-bytes).
//
// Options are drawn at the end of ChooseOptions (chooseRetention), so
// seeds without the topic run exactly as before.

const retTopic = "simret"

// retKeys is how many keys the compacted topic's records use.
const retKeys = 6

// RetentionOptions turn the retention workload on.
type RetentionOptions struct {
	On           bool
	SegmentBytes int64
	Bytes        int64 // retention.bytes, -1 for none
	Ms           int64 // retention.ms, -1 for none
	// Compact: cleanup.policy=compact instead (Bytes and Ms unused), with
	// keyed records over a few keys.
	Compact bool
}

func (o RetentionOptions) String() string {
	if o.Compact {
		return fmt.Sprintf("retention: topic %s segment.bytes=%d cleanup.policy=compact", retTopic, o.SegmentBytes)
	}
	return fmt.Sprintf("retention: topic %s segment.bytes=%d retention.bytes=%d retention.ms=%d", retTopic, o.SegmentBytes, o.Bytes, o.Ms)
}

// chooseRetention draws the retention workload from its own generator.
func chooseRetention(seed int64) RetentionOptions {
	rng := rand.New(rand.NewSource(seed ^ 0x7e7e))
	if rng.Intn(2) == 0 {
		return RetentionOptions{}
	}
	o := RetentionOptions{On: true, SegmentBytes: 512 + rng.Int63n(1536), Bytes: -1, Ms: -1}
	switch rng.Intn(3) {
	case 2:
		o.Compact = true
	case 0:
		o.Bytes = 1 // every sealed, applied segment may go
		if rng.Intn(2) == 0 {
			o.Bytes = 1024 + rng.Int63n(7*1024)
		}
	default:
		o.Ms = 100 + rng.Int63n(1900)
	}
	return o
}

type retAcked struct {
	value string
	tsMs  int64
}

// retWorkload is the retention workload's state.
type retWorkload struct {
	r      *run
	o      RetentionOptions
	rng    *rand.Rand
	ready  bool
	leader netx.NodeID // 0: unknown
	n      int
	// acked: offset -> the acknowledged record there; read: offset -> the
	// value every read found there.
	acked map[int64]retAcked
	read  map[int64]string
	// start: the largest log start offset observed.
	start   int64
	checks  int
	deleted int // acknowledged records observed deleted
	// fetched: the records of the last fetch answer, fetchedEnd the offset
	// after its last batch (compaction leaves batches with no records).
	fetched    []decodedRecord
	fetchedEnd int64
}

func (r *run) startRetention() {
	if !r.o.Retention.On {
		return
	}
	w := &retWorkload{r: r, o: r.o.Retention, rng: rand.New(rand.NewSource(r.o.Seed ^ 0x7e7e1)),
		acked: map[int64]retAcked{}, read: map[int64]string{}}
	r.ret = w
	r.active++
	w.create(func() {
		w.ready = true
		r.active++ // the reader; the producer keeps the creation's count
		w.produce()
		w.readLoop()
	})
}

func (w *retWorkload) create(done func()) {
	configs := [][2]string{{"segment.bytes", fmt.Sprint(w.o.SegmentBytes)},
		{"retention.bytes", fmt.Sprint(w.o.Bytes)}, {"retention.ms", fmt.Sprint(w.o.Ms)}}
	if w.o.Compact {
		configs = [][2]string{{"segment.bytes", fmt.Sprint(w.o.SegmentBytes)}, {"cleanup.policy", "compact"}}
	}
	w.r.createTopic(retTopic, configs, done)
}

// withLeader calls then with the partition's believed leader, asking for
// metadata first when it is not known (0 if still unknown).
func (w *retWorkload) withLeader(then func(netx.NodeID)) {
	if w.leader != 0 {
		then(w.leader)
		return
	}
	w.r.askLeader(retTopic, func(lead netx.NodeID) {
		if lead != 0 {
			w.leader = lead
		}
		w.r.w.After(w.r.backoff(), func() { then(w.leader) })
	})
}

func (w *retWorkload) after(f func()) {
	w.r.w.After(time.Duration(w.rng.Int63n(int64(w.r.o.ThinkMax)+1)), f)
}

// produce writes one batch of fresh values, once.
func (w *retWorkload) produce() {
	r := w.r
	if r.stopping {
		r.active--
		return
	}
	w.withLeader(func(leader netx.NodeID) {
		if leader == 0 {
			w.after(w.produce)
			return
		}
		var values, keys []string
		for i := 1 + w.rng.Intn(3); i > 0; i-- {
			w.n++
			k := fmt.Sprintf("k%d", w.rng.Intn(retKeys))
			values = append(values, fmt.Sprintf("%s:r%d-%s", k, w.n, strings.Repeat("x", 40)))
			keys = append(keys, k)
		}
		if !w.o.Compact {
			keys = nil
		}
		ts := r.w.Clock().Now().UnixMilli()
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks = 9, -1
		req.TimeoutMillis = int32((r.o.RequestTimeout * 8 / 10).Milliseconds())
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = retTopic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = encodeBatchCodec(values, keys, ts, producerStamp{pid: -1}, drawCodec(w.rng))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r.kn.call(leader, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
			code := int16(kerr.UnknownServerError.Code)
			base := int64(-1)
			if err == nil {
				for _, t := range resp.(*kmsg.ProduceResponse).Topics {
					for _, p := range t.Partitions {
						code, base = p.ErrorCode, p.BaseOffset
					}
				}
			}
			switch {
			case err == nil && code == 0:
				for i, v := range values {
					w.acked[base+int64(i)] = retAcked{value: v, tsMs: ts}
					w.see(base+int64(i), v)
				}
			case err != nil || retriable(code):
				w.leader = 0
			}
			w.after(w.produce)
		})
	})
}

// see records that offset holds value, by an acknowledgement or a read.
func (w *retWorkload) see(offset int64, value string) {
	if prev, ok := w.read[offset]; ok && prev != value {
		w.r.inv.fail("retention-read-mismatch", "%s offset %d holds %q, earlier %q", retTopic, offset, value, prev)
		return
	}
	w.read[offset] = value
}

func (w *retWorkload) readLoop() {
	r := w.r
	if r.stopping {
		r.active--
		return
	}
	w.readOnce(func(bool) { w.after(w.readLoop) })
}

// readOnce asks for the log start offset, checks what it says was deleted,
// and fetches from it (or from a random offset above it); done says
// whether the fetch reached the high watermark.
func (w *retWorkload) readOnce(done func(bool)) {
	r := w.r
	w.withLeader(func(leader netx.NodeID) {
		if leader == 0 {
			done(false)
			return
		}
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = 4, -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = retTopic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.CurrentLeaderEpoch = -2, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r.kn.call(leader, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
			start, code := int64(-1), int16(kerr.UnknownServerError.Code)
			if err == nil {
				for _, t := range resp.(*kmsg.ListOffsetsResponse).Topics {
					for _, p := range t.Partitions {
						code, start = p.ErrorCode, p.Offset
					}
				}
			}
			if err != nil || code != 0 {
				w.leader = 0
				done(false)
				return
			}
			w.sawStart(start)
			from := start
			if top := w.top(); top > start && w.rng.Intn(2) == 0 {
				from = start + w.rng.Int63n(top-start)
			}
			w.fetch(leader, from, done)
		})
	})
}

func (w *retWorkload) top() int64 {
	var top int64
	for off := range w.acked {
		top = max(top, off+1)
	}
	return top
}

// sawStart checks an observed log start offset against the limits: in a
// seed with no clock fault, a record below it must be older than
// retention.ms (brokers delete whole segments whose newest timestamp is
// past the limit).
func (w *retWorkload) sawStart(start int64) {
	if start <= w.start {
		return
	}
	nowMs := w.r.w.Clock().Now().UnixMilli()
	for off := w.start; off < start; off++ {
		a, ok := w.acked[off]
		if !ok {
			continue
		}
		w.deleted++
		if w.o.Ms >= 0 && w.o.Bytes < 0 && w.r.o.Faults.Clock == 0 && a.tsMs >= nowMs-w.o.Ms {
			w.r.inv.fail("retention-too-early", "%s offset %d (timestamp %d) deleted by %d with retention.ms=%d: it was %d ms old",
				retTopic, off, a.tsMs, nowMs, w.o.Ms, nowMs-a.tsMs)
		}
	}
	w.start = start
	w.checks++
}

// fetch reads from offset and checks every record against what was seen
// there before; done(true) when the answer reached the high watermark.
func (w *retWorkload) fetch(leader netx.NodeID, offset int64, done func(bool)) {
	r := w.r
	w.fetched, w.fetchedEnd = w.fetched[:0], 0
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = 11, -1, 1<<20, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = retTopic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = offset, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r.kn.call(leader, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err != nil {
			w.leader = 0
			done(false)
			return
		}
		for _, t := range resp.(*kmsg.FetchResponse).Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					if retriable(p.ErrorCode) {
						w.leader = 0
					}
					done(false)
					return
				}
				recs, derr := decodeBatches(p.RecordBatches)
				if derr != nil {
					r.violation(decodeErrKind(derr), fmt.Sprintf("n%d served %s/0 from offset %d: %v", leader, retTopic, offset, derr))
					done(false)
					return
				}
				end := max(offset, batchesEnd(p.RecordBatches))
				for _, rec := range recs {
					if rec.offset < offset {
						continue
					}
					w.see(rec.offset, rec.value)
					end = max(end, rec.offset+1)
				}
				w.fetched, w.fetchedEnd = append(w.fetched[:0], recs...), end
				done(end >= p.HighWatermark)
				return
			}
		}
		done(false)
	})
}

// finishRetention, after the heal: reads the topic from its log start to
// its high watermark and requires every acknowledged record from the
// start on.
func (r *run) finishRetention() {
	w := r.ret
	if w == nil || !w.ready {
		return
	}
	var got map[int64]string
	var start int64
	var finished, busy bool
	var readAll func(from int64)
	readAll = func(from int64) {
		w.withLeader(func(leader netx.NodeID) {
			if leader == 0 {
				busy = false
				return
			}
			w.fetch(leader, from, func(reached bool) {
				r.w.Tracef("retention final read: n%d from %d: %d records, end %d, reached %v", leader, from, len(w.fetched), w.fetchedEnd, reached)
				for _, rec := range w.fetched {
					if rec.offset >= from {
						got[rec.offset] = rec.value
					}
				}

				next := max(from, w.fetchedEnd)
				if reached {
					finished, busy = true, false
					return
				}
				if next == from {
					busy = false
					return
				}
				readAll(next)
			})
		})
	}
	kick := func() {
		busy, got = true, map[int64]string{}
		w.readOnce(func(bool) {
			start = w.start
			readAll(start)
		})
	}
	deadline := r.now() + r.o.LivenessMax
	for !finished && r.now() < deadline && !r.halted {
		if !busy {
			kick()
		}
		r.runFor(200 * time.Millisecond)
	}
	if !finished {
		r.violation("liveness", fmt.Sprintf("%s was not read from its log start to its high watermark within %v", retTopic, r.o.LivenessMax))
		return
	}
	if w.o.Compact {
		w.checkCompacted(got)
		return
	}
	for _, off := range sortedOffsets(w.acked) {
		a := w.acked[off]
		if off < start {
			continue
		}
		if v, ok := got[off]; !ok || v != a.value {
			r.inv.fail("retention-lost-record", "%s offset %d: acknowledged %q, final read from the log start %d found %q", retTopic, off, a.value, start, v)
		}
	}
	r.w.Tracef("retention: %d records acknowledged, %d observed deleted, %d start offsets checked, final start %d", len(w.acked), w.deleted, w.checks, start)
}

// retentionInvariants checks one replica view of a partition with a
// retention limit (called by the invariants on every observation).
func (r *run) retentionInvariants(id netx.NodeID, inc uint64, prev memberSeen, hadPrev bool, v node.ReplicaView) {
	if v.RetentionBound > v.Applied {
		r.inv.fail("retention-past-limit", "n%d.%d group %d: retention would drop through index %d, applied only %d", id, inc, v.Group, v.RetentionBound, v.Applied)
	}
	if !hadPrev || prev.inc != inc || prev.opening != v.Opening {
		return
	}
	if v.SegmentsRemoved > prev.segRemoved && (v.RetentionBytes >= 0 || v.RetentionMs >= 0) {
		r.cover("retention deleted a segment")
	}
	if v.FirstIndex > prev.last+1 && v.FirstIndex > prev.first {
		r.cover("Raft snapshot installed")
	}
	if v.CleanerPasses > prev.cleanerPasses {
		r.cover("compaction pass completed")
	}
	// A deletion by size alone leaves at least retention.bytes; appends
	// only add. Skipped when the log was cut back (a truncated suffix) or
	// replaced by a snapshot (the first index past the old last one).
	if v.RetentionBytes >= 0 && v.RetentionMs < 0 && v.SegmentsRemoved > prev.segRemoved &&
		v.LastIndex >= prev.last && v.FirstIndex <= prev.last && v.LogBytes < v.RetentionBytes {
		r.inv.fail("retention-below-bytes", "n%d.%d group %d: retention deleted down to %d bytes, retention.bytes=%d", id, inc, v.Group, v.LogBytes, v.RetentionBytes)
	}
}

// checkCompacted: compaction keeps the latest record of every key, so for
// each key the final read holds a record at or after the offset of its
// latest acknowledged record (a later one may be a write whose answer was
// lost); and every record it holds is one that was written there.
func (w *retWorkload) checkCompacted(got map[int64]string) {
	keyOf := func(v string) string { return v[:strings.IndexByte(v, ':')+1] }
	latestAcked := map[string]int64{}
	for off, a := range w.acked {
		k := keyOf(a.value)
		if o, ok := latestAcked[k]; !ok || off > o {
			latestAcked[k] = off
		}
	}
	latestRead := map[string]int64{}
	for _, off := range sortedOffsets(got) {
		v := got[off]
		if a, ok := w.acked[off]; ok && a.value != v {
			w.r.inv.fail("compaction-changed-record", "%s offset %d: acknowledged %q, final read found %q", retTopic, off, a.value, v)
		}
		if k := keyOf(v); off >= latestRead[k] {
			latestRead[k] = off
		}
	}
	for _, k := range sortedStrings(latestAcked) {
		off := latestAcked[k]
		if r, ok := latestRead[k]; !ok || r < off {
			w.r.inv.fail("compaction-lost-latest", "%s key %s: latest acknowledged record at offset %d (%q), final read's latest for the key is at %d",
				retTopic, strings.TrimSuffix(k, ":"), off, w.acked[off].value, r)
		}
	}
	w.r.w.Tracef("compaction: %d records acknowledged, %d read back after the heal", len(w.acked), len(got))
}

// batchesEnd is the offset after the last whole batch of a record set
// (base offset + last offset delta + 1), 0 if it holds none.
func batchesEnd(data []byte) int64 {
	var end int64
	for len(data) >= 27 {
		size := 12 + int(int32(binary.BigEndian.Uint32(data[8:])))
		if size < 27 || size > len(data) {
			break
		}
		base := int64(binary.BigEndian.Uint64(data))
		end = max(end, base+int64(int32(binary.BigEndian.Uint32(data[23:])))+1)
		data = data[size:]
	}
	return end
}

func sortedOffsets[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
