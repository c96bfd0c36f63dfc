package runtime

import (
	"context"
	"reflect"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/kafka"
	"github.com/floe-broker/floe/node/records"
)

// Span names of a traced request's children (the root is "kafka <API>").
const (
	spanReactorWait   = "reactor.wait"   // from the request's decode to the reactor taking it
	spanResponseWrite = "response.write" // from the answer to its bytes leaving for the socket
)

// linksMax caps the links one produce span carries (one per distinct
// traceparent among its records).
const linksMax = 32

// reqTrace is one traced request, from the connection's reader (serve)
// through the reactor (stage timings in core) to the writer (finish).
// Fields are written by one goroutine at a time, in that order; the
// kafka server's slot mutex orders the reactor's writes before the
// writer's reads.
//
// A request sampled only for the produce stage histograms (stages.go) has
// no tracer and no span (t and span nil) and a hist.
type reqTrace struct {
	t       *tracer
	span    trace.Span
	hist    *stageHistograms // nil unless sampled for the stage histograms
	readAt  time.Time        // its size prefix was read (zero: unknown)
	core    node.Trace       // written by the reactor until the answer
	posted  time.Time        // handed to the reactor's queue
	started time.Time        // the reactor began the request
	// answered is when the reactor answered; stages the copy of the
	// core's stages then (the reactor may still touch core later).
	answered time.Time
	stages   []node.TraceStage
	resp     kmsg.Response
}

// start opens the request's root span and returns its trace, or nil when
// the sampler drops it (the request then goes the untraced way). Runs on
// the connection's reader goroutine.
func (t *tracer) start(c *kafka.ConnInfo, req kmsg.Request) *reqTrace {
	now := time.Now()
	name := apiName(req.Key())
	_, span := t.t.Start(context.Background(), "kafka "+name, trace.WithTimestamp(now), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("rpc.system", "kafka"),
			attribute.String("kafka.api", name),
			attribute.Int("kafka.api_version", int(req.GetVersion())),
			attribute.String("kafka.client_id", c.ClientID),
			attribute.String("enduser.id", c.Principal),
			attribute.String("kafka.listener", c.Listener),
			attribute.String("client.address", c.Remote)))
	if !span.IsRecording() {
		return nil
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok {
		for _, l := range producedLinks(p) {
			span.AddLink(l)
		}
	}
	return &reqTrace{t: t, span: span, posted: now}
}

// producedLinks returns a link to each distinct W3C trace context found
// in the records' traceparent headers (as kotel and the Java agent write
// them), up to linksMax. A batch that does not parse adds nothing: the
// reactor validates it and answers the error.
func producedLinks(req *kmsg.ProduceRequest) []trace.Link {
	var links []trace.Link
	type id struct {
		trace trace.TraceID
		span  trace.SpanID
	}
	seen := map[id]bool{}
	prop := propagation.TraceContext{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			_ = records.Records(p.Records, func(r records.Record) error {
				for _, h := range r.Headers {
					if h.Key != "traceparent" || len(links) >= linksMax {
						continue
					}
					carrier := propagation.MapCarrier{"traceparent": string(h.Value)}
					sc := trace.SpanContextFromContext(prop.Extract(context.Background(), carrier))
					if k := (id{sc.TraceID(), sc.SpanID()}); sc.IsValid() && !seen[k] {
						seen[k] = true
						links = append(links, trace.Link{SpanContext: sc,
							Attributes: []attribute.KeyValue{attribute.String("messaging.destination.name", t.Topic)}})
					}
				}
				return nil
			})
		}
	}
	return links
}

// begin runs on the reactor as it takes the request: one clock read.
func (rt *reqTrace) begin() { rt.started = time.Now() }

// respond wraps the reactor's respond: it notes the answer and hands the
// server a response that reports when it was written. Runs on the
// reactor; the spans are built off it, by finish.
func (rt *reqTrace) respond(respond func(kmsg.Response)) func(kmsg.Response) {
	return func(resp kmsg.Response) {
		rt.answered = time.Now()
		rt.stages = append([]node.TraceStage(nil), rt.core.Stages...)
		rt.resp = resp
		if resp == nil || resp == kafka.CloseConnection {
			respond(resp)
			if rt.span != nil {
				go rt.finish(rt.answered, nil, false) // nothing is written
			}
			return
		}
		respond(&tracedResponse{Response: resp, rt: rt})
	}
}

// tracedResponse is a response whose write ends its request's span.
type tracedResponse struct {
	kmsg.Response
	rt *reqTrace
}

// Unwrap implements kafka.Unwrapper: the server reads the throttle time
// through it.
func (tr *tracedResponse) Unwrap() kmsg.Response { return tr.Response }

// Written implements kafka.WrittenNotifier.
func (tr *tracedResponse) Written(err error) { tr.rt.finish(time.Now(), err, true) }

// finish builds the child spans from the recorded times and ends the
// root span. Runs on the connection's writer goroutine (or its own).
func (rt *reqTrace) finish(end time.Time, writeErr error, written bool) {
	if rt.hist != nil && written && writeErr == nil {
		rt.hist.observe(produceBreakdown(stageTimes{readAt: rt.readAt, posted: rt.posted, started: rt.started,
			answered: rt.answered, written: end}, rt.stages))
	}
	if rt.span == nil {
		return
	}
	ctx := trace.ContextWithSpan(context.Background(), rt.span)
	child := func(name string, from, to time.Time, attrs ...attribute.KeyValue) {
		_, s := rt.t.t.Start(ctx, name, trace.WithTimestamp(from), trace.WithAttributes(attrs...))
		s.End(trace.WithTimestamp(to))
	}
	if !rt.started.IsZero() {
		child(spanReactorWait, rt.posted, rt.started)
	}
	var park time.Duration
	for _, st := range rt.stages {
		if st.Start.IsZero() {
			continue // an fsync round that had not begun by the answer
		}
		to, open := st.End, st.End.IsZero()
		if open {
			to = rt.answered
		}
		attrs := []attribute.KeyValue{attribute.Bool("floe.stage.open_at_answer", open)}
		if st.Topic != "" {
			attrs = append(attrs, attribute.String("messaging.destination.name", st.Topic),
				attribute.Int("messaging.destination.partition.id", int(st.Partition)))
		}
		if st.Name == node.StagePark {
			park += to.Sub(st.Start)
		}
		child(st.Name, st.Start, to, attrs...)
	}
	if written {
		child(spanResponseWrite, rt.answered, end)
	}
	if park > 0 {
		rt.span.SetAttributes(attribute.Float64("kafka.fetch.park_ms", float64(park)/float64(time.Millisecond)))
	}
	code := responseErrorCode(rt.resp)
	rt.span.SetAttributes(attribute.Int("kafka.error_code", int(code)))
	switch {
	case writeErr != nil:
		rt.span.SetStatus(codes.Error, writeErr.Error())
	case code != 0:
		rt.span.SetStatus(codes.Error, "kafka error code "+strconv.Itoa(int(code)))
	}
	rt.span.End(trace.WithTimestamp(end))
}

// responseErrorCode returns the response's top-level error code or, when
// that is 0, the first non-zero one among its topics' and partitions'
// (Produce, Fetch, and most per-partition APIs have no top-level code).
// Reflection, because kmsg's responses share no accessor; it runs only
// for traced requests, off the reactor.
func responseErrorCode(resp kmsg.Response) int16 {
	if resp == nil || resp == kafka.CloseConnection {
		return 0
	}
	return errorCodeIn(reflect.ValueOf(resp), 3)
}

func errorCodeIn(v reflect.Value, depth int) int16 {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return 0
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return 0
	}
	if f := v.FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 && f.Int() != 0 {
		return int16(f.Int())
	}
	if depth == 0 {
		return 0
	}
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.Struct {
			continue // records and other bytes hold no error code
		}
		for j := range f.Len() {
			if code := errorCodeIn(f.Index(j), depth-1); code != 0 {
				return code
			}
		}
	}
	return 0
}
