package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/kafka"
	"github.com/floe-broker/floe/node/records"
)

// BenchmarkReactorProduce measures what serving one acks=1 produce costs
// the reactor, tracing off and on, on a real single-node broker: the
// event the handler posts (handler.task) is timed inside the loop, so the
// hop onto the loop and the span building (off the reactor, on the
// writer) are left out. reactor-ns/op is that time; allocs/op counts the
// whole process. Tracing off, the event is the bare HandleRequest: the
// core's trace sites are nil tests that read no clock. Figures in
// docs/benchmarks.md.
func BenchmarkReactorProduce(b *testing.B) {
	// stages=off: no produce stage histograms (--produce-stage-sample 0);
	// the other variants break every produce down (the default).
	b.Run("tracing=off,stages=off", func(b *testing.B) { benchReactorProduce(b, false, -1) })
	b.Run("tracing=off", func(b *testing.B) { benchReactorProduce(b, false, 0) })
	b.Run("tracing=on", func(b *testing.B) { benchReactorProduce(b, true, 0) })
}

func benchReactorProduce(b *testing.B, traced bool, stageSample int) {
	br, err := Start(Options{DataDir: b.TempDir(), KafkaAddr: "127.0.0.1:0", Node: node.Config{NodeID: 1}, Logger: quietLogger(),
		ProduceStageSample: stageSample})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Shutdown(context.Background())
	if traced {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		br.tracer = &tracer{tp: tp, t: tp.Tracer("bench")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cl := client(b, br)
	_, err = kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "bench")
	cl.Close()
	if err != nil {
		b.Fatalf("create topic: %v", err)
	}
	batch := records.Build(records.BuildOptions{Codec: records.CodecNone, BaseTimestamp: time.Now().UnixMilli()},
		[]records.Record{{Value: make([]byte, 100)}})
	info := &kafka.ConnInfo{ID: 1, ClientID: "bench", Principal: "User:ANONYMOUS", Listener: "PLAINTEXT", Remote: "127.0.0.1:1"}
	h := handler{br}
	var onReactor time.Duration
	produce := func() int16 {
		req := produceRequest("bench", append([]byte(nil), batch...))
		var resp kmsg.Response
		fn := h.task(info, req, func(r kmsg.Response) { resp = r })
		if !br.loop.call(func() {
			t0 := time.Now()
			fn()
			onReactor += time.Since(t0)
		}, waitTimeout) {
			b.Fatal("the reactor did not answer")
		}
		if w, ok := resp.(kafka.WrittenNotifier); ok {
			w.Written(nil) // as the connection's writer would, off the reactor
			resp = w.(*tracedResponse).Response
		}
		return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	// The partition's leader may take a moment after the topic exists.
	for deadline := time.Now().Add(waitTimeout); produce() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("the partition has no leader")
		}
	}
	onReactor = 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if code := produce(); code != 0 {
			b.Fatalf("produce: error code %d", code)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(onReactor.Nanoseconds())/float64(b.N), "reactor-ns/op")
}

func produceRequest(topic string, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}
