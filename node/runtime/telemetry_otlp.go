package runtime

// OTLP export of client telemetry (KIP-714): when tracing is on (the
// OTEL_* variables, tracing.go), the metrics clients pushed
// (node/telemetry.go: each client's latest value per metric name, summed
// across clients) also go out as OTLP metrics, every
// OTEL_METRIC_EXPORT_INTERVAL (60 s by default), to
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT (else OTEL_EXPORTER_OTLP_ENDPOINT
// plus /v1/metrics; else the spec's http://localhost:4318/v1/metrics),
// over OTLP/HTTP with protobuf bodies or, with the grpc protocol, OTLP/gRPC.
// OTEL_METRICS_EXPORTER=none switches the export off.
//
// Each metric keeps the client's name (org.apache.kafka.consumer...) as
// one gauge with one data point and no attributes: no client id, no
// instance id, so the series are bounded by the names (at most
// telemetryExportMax per export, the first in name order), whatever the
// number of clients. floe.client.telemetry.pushes counts the pushes taken
// (a cumulative sum).

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/floe-broker/floe/node"
)

// telemetryExportMax bounds the metrics one export carries.
const telemetryExportMax = 1000

// telemetryExportSettings is what the OTEL_* variables ask of the export.
type telemetryExportSettings struct {
	endpoint string // http(s) URL; for grpc, host:port
	grpc     bool
	insecure bool // grpc without TLS
	headers  map[string]string
	interval time.Duration
	timeout  time.Duration
	service  string
}

// parseTelemetryExportEnv returns the export's settings, or on false when
// tracing is off or OTEL_METRICS_EXPORTER=none. A value Floe cannot honour
// is an error (the broker refuses to start), as for tracing.
func parseTelemetryExportEnv(getenv func(string) string) (telemetryExportSettings, bool, error) {
	var s telemetryExportSettings
	tr, err := parseTracingEnv(getenv)
	if err != nil || !tr.on {
		return s, false, err
	}
	switch exp := strings.TrimSpace(getenv("OTEL_METRICS_EXPORTER")); exp {
	case "", "otlp":
	case "none":
		return s, false, nil
	default:
		return s, false, fmt.Errorf("OTEL_METRICS_EXPORTER=%q: Floe exports client telemetry with otlp only (or none)", exp)
	}
	first := func(names ...string) string {
		for _, n := range names {
			if v := strings.TrimSpace(getenv(n)); v != "" {
				return v
			}
		}
		return ""
	}
	proto := first("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	switch proto {
	case "", "http/protobuf":
	case "grpc":
		s.grpc = true
	default:
		return s, false, fmt.Errorf("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=%q: Floe speaks http/protobuf or grpc", proto)
	}
	if s.endpoint, s.insecure, err = metricsEndpoint(getenv, s.grpc); err != nil {
		return s, false, err
	}
	if s.headers, err = parseOTLPHeaders(first("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")); err != nil {
		return s, false, err
	}
	if s.interval, err = envMillis(first("OTEL_METRIC_EXPORT_INTERVAL"), 60*time.Second, "OTEL_METRIC_EXPORT_INTERVAL"); err != nil {
		return s, false, err
	}
	if s.timeout, err = envMillis(first("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"), 10*time.Second, "OTEL_EXPORTER_OTLP_TIMEOUT"); err != nil {
		return s, false, err
	}
	s.service = first("OTEL_SERVICE_NAME")
	if s.service == "" {
		s.service = "floe"
	}
	return s, true, nil
}

// metricsEndpoint is where metrics go, as the OTLP exporter specification
// says: the signal's own endpoint as it is, else the base endpoint plus
// /v1/metrics (HTTP), else the default.
func metricsEndpoint(getenv func(string) string, grpcProto bool) (string, bool, error) {
	own := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"))
	base := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	raw := own
	switch {
	case raw == "" && base != "" && !grpcProto:
		raw = strings.TrimSuffix(base, "/") + "/v1/metrics"
	case raw == "":
		raw = base
	}
	if raw == "" {
		raw = "http://localhost:4318/v1/metrics"
		if grpcProto {
			raw = "http://localhost:4317"
		}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false, fmt.Errorf("OTLP metrics endpoint %q: want http(s)://host:port[/path]", raw)
	}
	if grpcProto {
		ins := u.Scheme == "http" || strings.EqualFold(strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_INSECURE")), "true")
		return u.Host, ins, nil
	}
	return u.String(), false, nil
}

// parseOTLPHeaders reads "k1=v1,k2=v2" (values URL-encoded).
func parseOTLPHeaders(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: %q is not key=value", kv)
		}
		val, err := url.QueryUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: %q: %v", kv, err)
		}
		out[strings.TrimSpace(k)] = val
	}
	return out, nil
}

func envMillis(v string, def time.Duration, name string) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive number of milliseconds", name, v)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// telemetryExporter sends the pushed client metrics over OTLP on a timer.
type telemetryExporter struct {
	s        telemetryExportSettings
	nodeID   int32
	snapshot func() ([]node.TelemetryMetric, uint64, bool)
	log      *slog.Logger
	http     *http.Client
	conn     *grpc.ClientConn
	start    time.Time

	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	started bool // run was called (close waits for it)

	mu      sync.Mutex
	failing bool // the last export failed (logged once per streak)
}

// newTelemetryExporter returns the exporter the environment asks for, or
// nil when the export is off. run must be called to start it.
func newTelemetryExporter(getenv func(string) string, nodeID int32, log *slog.Logger,
	snapshot func() ([]node.TelemetryMetric, uint64, bool)) (*telemetryExporter, error) {
	s, on, err := parseTelemetryExportEnv(getenv)
	if err != nil || !on {
		return nil, err
	}
	e := &telemetryExporter{s: s, nodeID: nodeID, snapshot: snapshot, log: log, start: time.Now(),
		stop: make(chan struct{}), done: make(chan struct{})}
	if s.grpc {
		creds := insecure.NewCredentials()
		if !s.insecure {
			creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
		}
		if e.conn, err = grpc.NewClient(s.endpoint, grpc.WithTransportCredentials(creds)); err != nil {
			return nil, fmt.Errorf("client telemetry: OTLP gRPC endpoint %s: %w", s.endpoint, err)
		}
	} else {
		// its own transport, so close can drop its idle connections
		e.http = &http.Client{Timeout: s.timeout, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	return e, nil
}

// run exports every interval until close.
func (e *telemetryExporter) run() {
	if e == nil {
		return
	}
	e.started = true
	go func() {
		defer close(e.done)
		t := time.NewTicker(e.s.interval)
		defer t.Stop()
		for {
			select {
			case <-e.stop:
				return
			case <-t.C:
				e.exportOnce()
			}
		}
	}()
}

// close stops the timer and waits for an export in flight (bounded by
// the export timeout).
func (e *telemetryExporter) close() {
	if e == nil {
		return
	}
	e.once.Do(func() {
		close(e.stop)
		if e.started {
			select {
			case <-e.done:
			case <-time.After(e.s.timeout + time.Second):
			}
		}
		if e.conn != nil {
			_ = e.conn.Close()
		}
		if e.http != nil {
			e.http.CloseIdleConnections()
		}
	})
}

// exportOnce sends the current metrics; a failure is logged once until an
// export succeeds again.
func (e *telemetryExporter) exportOnce() {
	ms, pushes, ok := e.snapshot()
	if !ok {
		return
	}
	err := e.send(telemetryRequest(ms, pushes, e.s.service, e.nodeID, e.start, time.Now()))
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil && !e.failing {
		e.log.Warn("client telemetry: OTLP export failed", "endpoint", e.s.endpoint, "err", err)
	}
	if err == nil && e.failing {
		e.log.Info("client telemetry: OTLP export works again", "endpoint", e.s.endpoint)
	}
	e.failing = err != nil
}

func (e *telemetryExporter) send(req *colmetrics.ExportMetricsServiceRequest) error {
	ctx, cancel := context.WithTimeout(context.Background(), e.s.timeout)
	defer cancel()
	if e.conn != nil {
		if len(e.s.headers) > 0 {
			ctx = metadata.NewOutgoingContext(ctx, metadata.New(e.s.headers))
		}
		_, err := colmetrics.NewMetricsServiceClient(e.conn).Export(ctx, req)
		return err
	}
	body, err := proto.Marshal(req)
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, e.s.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/x-protobuf")
	for k, v := range e.s.headers {
		hr.Header.Set(k, v)
	}
	resp, err := e.http.Do(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %s", resp.Status)
	}
	return nil
}

// telemetryRequest is one export: a gauge per pushed metric name (at most
// telemetryExportMax, in name order) and the push counter.
func telemetryRequest(ms []node.TelemetryMetric, pushes uint64, service string, nodeID int32, start, now time.Time) *colmetrics.ExportMetricsServiceRequest {
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	at := uint64(now.UnixNano())
	var out []*metricspb.Metric
	for i, m := range ms {
		if i == telemetryExportMax {
			break
		}
		out = append(out, &metricspb.Metric{
			Name:        m.Name,
			Description: fmt.Sprintf("KIP-714 client metric, summed over the %d clients that pushed it to this broker", m.Clients),
			Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{
				TimeUnixNano: at, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: m.Value},
			}}}},
		})
	}
	out = append(out, &metricspb.Metric{
		Name: "floe.client.telemetry.pushes", Description: "KIP-714 PushTelemetry requests taken.", Unit: "{push}",
		Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
			IsMonotonic: true, AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
			DataPoints: []*metricspb.NumberDataPoint{{
				StartTimeUnixNano: uint64(start.UnixNano()), TimeUnixNano: at,
				Value: &metricspb.NumberDataPoint_AsInt{AsInt: int64(pushes)},
			}},
		}},
	})
	return &colmetrics.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
			str("service.name", service), str("service.instance.id", strconv.Itoa(int(nodeID))),
		}},
		ScopeMetrics: []*metricspb.ScopeMetrics{{
			Scope:   &commonpb.InstrumentationScope{Name: "github.com/floe-broker/floe/node/telemetry"},
			Metrics: out,
		}},
	}}}
}
