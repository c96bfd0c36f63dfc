package sim

// The share workload's dead-letter topic (issue 18): in most share seeds
// (shareDLQSeedShare, drawn from the seed alone, so the seed's other
// choices stay as they were) the group's errors.deadletterqueue.topic.name
// is dlq.simshare (KIP-1191's default prefix), which no one creates: the
// coordinator must, opted in (errors.deadletterqueue.group.enable). After the
// liveness phase the checker reads every partition of it and checks, from
// what clients were told:
//
//   - dlq-missing: a record whose reject was answered without error, or
//     that a client was handed at the delivery limit and that was never
//     accepted (nor possibly accepted), is not in the DLQ within
//     LivenessMax of the heal (it was archived as rejected or over the
//     limit, so its copy is owed, at least once);
//   - dlq-unexpected: a DLQ record that is not owed: its source offset was
//     accepted, or its reason is rejected though no client ever sent a
//     reject for it, or delivery-limit with a count below the limit; or
//     its value is not the source record's, or its origin headers are
//     missing; in seeds whose group sets
//     errors.deadletterqueue.copy.record.enable=false (shareDLQCopyOff,
//     KIP-1191), a dead letter that carries a key, a value or any header
//     but the __dlq.errors.* ones.
//
// Duplicates are allowed (at least once; node/share_dlq.go says when one
// can occur) and counted in the run's notes.

import (
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/records"
)

const (
	shareDLQTopic     = "dlq.simshare"
	shareDLQSeedShare = 0.75
	// dlqAbsentReads is how many reads in a row must find no dead-letter
	// topic, with no dead letter owed, for checkDLQ to stop waiting.
	dlqAbsentReads = 3
	// covDLQAbsentEnd counts checkDLQ's ends by dlqAbsentReads (not
	// required: TestShareDLQCheckEndsWhenNoneOwed holds a seed that reaches it).
	covDLQAbsentEnd = "share dead-letter check ended: no topic, none owed"
)

// shareDLQOn reports whether a seed's share group has a dead-letter
// topic: its own generator, so no other draw of the seed moves.
func shareDLQOn(seed int64) bool {
	return rand.New(rand.NewSource(seed^0xd1e7)).Float64() < shareDLQSeedShare
}

// shareDLQCopyOffShare is the share of dead-letter seeds whose group sets
// errors.deadletterqueue.copy.record.enable=false (the dead letters are
// headers only).
const shareDLQCopyOffShare = 0.3

// shareDLQCopyOff reports whether a seed's group turns the record copy
// off: its own generator, as shareDLQOn.
func shareDLQCopyOff(seed int64) bool {
	return shareDLQOn(seed) && rand.New(rand.NewSource(seed^0xc0b1)).Float64() < shareDLQCopyOffShare
}

// setGroupConfigs sets the group's dead-letter topic (when the seed has
// one) and its redelivery backoff (share_backoff.go), retrying until the
// controller took them, then calls done.
func (w *shareWork) setGroupConfigs(done func()) {
	r := w.r
	var try func()
	try = func() {
		if r.stopping {
			return
		}
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, shareGroup
		set := w.backoff.configs()
		if w.dlq {
			set = append(set, [2]string{"errors.deadletterqueue.topic.name", shareDLQTopic})
			if shareDLQCopyOff(r.o.Seed) {
				set = append(set, [2]string{"errors.deadletterqueue.copy.record.enable", "false"})
			}
		}
		for _, kv := range set {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = kv[0], kmsg.StringPtr(kv[1])
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
		r.kn.call(r.meta.anyNode(), req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
			if err == nil && len(resp.(*kmsg.IncrementalAlterConfigsResponse).Resources) == 1 &&
				resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode == 0 {
				done()
				return
			}
			r.w.After(100*time.Millisecond, try)
		})
	}
	try()
}

// dlqRec is one record read from the dead-letter topic.
type dlqRec struct {
	value   string
	copied  bool // it has a key, a value or a header of the record's own
	headers map[string]string
}

// readDLQ reads every partition of the dead-letter topic from 0 to its
// high watermark; done gets ok false if any read failed (or the topic does
// not exist yet: then w.dlqAbsent is set).
func (w *shareWork) readDLQ(done func(recs []dlqRec, ok bool)) {
	r := w.r
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(shareDLQTopic)
	req.Topics = append(req.Topics, rt)
	r.kn.call(r.meta.anyNode(), req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err != nil {
			done(nil, false)
			return
		}
		leaders := map[int32]netx.NodeID{}
		n := 0
		for _, t := range resp.(*kmsg.MetadataResponse).Topics {
			if t.Topic != nil && *t.Topic == shareDLQTopic && t.ErrorCode == kerr.UnknownTopicOrPartition.Code {
				w.dlqAbsent = true
			}
			if t.Topic == nil || *t.Topic != shareDLQTopic || t.ErrorCode != 0 {
				continue
			}
			n = len(t.Partitions)
			for _, p := range t.Partitions {
				if p.Leader > 0 && p.ErrorCode == 0 {
					leaders[p.Partition] = netx.NodeID(p.Leader)
				}
			}
		}
		if n == 0 || len(leaders) != n {
			done(nil, false)
			return
		}
		var all []dlqRec
		var part func(p int32, off int64)
		part = func(p int32, off int64) {
			if int(p) == n {
				done(all, true)
				return
			}
			w.fetchDLQ(leaders[p], p, off, func(recs []dlqRec, next, hw int64, ok bool) {
				if !ok {
					done(nil, false)
					return
				}
				all = append(all, recs...)
				if next >= hw {
					part(p+1, 0)
					return
				}
				part(p, next)
			})
		}
		part(0, 0)
	})
}

// fetchDLQ reads one partition of the dead-letter topic from off.
func (w *shareWork) fetchDLQ(leader netx.NodeID, part int32, off int64, done func(recs []dlqRec, next, hw int64, ok bool)) {
	r := w.r
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes = 12, -1, 256<<10
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = shareDLQTopic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = part, off, 64<<10, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r.kn.call(leader, req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err != nil {
			done(nil, off, 0, false)
			return
		}
		fr := resp.(*kmsg.FetchResponse)
		if fr.ErrorCode != 0 || len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 || fr.Topics[0].Partitions[0].ErrorCode != 0 {
			done(nil, off, 0, false)
			return
		}
		sp := fr.Topics[0].Partitions[0]
		batches, err := records.Split(sp.RecordBatches)
		if err != nil {
			r.violation("served-corruption", fmt.Sprintf("%s/%d from %d: %v", shareDLQTopic, part, off, err))
			done(nil, off, 0, false)
			return
		}
		var recs []dlqRec
		next := off
		for _, b := range batches {
			h, err := records.ParseHeader(b)
			if err != nil {
				done(nil, off, 0, false)
				return
			}
			if !h.IsControl() {
				_ = records.Records(b, func(x records.Record) error {
					if h.BaseOffset+int64(x.OffsetDelta) >= off {
						d := dlqRec{value: string(x.Value), copied: x.Key != nil || x.Value != nil, headers: map[string]string{}}
						for _, hd := range x.Headers {
							d.headers[hd.Key] = string(hd.Value)
							d.copied = d.copied || !strings.HasPrefix(hd.Key, "__dlq.errors.")
						}
						recs = append(recs, d)
					}
					return nil
				})
			}
			next = h.NextOffset()
		}
		if len(batches) == 0 && off < sp.HighWatermark {
			done(nil, off, 0, false) // nothing read below the high watermark: try again
			return
		}
		done(recs, next, sp.HighWatermark, true)
	})
}

// dlqSource is a dead letter's origin, from its headers.
type dlqSource struct {
	part   int32
	off    int64
	count  int16
	reason string
}

func parseDLQ(d dlqRec) (dlqSource, bool) {
	h := d.headers
	p, err1 := strconv.Atoi(h["__dlq.errors.partition"])
	off, err2 := strconv.ParseInt(h["__dlq.errors.offset"], 10, 64)
	n, err3 := strconv.Atoi(h["__dlq.errors.delivery.count"])
	if err1 != nil || err2 != nil || err3 != nil || h["__dlq.errors.topic"] != shareTopic || h["__dlq.errors.group.id"] != shareGroup ||
		h["__dlq.errors.timestamp"] == "" || p < 0 || p >= shareParts {
		return dlqSource{}, false
	}
	return dlqSource{part: int32(p), off: off, count: int16(n), reason: h["__dlq.errors.reason"]}, true
}

// owedDLQ lists the dead letters clients' answers make certain: rejected
// without error, or handed out at the limit and never (possibly)
// accepted; reason by source.
func (w *shareWork) owedDLQ() map[[2]int64]string {
	owed := map[[2]int64]string{}
	for part := int32(0); part < shareParts; part++ {
		for off, sr := range w.recs[part] { //floe:unordered a set
			switch {
			case sr.accepted != 0 || sr.maybe:
			case sr.rejected != 0:
				owed[[2]int64{int64(part), off}] = "rejected"
			case sr.maxCount >= w.limit:
				owed[[2]int64{int64(part), off}] = "delivery-limit"
			}
		}
	}
	return owed
}

// checkDLQ, after the share liveness phase, reads the dead-letter topic
// until it holds every owed dead letter (or LivenessMax passes) and checks
// it both ways.
func (w *shareWork) checkDLQ() {
	r := w.r
	missing := w.dlqMissing()
	deadline := r.now() + r.o.LivenessMax
	var last []dlqRec
	got := false
	absent := 0 // reads in a row that found no dead-letter topic
	for r.now() < deadline && !r.halted {
		read := false
		w.dlqAbsent = false
		w.readDLQ(func(recs []dlqRec, ok bool) {
			read = true
			if ok {
				last, got = recs, true
			}
		})
		r.runUntil(func() bool { return read }, 2*r.o.RequestTimeout)
		if got {
			if n, _ := missing(last); n == 0 {
				break
			}
		}
		// No dead letter owed and no dead-letter topic (the coordinator
		// creates it with the first copy): nothing to wait for. Without
		// this the check waited out LivenessMax, and a 5-node share seed
		// with no dead letter ran out of its event budget meanwhile
		// (--all-faults seed 2600247, a livelock). Several brokers must
		// say so, one after another, so that one whose metadata lags a
		// topic created late does not end the check early.
		if absent = absent + 1; !read || !w.dlqAbsent {
			absent = 0
		}
		if n, _ := missing(nil); n == 0 && absent >= dlqAbsentReads {
			r.cover(covDLQAbsentEnd)
			break
		}
		r.runUntil(func() bool { return false }, 500*time.Millisecond)
	}
	if r.halted {
		return
	}
	if n, first := missing(last); n > 0 {
		w.bad("dlq-missing", fmt.Sprintf("%d records archived as rejected or over the limit are not in %s within %v of the heal (read %v); first %s",
			n, shareDLQTopic, r.o.LivenessMax, got, first))
	}
	w.checkDLQRecords(last)
}

// dlqMissing returns the check checkDLQ makes of each read of the
// dead-letter topic: how many owed dead letters it lacks, and the first.
// What is owed is taken afresh at each read, from what clients were told
// by then: finishShare counts a record handed out at the delivery limit
// as finished at once, so its accept may still be in flight when the
// check starts, and answered without error it means no dead letter is
// owed (default seed 116 failed dlq-missing on such accepts).
func (w *shareWork) dlqMissing() func(recs []dlqRec) (int, string) {
	return func(recs []dlqRec) (int, string) {
		owed := w.owedDLQ()
		have := map[[2]int64]bool{}
		for _, d := range recs {
			if s, ok := parseDLQ(d); ok {
				have[[2]int64{int64(s.part), s.off}] = true
			}
		}
		n, first := 0, ""
		for _, k := range sortedSources(owed) {
			if !have[k] {
				if n == 0 {
					first = fmt.Sprintf("%s/%d offset %d (%s, %+v)", shareTopic, k[0], k[1], owed[k], *w.recs[int32(k[0])][k[1]])
				}
				n++
			}
		}
		return n, first
	}
}

// checkDLQRecords checks that every dead letter is owed or could be.
func (w *shareWork) checkDLQRecords(recs []dlqRec) {
	seen := map[[2]int64]int{}
	owed := w.owedDLQ()
	var unowed []string
	for _, d := range recs {
		s, ok := parseDLQ(d)
		if !ok {
			w.bad("dlq-unexpected", fmt.Sprintf("a record in %s without its origin headers: %v", shareDLQTopic, d.headers))
			continue
		}
		k := [2]int64{int64(s.part), s.off}
		seen[k]++
		if _, ok := owed[k]; !ok && len(unowed) < 3 {
			sr := w.recs[s.part][s.off]
			if sr == nil {
				sr = &shareRec{}
			}
			unowed = append(unowed, fmt.Sprintf("%d/%d %s@%d (seen: max count %d, accepted %d, rejected %d, maybe %v)",
				s.part, s.off, s.reason, s.count, sr.maxCount, sr.accepted, sr.rejected, sr.maybe))
		}
		where := fmt.Sprintf("%s/%d offset %d (dead-lettered as %s at count %d)", shareTopic, s.part, s.off, s.reason, s.count)
		sr := w.recs[s.part][s.off]
		if sr == nil {
			sr = &shareRec{}
		}
		switch {
		case sr.accepted != 0:
			w.bad("dlq-unexpected", fmt.Sprintf("%s was accepted at delivery %d", where, sr.accepted))
		case s.reason == "rejected" && !sr.rejectTried:
			w.bad("dlq-unexpected", fmt.Sprintf("%s: no client ever rejected it", where))
		case s.reason == "delivery-limit" && s.count != w.limit:
			w.bad("dlq-unexpected", fmt.Sprintf("%s: the delivery limit is %d", where, w.limit))
		case s.reason != "rejected" && s.reason != "delivery-limit":
			w.bad("dlq-unexpected", fmt.Sprintf("%s: unknown reason", where))
		}
		switch v, ok := w.values[s.part][s.off]; {
		case w.copyOff && d.copied:
			w.bad("dlq-unexpected", fmt.Sprintf("%s carries the record (value %q, headers %v) under errors.deadletterqueue.copy.record.enable=false", where, d.value, d.headers))
		case w.copyOff:
			w.r.cover("share dead letter without its record")
		case ok && v != d.value:
			w.bad("dlq-unexpected", fmt.Sprintf("%s holds value %q, the source record's is %q", where, d.value, v))
		}
	}
	dups := 0
	for _, n := range seen { //floe:unordered a sum
		dups += n - 1
	}
	w.r.note(fmt.Sprintf("share dlq: %d dead letters (%d duplicates), %d owed; not owed (possibly so) %v", len(recs), dups, len(owed), unowed))
	if len(recs) > 0 {
		w.r.cover("share dead letter copied")
	}
	if dups > 0 {
		w.r.cover("share dead letter duplicated")
	}
}

// noteProduced keeps the values a produce wrote, by offset.
func (w *shareWork) noteProduced(part int32, base int64, recs []records.Record) {
	if w.values[part] == nil {
		w.values[part] = map[int64]string{}
	}
	for i, rec := range recs {
		w.values[part][base+int64(i)] = string(rec.Value)
	}
}

// sortedSources returns the keys of owed in (partition, offset) order.
func sortedSources(owed map[[2]int64]string) [][2]int64 {
	keys := make([][2]int64, 0, len(owed))
	for k := range owed { //floe:unordered sorted below
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	return keys
}
