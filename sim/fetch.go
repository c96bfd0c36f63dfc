package sim

import (
	"cmp"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/jepsen/history"
	"github.com/floe-broker/floe/netx"
)

// fetched is what one Fetch of one partition returned.
type fetched struct {
	from    netx.NodeID
	deposed bool             // from answered while another broker led the partition in a later epoch
	records []history.Record // at or after the fetch offset, in order
	hwm     int64
	code    int16 // the partition's error code
	err     error // transport error or served corruption
}

func (f fetched) ok() bool { return f.err == nil && f.code == 0 }

func (f fetched) why() string {
	if f.err != nil {
		return f.err.Error()
	}
	return errName(f.code)
}

// fetchOnce fetches partition part from offset at its believed leader.
func (r *run) fetchOnce(part int32, offset int64, maxWaitMs int32, done func(fetched)) {
	leader, ok := r.meta.leader(part)
	if !ok {
		r.meta.refresh(nil)
		r.w.After(0, func() { done(fetched{code: kerr.LeaderNotAvailable.Code}) })
		return
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = -1
	req.MaxWaitMillis = maxWaitMs
	req.MinBytes = 1
	req.MaxBytes = 256 << 10
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = r.topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = part
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 32 << 10
	if !r.stopping { // the final reads, which start over on an error, keep 32 KiB
		rp.PartitionMaxBytes = cmp.Or(r.o.Knobs.FetchBytes, rp.PartitionMaxBytes)
	}
	rp.CurrentLeaderEpoch = -1
	rp.LogStartOffset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r.kn.callAt(leader, req, r.o.RequestTimeout, r.deposedProbe(leader, r.topic, part), func(resp kmsg.Response, err error, deposed bool) {
		res := fetched{from: leader, hwm: -1, deposed: deposed}
		if err != nil {
			res.err = err
			if err == errConnRefused {
				r.meta.invalidate(part)
			}
			done(res)
			return
		}
		fr := resp.(*kmsg.FetchResponse)
		res.code = kerr.UnknownServerError.Code
		if fr.ErrorCode != 0 {
			res.code = fr.ErrorCode
		}
		for _, t := range fr.Topics {
			for _, p := range t.Partitions {
				if t.Topic == r.topic && p.Partition == part && fr.ErrorCode == 0 {
					res.code, res.hwm = p.ErrorCode, p.HighWatermark
					res.records, res.err = r.decodeFetch(part, offset, leader, p.RecordBatches)
				}
			}
		}
		if res.code != 0 && retriable(res.code) {
			r.meta.invalidate(part)
		}
		done(res)
	})
}

// decodeFetch turns a fetched record set into history records at or after
// offset. A batch that fails its checksum is served corruption: the run
// records it as a violation, and the client rejects the fetch.
func (r *run) decodeFetch(part int32, offset int64, from netx.NodeID, data []byte) ([]history.Record, error) {
	recs, err := decodeBatches(data)
	if err != nil {
		r.violation(decodeErrKind(err), fmt.Sprintf("n%d served %s/%d from offset %d: %v", from, r.topic, part, offset, err))
		return nil, err
	}
	var out []history.Record
	if len(recs) > 0 && recs[len(recs)-1].offset >= offset {
		out = make([]history.Record, 0, len(recs)) // room for all: most are kept
	}
	for _, rec := range recs {
		if rec.offset >= offset {
			if rec.codec != 0 {
				r.cover(covCodecRead[rec.codec])
			}
			out = append(out, history.Record{Topic: r.topic, Partition: part, Offset: rec.offset, Value: rec.value})
		}
	}
	return out, nil
}

// fetcher is a client doing direct fetches of random partitions from
// random offsets up to the largest high watermark it has heard of: each is
// a Fetch operation with the high watermark the broker reported, for the
// linearizable-log and hwm-regression checkers.
type fetcher struct {
	r    *run
	proc int64
}

func (f *fetcher) start() {
	f.proc = f.r.newProc()
	f.r.active++
	f.next()
}

func (f *fetcher) next() {
	if f.r.stopping {
		f.r.active--
		return
	}
	f.r.w.After(f.r.think(), f.op)
}

func (f *fetcher) op() {
	r := f.r
	if r.stopping {
		r.active--
		return
	}
	part := int32(r.rng.Intn(int(r.o.Partitions)))
	start := int64(0)
	if top := r.topOffset[part]; top > 0 {
		start = r.rng.Int63n(top + 1)
	}
	tp := history.Offset{Topic: r.topic, Partition: part, Offset: start}
	inv := r.rec.Invoke(history.Op{Process: f.proc, F: history.Fetch, Offsets: []history.Offset{tp}})
	r.stats.Fetches++
	r.fetchOnce(part, start, int32(r.rng.Intn(50)), func(res fetched) {
		switch {
		case res.ok():
			hw := history.Offset{Topic: r.topic, Partition: part, Offset: res.hwm}
			r.rec.Complete(inv, history.OK, history.Op{Records: res.records, HWMs: []history.Offset{hw}, Node: int32(res.from), Note: deposedHow(res.deposed)})
			r.sawOffset(part, res.hwm)
		case res.err == errClientTimeout:
			r.rec.Complete(inv, history.Info, history.Op{Error: res.why(), Node: int32(res.from)})
			f.proc = r.newProc()
		default:
			r.rec.Complete(inv, history.Fail, history.Op{Error: res.why(), Node: int32(res.from)})
		}
		f.next()
	})
}

// finalRead reads partition part from the log start to its high watermark
// after healing: one Read operation, as many fetches as it takes, until
// done or the liveness deadline passes.
func (r *run) finalRead(part int32, done func(ok bool, hwm int64)) {
	r.finalReadWith(r.fetchOnce, part, done)
}

// finalReadWith is finalRead with its fetches made by fetch. The records of
// one read all come from one broker: a log is read from a single replica,
// never stitched from two. A failed fetch (NOT_LEADER_OR_FOLLOWER while a
// lease lapses, a client timeout, a corrupt batch refused) is retried at the
// offset reached, and the records read so far are kept; only an answer from
// another broker than the one they came from starts the read over from the
// log start. (Starting over on every error, as this did, could not finish
// a long seed's log: 3500098's 142,303 records took some 385 fetches, and
// with the BUGGIFY errors about 2% of fetches fail, so nearly every pass
// failed before its end, for 30 s.)
func (r *run) finalReadWith(fetch func(part int32, offset int64, maxWaitMs int32, done func(fetched)), part int32, done func(ok bool, hwm int64)) {
	proc := r.newProc()
	tp := history.Offset{Topic: r.topic, Partition: part, Offset: 0}
	inv := r.rec.Invoke(history.Op{Process: proc, F: history.Read, Offsets: []history.Offset{tp}})
	var recs []history.Record
	var from netx.NodeID // the broker recs were read from (0: none yet)
	var step func(offset int64)
	step = func(offset int64) {
		fetch(part, offset, 0, func(res fetched) {
			next := offset
			if n := len(res.records); n > 0 {
				next = res.records[n-1].Offset + 1
			}
			s := nextReadStep(offset, res.ok(), res.from, from, false, next, res.hwm)
			switch {
			case !res.ok():
				if r.now() > r.liveDeadline {
					r.rec.Complete(inv, history.Info, history.Op{Error: res.why()})
					done(false, -1)
					return
				}
				r.w.After(r.backoff(), func() { step(offset) }) // from where it failed, recs kept
				return
			case s == readOver:
				// Another broker answered (the leader moved): read its
				// log from the start.
				recs, from = recs[:0], 0
				step(0)
				return
			}
			from = res.from
			recs = append(recs, res.records...)
			switch s {
			case readDone:
				hw := history.Offset{Topic: r.topic, Partition: part, Offset: res.hwm}
				r.rec.Complete(inv, history.OK, history.Op{Records: recs, HWMs: []history.Offset{hw}, Node: int32(res.from)})
				done(true, res.hwm)
			case readAgain:
				// Nothing at offset below the high watermark: a gap the
				// broker cannot serve. Ask again shortly.
				r.w.After(r.backoff(), func() { step(offset) })
			default:
				step(next)
			}
		})
	}
	step(0)
}
