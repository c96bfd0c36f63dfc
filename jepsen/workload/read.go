package workload

import (
	"context"
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
	md, err := w.adm.Metadata(ctx, w.cfg.Topic)
	if err != nil {
		return nil, 0, 0, err
	}
	td, ok := md.Topics[w.cfg.Topic]
	if !ok || td.Partitions[p].Leader < 0 {
		return nil, 0, 0, fmt.Errorf("no leader for partition %d", p)
	}
	leader := td.Partitions[p].Leader
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = w.cfg.Topic, td.ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = p, start, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := w.admin.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		return nil, 0, leader, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerrCode(resp.ErrorCode); err != nil {
		return nil, 0, leader, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, 0, leader, errors.New("fetch response without the partition")
	}
	part := &resp.Topics[0].Partitions[0]
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: w.cfg.Topic, Partition: p, Offset: start},
		part, kgo.DefaultDecompressor(), nil)
	if fp.Err != nil {
		return nil, 0, leader, fp.Err
	}
	var recs []history.Record
	for _, r := range fp.Records {
		recs = append(recs, history.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
	}
	return recs, fp.HighWatermark, leader, nil
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
	if len(failed) > 0 {
		return fmt.Errorf("final read failed on partitions %v", failed)
	}
	return nil
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
