package workload

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/floe-broker/floe/jepsen/history"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func kerrCode(code int16) error { return kerr.ErrorForCode(code) }

// offsetLoop reads the group's committed offsets for every partition.
func (w *Workload) offsetLoop(ctx context.Context, group string) {
	proc := w.newProcess()
	for sleep(ctx, 500*time.Millisecond) == nil {
		var ask []history.Offset
		for p := int32(0); p < w.cfg.Partitions; p++ {
			ask = append(ask, history.Offset{Topic: w.cfg.Topic, Partition: p, Offset: history.NoOffset})
		}
		inv := w.rec.Invoke(history.Op{Process: proc, F: history.FetchOffset, Group: group, Offsets: ask})
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.OpTimeout)
		resp, err := w.adm.FetchOffsetsForTopics(octx, group, w.cfg.Topic)
		cancel()
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			w.rec.Complete(inv, history.Fail, history.Op{Group: group, Error: err.Error()})
			continue
		}
		var got []history.Offset
		for _, a := range ask {
			o, ok := resp.Lookup(a.Topic, a.Partition)
			at := history.NoOffset
			if ok && o.At >= 0 {
				at = o.At
			}
			got = append(got, history.Offset{Topic: a.Topic, Partition: a.Partition, Offset: at})
		}
		w.rec.Complete(inv, history.OK, history.Op{Group: group, Offsets: got})
	}
}

// fetchLoop sends direct fetches of random partitions from random offsets
// near the end of what it has seen.
func (w *Workload) fetchLoop(ctx context.Context, i int) {
	rnd := rand.New(rand.NewSource(w.cfg.Seed*1000 + 500 + int64(i)))
	proc := w.newProcess()
	hwm := map[int32]int64{}
	for sleep(ctx, 200*time.Millisecond) == nil {
		p := int32(rnd.Intn(int(w.cfg.Partitions)))
		start := max(0, hwm[p]-int64(rnd.Intn(20)))
		tp := history.Offset{Topic: w.cfg.Topic, Partition: p, Offset: start}
		inv := w.rec.Invoke(history.Op{Process: proc, F: history.Fetch, Offsets: []history.Offset{tp}})
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.OpTimeout)
		recs, h, node, err := w.fetch(octx, p, start)
		cancel()
		if err != nil {
			w.rec.Complete(inv, history.Fail, history.Op{Error: err.Error(), Node: node})
			continue
		}
		hwm[p] = h
		w.rec.Complete(inv, history.OK, history.Op{Records: recs, Node: node,
			HWMs: []history.Offset{{Topic: w.cfg.Topic, Partition: p, Offset: h}}})
	}
}

// fetch sends one Fetch request for partition p from offset start to the
// partition's leader, and returns the records and the high watermark of
// that one response, and the broker that answered.
func (w *Workload) fetch(ctx context.Context, p int32, start int64) ([]history.Record, int64, int32, error) {
	f, err := w.fetchAt(ctx, w.cfg.Topic, p, start, 0)
	return f.recs, f.hwm, f.node, err
}

// fetched is one Fetch response for one partition.
type fetched struct {
	recs     []history.Record
	hwm, lso int64
	// next is the offset after the last batch returned, control batches
	// (transaction markers) included; start when none was.
	next int64
	node int32 // the broker that answered (0: none)
}

// fetchAt sends one Fetch request for topic/p from start at isolation
// (0 read_uncommitted, 1 read_committed) to the partition's leader.
// read_committed drops the records of aborted transactions (the
// response's aborted-transaction list) and control records, as clients do.
func (w *Workload) fetchAt(ctx context.Context, topic string, p int32, start int64, isolation int8) (fetched, error) {
	md, err := w.adm.Metadata(ctx, topic)
	if err != nil {
		return fetched{}, err
	}
	td, ok := md.Topics[topic]
	if !ok || td.Partitions[p].Leader < 0 {
		return fetched{}, fmt.Errorf("no leader for %s/%d", topic, p)
	}
	f := fetched{node: td.Partitions[p].Leader}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
	req.SessionEpoch, req.IsolationLevel = -1, isolation
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, td.ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = p, start, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := w.admin.Broker(int(f.node)).Request(ctx, req)
	if err != nil {
		return f, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerrCode(resp.ErrorCode); err != nil {
		return f, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return f, errors.New("fetch response without the partition")
	}
	part := &resp.Topics[0].Partitions[0]
	opts := kgo.ProcessFetchPartitionOpts{Topic: topic, Partition: p, Offset: start}
	if isolation == 1 {
		opts.IsolationLevel = kgo.ReadCommitted()
	}
	fp, _ := kgo.ProcessFetchPartition(opts, part, kgo.DefaultDecompressor(), nil)
	if fp.Err != nil {
		return f, fp.Err
	}
	for _, r := range fp.Records {
		f.recs = append(f.recs, history.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
	}
	f.hwm, f.lso, f.next = fp.HighWatermark, fp.LastStableOffset, max(start, batchesEnd(part.RecordBatches))
	return f, nil
}

// batchesEnd returns the offset after the last complete record batch in
// raw (base offset + last offset delta + 1), or -1 if there is none.
func batchesEnd(raw []byte) int64 {
	end := int64(-1)
	for len(raw) >= 12 {
		n := 12 + int(binary.BigEndian.Uint32(raw[8:12]))
		if n < 27 || n > len(raw) {
			break // a partial batch at the end of the response
		}
		base := int64(binary.BigEndian.Uint64(raw[0:8]))
		end = base + int64(int32(binary.BigEndian.Uint32(raw[23:27]))) + 1
		raw = raw[n:]
	}
	return end
}

// FinalRead reads every partition from offset 0 to its high watermark, one
// read operation per partition (retrying fetches until ctx ends, when the
// read is recorded info).
func (w *Workload) FinalRead(ctx context.Context) error {
	proc := w.newProcess()
	var failed []int32
	for p := int32(0); p < w.cfg.Partitions; p++ {
		start := []history.Offset{{Topic: w.cfg.Topic, Partition: p, Offset: 0}}
		inv := w.rec.Invoke(history.Op{Process: proc, F: history.Read, Offsets: start})
		recs, hwm, err := w.readAll(ctx, p)
		if err != nil {
			w.rec.Complete(inv, history.Info, history.Op{Error: err.Error()})
			failed = append(failed, p)
			continue
		}
		w.rec.Complete(inv, history.OK, history.Op{Records: recs,
			HWMs: []history.Offset{{Topic: w.cfg.Topic, Partition: p, Offset: hwm}}})
	}
	var err error
	if len(failed) > 0 {
		err = fmt.Errorf("final read failed on partitions %v", failed)
	}
	if w.cfg.TxnProducers > 0 {
		err = errors.Join(err, w.txnFinalRead(ctx), w.txnOffsetsFinal(ctx))
	}
	return err
}

func (w *Workload) readAll(ctx context.Context, p int32) ([]history.Record, int64, error) {
	var all []history.Record
	next := int64(0)
	for {
		fctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
		recs, hwm, _, err := w.fetch(fctx, p, next)
		cancel()
		if err != nil {
			fmt.Fprintf(w.cfg.Log, "final read of partition %d at %d: %v\n", p, next, err)
			if serr := sleep(ctx, 500*time.Millisecond); serr != nil {
				return nil, 0, fmt.Errorf("%w (last error: %v)", serr, err)
			}
			continue
		}
		all = append(all, recs...)
		if len(recs) > 0 {
			next = recs[len(recs)-1].Offset + 1
		}
		if next >= hwm {
			return all, hwm, nil
		}
		if len(recs) == 0 {
			// Below the high watermark with nothing returned: try again
			// rather than step over an offset that may hold a record.
			if err := sleep(ctx, 200*time.Millisecond); err != nil {
				return nil, 0, fmt.Errorf("%w: no records at %d below high watermark %d", err, next, hwm)
			}
		}
	}
}
