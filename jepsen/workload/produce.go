package workload

import (
	"context"
	"math/rand"
	"strconv"
	"time"

	"github.com/floe-broker/floe/jepsen/history"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceLoop writes one unique value per operation until ctx ends. After
// an info it starts over with a new client under a new process id: the
// old client's state (sequence numbers, a retry still in flight) must not
// leak into the next operation.
func (w *Workload) produceLoop(ctx context.Context, i int) {
	rnd := rand.New(rand.NewSource(w.cfg.Seed*1000 + int64(i)))
	var interval time.Duration
	if w.cfg.Rate > 0 {
		interval = time.Duration(float64(w.cfg.Producers) / w.cfg.Rate * float64(time.Second))
	}
	for ctx.Err() == nil {
		cl, err := kgo.NewClient(producerOpts(w.cfg, w.cfg.Topic)...)
		if err != nil {
			_ = sleep(ctx, time.Second)
			continue
		}
		proc := w.newProcess()
		for ctx.Err() == nil && w.produceOne(ctx, cl, proc, int32(rnd.Intn(int(w.cfg.Partitions)))) {
			if interval > 0 {
				// Jitter keeps producers from moving in lockstep.
				_ = sleep(ctx, time.Duration(float64(interval)*(0.5+rnd.Float64())))
			}
		}
		cl.Close()
	}
}

// produceOne runs one produce operation; false if it ended info.
func (w *Workload) produceOne(ctx context.Context, cl *kgo.Client, proc int64, part int32) bool {
	value := strconv.FormatInt(w.values.Add(1), 10)
	recs := []history.Record{{Topic: w.cfg.Topic, Partition: part, Offset: -1, Value: value}}
	inv := w.rec.Invoke(history.Op{Process: proc, F: history.Produce, Records: recs})
	// The operation's own deadline, not the run's: stopping the producers
	// must not turn operations in flight into spurious infos.
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.OpTimeout+time.Second)
	defer cancel()
	r := &kgo.Record{Topic: w.cfg.Topic, Partition: part, Value: []byte(value)}
	if err := cl.ProduceSync(octx, r).FirstErr(); err != nil {
		w.rec.Complete(inv, history.Info, history.Op{Records: recs, Error: err.Error()})
		return false
	}
	done := []history.Record{{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Value: value}}
	w.rec.Complete(inv, history.OK, history.Op{Records: done})
	return true
}
