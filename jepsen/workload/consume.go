package workload

import (
	"context"
	"sort"
	"time"

	"github.com/floe-broker/floe/jepsen/history"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitEvery is how often a consumer commits what it polled.
const commitEvery = time.Second

// consumeLoop is one group member: poll, record, commit now and then.
// Rebalances are held while a poll's records are recorded
// (BlockRebalanceOnPoll), and the balancer is eager, so each assign event
// is the member's whole new assignment and it resumes from the committed
// offsets.
func (w *Workload) consumeLoop(ctx context.Context, group string) {
	proc := w.newProcess()
	assign := func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
		var tps []history.TP
		for _, p := range m[w.cfg.Topic] {
			tps = append(tps, history.TP{Topic: w.cfg.Topic, Partition: p})
		}
		sort.Slice(tps, func(i, j int) bool { return tps[i].Less(tps[j]) })
		w.rec.Add(history.Op{Process: proc, Type: history.OK, F: history.Assign, Group: group, Assigned: tps})
	}
	revoke := func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
		w.rec.Add(history.Op{Process: proc, Type: history.OK, F: history.Assign, Group: group, Note: "revoked"})
	}
	cl, err := kgo.NewClient(append(baseOpts(w.cfg),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(w.cfg.Topic),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.Balancers(kgo.RangeBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(time.Second),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.OnPartitionsAssigned(assign), kgo.OnPartitionsRevoked(revoke), kgo.OnPartitionsLost(revoke),
	)...)
	if err != nil {
		return
	}
	defer cl.Close()
	lastCommit := time.Now()
	for ctx.Err() == nil {
		w.pollOnce(ctx, cl, proc, group)
		if time.Since(lastCommit) >= commitEvery {
			w.commit(ctx, cl, proc, group)
			lastCommit = time.Now()
		}
		cl.AllowRebalance()
	}
}

func (w *Workload) pollOnce(ctx context.Context, cl *kgo.Client, proc int64, group string) {
	inv := w.rec.Invoke(history.Op{Process: proc, F: history.Poll, Group: group})
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	fetches := cl.PollRecords(pctx, 500)
	cancel()
	var recs []history.Record
	fetches.EachRecord(func(r *kgo.Record) {
		recs = append(recs, history.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
		w.notePolled(group, r)
	})
	note := ""
	fetches.EachError(func(t string, p int32, err error) {
		if err != context.DeadlineExceeded && err != context.Canceled && note == "" {
			note = err.Error()
		}
	})
	w.rec.Complete(inv, history.OK, history.Op{Group: group, Records: recs, Note: note})
}

// commit commits exactly the offsets it records. Any error is info: the
// commit may have been applied.
func (w *Workload) commit(ctx context.Context, cl *kgo.Client, proc int64, group string) {
	offs := cl.UncommittedOffsets()
	if len(offs[w.cfg.Topic]) == 0 {
		return
	}
	var list []history.Offset
	for p, eo := range offs[w.cfg.Topic] {
		list = append(list, history.Offset{Topic: w.cfg.Topic, Partition: p, Offset: eo.Offset})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Partition < list[j].Partition })
	inv := w.rec.Invoke(history.Op{Process: proc, F: history.Commit, Group: group, Offsets: list})
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.OpTimeout)
	defer cancel()
	var failure error
	cl.CommitOffsetsSync(cctx, offs, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		failure = err
		if err == nil {
			failure = commitError(resp)
		}
	})
	if failure != nil {
		w.rec.Complete(inv, history.Info, history.Op{Group: group, Offsets: list, Error: failure.Error()})
		return
	}
	w.rec.Complete(inv, history.OK, history.Op{Group: group, Offsets: list})
}

func commitError(resp *kmsg.OffsetCommitResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerrCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}
