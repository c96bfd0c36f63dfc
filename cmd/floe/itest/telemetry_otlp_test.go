//go:build cgo

package itest

// KIP-714 client telemetry over OTLP (node/runtime/telemetry_otlp.go)
// with a real client: a confluent-kafka-go producer (librdkafka 2.11,
// which pushes its metrics by default) against `floe serve` with tracing
// on; an OTLP/HTTP receiver in this process, on 127.0.0.1, decodes the
// broker's metric exports and sees librdkafka's producer metrics under
// their own names, the names /metrics shows as floe_client_telemetry.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"
)

func TestTelemetryOTLPLibrdkafka(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	names := map[string]bool{}
	pushes, bad := 0.0, ""
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/metrics", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var ex colmetrics.ExportMetricsServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &ex)
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			bad = err.Error()
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		for _, rm := range ex.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					names[m.Name] = true
					if m.Name == "floe.client.telemetry.pushes" {
						pushes = float64(m.GetSum().GetDataPoints()[0].GetAsInt())
					}
				}
			}
		}
		out, _ := proto.Marshal(&colmetrics.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	})
	mux.HandleFunc("/v1/traces", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { _ = srv.Close() })

	b := start(t, WithEnv("OTEL_EXPORTER_OTLP_ENDPOINT=http://"+ln.Addr().String(), "OTEL_TRACES_SAMPLER=always_off",
		"OTEL_METRIC_EXPORT_INTERVAL=200"), WithFlags("--telemetry-push-interval-ms=1000"))
	const topic = "telemetry-otlp"
	makeTopic(t, b.KafkaAddr, topic, 1, nil)
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": b.KafkaAddr, "log_level": 3})
	if err != nil {
		t.Fatalf("new producer: %v", err)
	}
	defer p.Close()
	tp := topic
	for i := 0; i < 10; i++ {
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &tp, Partition: 0}, Value: []byte(fmt.Sprint(i))}, nil); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	p.Flush(10000)

	var exported []string
	eventually(t, 60*time.Second, "librdkafka's pushed producer metrics exported over OTLP", func() bool {
		mu.Lock()
		defer mu.Unlock()
		if bad != "" {
			t.Fatalf("an export did not decode: %s", bad)
		}
		exported = exported[:0]
		for n := range names {
			if strings.HasPrefix(n, "org.apache.kafka.producer.") {
				exported = append(exported, n)
			}
		}
		return len(exported) > 0 && pushes >= 1
	})
	// the same names the Prometheus endpoint shows
	resp, err := http.Get("http://" + b.AdminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, n := range exported {
		if !strings.Contains(string(body), `floe_client_telemetry{metric="`+n+`"}`) {
			t.Errorf("%s exported over OTLP but not in /metrics", n)
		}
	}
	t.Logf("%d producer metrics exported over OTLP after %v pushes, e.g. %s", len(exported), pushes, exported[0])
}
