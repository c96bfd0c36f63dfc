package runtime

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/floe-broker/floe/node"
)

// metricsReceiver is a minimal OTLP metrics receiver (HTTP or gRPC): it
// keeps the last value it saw of each metric, the resource's service
// name and the headers of the last export.
type metricsReceiver struct {
	colmetrics.UnimplementedMetricsServiceServer
	ln net.Listener

	mu      sync.Mutex
	values  map[string]float64
	service string
	header  string // x-floe-test of the last export
	bad     []string
}

func newMetricsReceiver(t *testing.T) *metricsReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &metricsReceiver{ln: ln, values: map[string]float64{}}
}

func (r *metricsReceiver) serveHTTP(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var ex colmetrics.ExportMetricsServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &ex)
		}
		if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
			r.mu.Lock()
			r.bad = append(r.bad, req.Header.Get("Content-Type")+": "+errString(err))
			r.mu.Unlock()
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		r.take(&ex, req.Header.Get("X-Floe-Test"))
		out, _ := proto.Marshal(&colmetrics.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(r.ln)
	t.Cleanup(func() { _ = srv.Close() })
}

func (r *metricsReceiver) serveGRPC(t *testing.T) {
	srv := grpc.NewServer()
	colmetrics.RegisterMetricsServiceServer(srv, r)
	go srv.Serve(r.ln)
	t.Cleanup(srv.Stop)
}

// Export is the gRPC service.
func (r *metricsReceiver) Export(ctx context.Context, ex *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	h := ""
	if md, ok := metadata.FromIncomingContext(ctx); ok && len(md.Get("x-floe-test")) > 0 {
		h = md.Get("x-floe-test")[0]
	}
	r.take(ex, h)
	return &colmetrics.ExportMetricsServiceResponse{}, nil
}

func (r *metricsReceiver) take(ex *colmetrics.ExportMetricsServiceRequest, header string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.header = header
	for _, rm := range ex.ResourceMetrics {
		for _, kv := range rm.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				r.service = kv.GetValue().GetStringValue()
			}
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				var dps []*metricspb.NumberDataPoint
				switch d := m.Data.(type) {
				case *metricspb.Metric_Gauge:
					dps = d.Gauge.DataPoints
				case *metricspb.Metric_Sum:
					dps = d.Sum.DataPoints
				}
				for _, dp := range dps {
					switch v := dp.Value.(type) {
					case *metricspb.NumberDataPoint_AsDouble:
						r.values[m.Name] = v.AsDouble
					case *metricspb.NumberDataPoint_AsInt:
						r.values[m.Name] = float64(v.AsInt)
					}
				}
			}
		}
	}
}

func (r *metricsReceiver) snapshot() (map[string]float64, string, string, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]float64{}
	for k, v := range r.values {
		out[k] = v
	}
	return out, r.service, r.header, append([]string(nil), r.bad...)
}

// otlpPayload is a client's KIP-714 push: OTLP MetricsData with a gauge
// and a sum.
func otlpPayload(t *testing.T, lag, sent float64) []byte {
	t.Helper()
	gauge := func(name string, v float64) *metricspb.Metric {
		return &metricspb.Metric{Name: name, Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{
			DataPoints: []*metricspb.NumberDataPoint{{Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}}}}}}
	}
	sum := &metricspb.Metric{Name: "org.apache.kafka.producer.record.send.total", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
		IsMonotonic: true, DataPoints: []*metricspb.NumberDataPoint{{Value: &metricspb.NumberDataPoint_AsInt{AsInt: int64(sent)}}}}}}
	md := &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{
		Metrics: []*metricspb.Metric{gauge("org.apache.kafka.consumer.fetch.manager.records.lag", lag), sum, gauge("app.not.requested", 1)},
	}}}}}
	b, err := proto.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A real broker with tracing on exports what two clients pushed
// (GetTelemetrySubscriptions, then PushTelemetry, scripted with franz-go's
// kmsg) over OTLP, summed per metric name, with no per-client series; a
// name outside the subscription is not exported. Both protocols.
func TestTelemetryOTLPExport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real broker")
	}
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			recv := newMetricsReceiver(t)
			if protocol == "grpc" {
				recv.serveGRPC(t)
			} else {
				recv.serveHTTP(t)
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+recv.ln.Addr().String())
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-floe-test=yes%20it%20is")
			t.Setenv("OTEL_SERVICE_NAME", "floe-telemetry-test")
			t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "100")
			b := startBroker(t, t.TempDir())
			defer func() { _ = b.Shutdown(context.Background()) }()
			if b.telemetryOTLP == nil {
				t.Fatal("the telemetry export is off with tracing on")
			}
			waitReady(t, b)
			pushTelemetry(t, b, [16]byte{1}, otlpPayload(t, 3, 10))
			pushTelemetry(t, b, [16]byte{2}, otlpPayload(t, 4, 5))

			deadline := time.Now().Add(waitTimeout)
			for {
				got, service, header, bad := recv.snapshot()
				if len(bad) > 0 {
					t.Fatalf("the receiver refused exports: %v", bad)
				}
				if got["org.apache.kafka.consumer.fetch.manager.records.lag"] == 7 && got["org.apache.kafka.producer.record.send.total"] == 15 &&
					got["floe.client.telemetry.pushes"] == 2 {
					if _, ok := got["app.not.requested"]; ok || len(got) != 3 {
						t.Fatalf("exported %v: want exactly the two requested names and the push counter", got)
					}
					if service != "floe-telemetry-test" || header != "yes it is" {
						t.Fatalf("service %q header %q", service, header)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("exported %v; want the lag summed to 7, sends to 15, 2 pushes", got)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// pushTelemetry subscribes as client id and pushes payload.
func pushTelemetry(t *testing.T, b *Broker, id [16]byte, payload []byte) {
	t.Helper()
	cl := client(t, b)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	sreq := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	sreq.ClientInstanceID = id
	sresp, err := sreq.RequestWith(ctx, cl)
	if err != nil || sresp.ErrorCode != 0 {
		t.Fatalf("GetTelemetrySubscriptions: %v %v", err, kerr.ErrorForCode(sresp.ErrorCode))
	}
	preq := kmsg.NewPtrPushTelemetryRequest()
	preq.ClientInstanceID, preq.SubscriptionID, preq.Metrics = id, sresp.SubscriptionID, payload
	presp, err := preq.RequestWith(ctx, cl)
	if err != nil || presp.ErrorCode != 0 {
		t.Fatalf("PushTelemetry: %v %v", err, kerr.ErrorForCode(presp.ErrorCode))
	}
}

func TestParseTelemetryExportEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, tc := range []struct {
		name     string
		getenv   func(string) string
		on       bool
		endpoint string
		err      bool
	}{
		{"tracing off", env(), false, "", false},
		{"base endpoint", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/"), true, "http://127.0.0.1:4318/v1/metrics", false},
		{"own endpoint as is", env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "https://c:1/m"), true, "https://c:1/m", false},
		{"default endpoint", env("OTEL_TRACES_EXPORTER", "otlp"), true, "http://localhost:4318/v1/metrics", false},
		{"grpc host", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), true, "c:4317", false},
		{"metrics off", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318", "OTEL_METRICS_EXPORTER", "none"), false, "", false},
		{"unknown exporter", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318", "OTEL_METRICS_EXPORTER", "zipkin"), false, "", true},
		{"bad interval", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318", "OTEL_METRIC_EXPORT_INTERVAL", "soon"), false, "", true},
		{"bad endpoint", env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "c:4318"), false, "", true},
		{"bad header", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS", "novalue"), false, "", true},
	} {
		s, on, err := parseTelemetryExportEnv(tc.getenv)
		if (err != nil) != tc.err || on != tc.on || (on && s.endpoint != tc.endpoint) {
			t.Errorf("%s: on %v endpoint %q err %v; want on %v endpoint %q err %v", tc.name, on, s.endpoint, err, tc.on, tc.endpoint, tc.err)
		}
	}
}

// The export is bounded: at most telemetryExportMax metrics however many
// names clients pushed, plus the push counter.
func TestTelemetryRequestBounded(t *testing.T) {
	var ms []node.TelemetryMetric
	for i := 0; i < telemetryExportMax+50; i++ {
		ms = append(ms, node.TelemetryMetric{Name: "org.apache.kafka.consumer.m" + strconv.Itoa(i), Value: float64(i), Clients: 1})
	}
	req := telemetryRequest(ms, 9, "floe", 1, time.Unix(0, 0), time.Unix(1, 0))
	got := req.ResourceMetrics[0].ScopeMetrics[0].Metrics
	if len(got) != telemetryExportMax+1 || got[len(got)-1].Name != "floe.client.telemetry.pushes" {
		t.Fatalf("%d metrics, last %q; want %d and the push counter last", len(got), got[len(got)-1].Name, telemetryExportMax+1)
	}
}
