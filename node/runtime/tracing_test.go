package runtime

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/floe-broker/floe/node"
)

// otlpReceiver is a minimal OTLP/HTTP trace receiver: it decodes each
// export request's protobuf and keeps the spans with their service name.
type otlpReceiver struct {
	srv *http.Server
	ln  net.Listener

	mu      sync.Mutex
	spans   []*tracepb.Span
	service map[string]bool
	bad     []string
}

func startReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{ln: ln, service: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/traces", r.export)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go r.srv.Serve(ln)
	t.Cleanup(func() { _ = r.srv.Close() })
	return r
}

func (r *otlpReceiver) export(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var ex collectortrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &ex)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
		r.bad = append(r.bad, req.Header.Get("Content-Type")+": "+errString(err))
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	for _, rs := range ex.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				r.service[kv.GetValue().GetStringValue()] = true
			}
		}
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func (r *otlpReceiver) snapshot() ([]*tracepb.Span, map[string]bool, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	svc := map[string]bool{}
	for k := range r.service {
		svc[k] = true
	}
	return append([]*tracepb.Span(nil), r.spans...), svc, append([]string(nil), r.bad...)
}

func attr(s *tracepb.Span, key string) (*commonpb.AnyValue, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return nil, false
}

// A real broker with tracing switched on by the OTEL_* variables sends
// its spans over OTLP/HTTP: a franz-go produce whose record carries a
// traceparent gets a "kafka Produce" span linked to that trace, with a
// child for each stage; a fetch that waits gets its park time.
func TestTracingProduceSpanTree(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real broker")
	}
	recv := startReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+recv.ln.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "floe-under-test")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	b := startBroker(t, t.TempDir())
	shut := false
	defer func() {
		if !shut {
			_ = b.Shutdown(context.Background())
		}
	}()
	if b.tracer == nil {
		t.Fatal("tracing is off with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	waitReady(t, b)

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cl := client(t, b)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "traced"); err != nil {
		cl.Close()
		t.Fatalf("create topic: %v", err)
	}
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	rec := &kgo.Record{Topic: "traced", Value: []byte("v"),
		Headers: []kgo.RecordHeader{{Key: "traceparent", Value: []byte("00-" + traceID + "-" + parentID + "-01")}}}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		cl.Close()
		t.Fatalf("produce: %v", err)
	}
	cl.Close()

	// A consumer at the end of the log: its fetch parks for MaxWait.
	cons := consumerAtEnd(t, b, "traced")
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
	cons.PollFetches(pctx)
	pcancel()
	cons.Close()

	if err := b.Shutdown(ctx); err != nil { // flushes the exporter
		t.Fatalf("shutdown: %v", err)
	}
	shut = true
	spans, services, bad := recv.snapshot()
	if len(bad) > 0 {
		t.Fatalf("the receiver refused exports: %v", bad)
	}
	if !services["floe-under-test"] {
		t.Errorf("service names %v, want floe-under-test from OTEL_SERVICE_NAME", services)
	}
	checkProduceTree(t, spans, traceID, parentID)
	checkFetchPark(t, spans)
}

func consumerAtEnd(t *testing.T, b *Broker, topic string) *kgo.Client {
	t.Helper()
	return client(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.FetchMaxWait(300*time.Millisecond))
}

func checkProduceTree(t *testing.T, spans []*tracepb.Span, traceID, parentID string) {
	t.Helper()
	wantTrace, _ := hex.DecodeString(traceID)
	wantParent, _ := hex.DecodeString(parentID)
	var root *tracepb.Span
	for _, s := range spans {
		if s.Name != "kafka Produce" {
			continue
		}
		for _, l := range s.Links {
			if bytes.Equal(l.TraceId, wantTrace) && bytes.Equal(l.SpanId, wantParent) {
				root = s
			}
		}
	}
	if root == nil {
		t.Fatalf("no kafka Produce span links to trace %s span %s; spans: %s", traceID, parentID, spanNames(spans))
	}
	if bytes.Equal(root.TraceId, wantTrace) {
		t.Errorf("the broker's span joined the producer's trace; it must only link to it")
	}
	if len(root.ParentSpanId) != 0 {
		t.Errorf("the produce span has a parent %x; want a root", root.ParentSpanId)
	}
	if root.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("span kind %v, want server", root.Kind)
	}
	for key, want := range map[string]string{"kafka.api": "Produce", "enduser.id": "User:ANONYMOUS"} {
		if v, ok := attr(root, key); !ok || v.GetStringValue() != want {
			t.Errorf("attribute %s = %v, want %q", key, v, want)
		}
	}
	if v, ok := attr(root, "kafka.client_id"); !ok || v.GetStringValue() == "" {
		t.Errorf("attribute kafka.client_id = %v, want franz-go's client id", v)
	}
	if v, ok := attr(root, "kafka.error_code"); !ok || v.GetIntValue() != 0 {
		t.Errorf("attribute kafka.error_code = %v, want 0", v)
	}
	if v, ok := attr(root, "kafka.api_version"); !ok || v.GetIntValue() < 3 {
		t.Errorf("attribute kafka.api_version = %v", v)
	}
	children := map[string]*tracepb.Span{}
	for _, s := range spans {
		if bytes.Equal(s.ParentSpanId, root.SpanId) {
			if !bytes.Equal(s.TraceId, root.TraceId) {
				t.Errorf("child %s is in another trace", s.Name)
			}
			children[s.Name] = s
		}
	}
	for _, name := range []string{spanReactorWait, node.StageValidate, node.StageAppend, node.StageFsync, node.StageQuorum, spanResponseWrite} {
		c, ok := children[name]
		if !ok {
			t.Errorf("the produce span has no %q child; children: %v", name, keys(children))
			continue
		}
		if c.StartTimeUnixNano < root.StartTimeUnixNano || c.EndTimeUnixNano > root.EndTimeUnixNano || c.EndTimeUnixNano < c.StartTimeUnixNano {
			t.Errorf("child %s [%d, %d] is not inside its parent [%d, %d]", name, c.StartTimeUnixNano, c.EndTimeUnixNano,
				root.StartTimeUnixNano, root.EndTimeUnixNano)
		}
		if name == node.StageAppend {
			if v, ok := attr(c, "messaging.destination.name"); !ok || v.GetStringValue() != "traced" {
				t.Errorf("append span topic = %v, want traced", v)
			}
		}
	}
	if t.Failed() {
		return
	}
	// The stages come in the order the request goes through them.
	order := []string{spanReactorWait, node.StageValidate, node.StageAppend, node.StageFsync}
	for i := 1; i < len(order); i++ {
		if children[order[i]].StartTimeUnixNano < children[order[i-1]].EndTimeUnixNano {
			t.Errorf("%s starts before %s ends", order[i], order[i-1])
		}
	}
	if q, f := children[node.StageQuorum], children[node.StageFsync]; f.EndTimeUnixNano > q.EndTimeUnixNano {
		t.Errorf("a single node committed before its own fsync ended")
	}
	if w, q := children[spanResponseWrite], children[node.StageQuorum]; w.StartTimeUnixNano < q.EndTimeUnixNano {
		t.Errorf("the response was written before the commit")
	}
}

func checkFetchPark(t *testing.T, spans []*tracepb.Span) {
	t.Helper()
	for _, s := range spans {
		if s.Name != "kafka Fetch" {
			continue
		}
		v, ok := attr(s, "kafka.fetch.park_ms")
		if !ok {
			continue
		}
		if v.GetDoubleValue() <= 0 {
			t.Errorf("kafka.fetch.park_ms = %v", v)
		}
		for _, c := range spans {
			if c.Name == node.StagePark && bytes.Equal(c.ParentSpanId, s.SpanId) {
				return
			}
		}
		t.Errorf("a parked fetch span has no %s child", node.StagePark)
		return
	}
	t.Errorf("no kafka Fetch span records a park time; spans: %s", spanNames(spans))
}

func spanNames(spans []*tracepb.Span) string {
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

func keys(m map[string]*tracepb.Span) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Tracing is off unless the environment asks for it, and a value Floe
// does not support stops the broker with an error naming the variable.
func TestParseTracingEnv(t *testing.T) {
	for _, c := range []struct {
		env      map[string]string
		on       bool
		protocol string
		err      string
	}{
		{env: nil},
		{env: map[string]string{"OTEL_SERVICE_NAME": "x"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: true, protocol: "http/protobuf"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, on: true, protocol: "http/protobuf"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, on: true, protocol: "grpc"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, on: true, protocol: "http/protobuf"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}},
		{env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: "OTEL_TRACES_EXPORTER"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, err: "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "sometimes"}, err: "OTEL_TRACES_SAMPLER"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "traceidratio",
			"OTEL_TRACES_SAMPLER_ARG": "1.5"}, err: "OTEL_TRACES_SAMPLER_ARG"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
			"OTEL_TRACES_SAMPLER_ARG": "0.25"}, on: true, protocol: "http/protobuf"},
	} {
		s, err := parseTracingEnv(func(k string) string { return c.env[k] })
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want one naming %s", c.env, err, c.err)
			}
		case err != nil:
			t.Errorf("%v: %v", c.env, err)
		case s.on != c.on || s.protocol != c.protocol:
			t.Errorf("%v: on %v protocol %q, want %v %q", c.env, s.on, s.protocol, c.on, c.protocol)
		case s.on && s.sampler == nil:
			t.Errorf("%v: no sampler", c.env)
		}
	}
	s, err := parseSampler("parentbased_traceidratio", "0.25")
	if err != nil || !strings.Contains(s.Description(), "0.25") {
		t.Errorf("sampler %v (%v), want a ratio of 0.25", s, err)
	}
}

// grpcReceiver is a minimal OTLP/gRPC trace receiver.
type grpcReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
}

func (g *grpcReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				g.names = append(g.names, s.Name)
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// OTEL_EXPORTER_OTLP_PROTOCOL=grpc sends the spans over OTLP/gRPC.
func TestTracingOverGRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real broker")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	recv := &grpcReceiver{}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, recv)
	go srv.Serve(ln)
	defer srv.Stop()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	b := startBroker(t, t.TempDir())
	shut := false
	defer func() {
		if !shut {
			_ = b.Shutdown(context.Background())
		}
	}()
	waitReady(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cl := client(t, b)
	_, err = kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "g")
	if err == nil {
		err = cl.ProduceSync(ctx, &kgo.Record{Topic: "g", Value: []byte("v")}).FirstErr()
	}
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	shut = true
	recv.mu.Lock()
	defer recv.mu.Unlock()
	for _, n := range recv.names {
		if n == "kafka Produce" {
			return
		}
	}
	t.Errorf("no kafka Produce span over gRPC; got %v", recv.names)
}
