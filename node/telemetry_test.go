package node

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pb builds protobuf fields for the tests.
func pbBytes(field int, v []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(field<<3|2))
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func pbFixed64(field int, x uint64) []byte {
	b := binary.AppendUvarint(nil, uint64(field<<3|1))
	return binary.LittleEndian.AppendUint64(b, x)
}

// otlpGauge is a MetricsData with one metric of the given kind (5 gauge,
// 7 sum) and double data points.
func otlpMetric(name string, kind int, points ...float64) []byte {
	var dps []byte
	for _, p := range points {
		dps = append(dps, pbBytes(1, pbFixed64(4, math.Float64bits(p)))...)
	}
	metric := append(pbBytes(1, []byte(name)), pbBytes(kind, dps)...)
	scope := pbBytes(2, metric)
	resource := pbBytes(2, scope)
	return pbBytes(1, resource)
}

func TestDecodeOTLPMetrics(t *testing.T) {
	got := map[string]float64{}
	b := append(otlpMetric("org.apache.kafka.consumer.fetch.manager.records.lag", 5, 3, 4),
		otlpMetric("org.apache.kafka.producer.record.send.total", 7, 10)...)
	if err := decodeOTLPMetrics(b, func(n string, v float64) { got[n] += v }); err != nil {
		t.Fatal(err)
	}
	if got["org.apache.kafka.consumer.fetch.manager.records.lag"] != 7 || got["org.apache.kafka.producer.record.send.total"] != 10 || len(got) != 2 {
		t.Fatalf("decoded %v", got)
	}
	for _, bad := range [][]byte{{0xff}, {0x0a, 0x05, 0x01}, {0x0f}} {
		if err := decodeOTLPMetrics(bad, func(string, float64) {}); err == nil {
			t.Errorf("%x decoded", bad)
		}
	}
}

func TestPushTelemetry(t *testing.T) {
	r := &Reactor{}
	now := time.Duration(0)
	r.cfg.Telemetry = TelemetryConfig{PushInterval: 10 * time.Second, MaxBytes: 1000}
	mono := func() time.Duration { return now }
	push := func(id byte, sub int32, metrics []byte, terminating bool) int16 {
		req := kmsg.NewPtrPushTelemetryRequest()
		req.ClientInstanceID[0], req.SubscriptionID, req.Metrics, req.Terminating = id, sub, metrics, terminating
		return r.pushTelemetryAt(req, mono())
	}
	sub := r.cfg.Telemetry.withDefaults().subscriptionID()
	lag := otlpMetric("org.apache.kafka.consumer.lag", 5, 5)
	cases := []struct {
		name string
		code int16
		want *kerr.Error
	}{
		{"zero instance", push(0, sub, lag, false), kerr.InvalidRequest},
		{"stale subscription", push(1, sub+1, lag, false), kerr.UnknownSubscriptionID},
		{"too large", push(1, sub, make([]byte, 1001), false), kerr.TelemetryTooLarge},
		{"not OTLP", push(1, sub, []byte{0xff}, false), kerr.InvalidRecord},
	}
	for _, tc := range cases {
		if tc.code != tc.want.Code {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(tc.code), tc.want)
		}
	}
	if code := push(1, sub, lag, false); code != 0 {
		t.Fatalf("push: %v", kerr.ErrorForCode(code))
	}
	if code := push(2, sub, append(lag, otlpMetric("not.requested", 5, 1)...), false); code != 0 {
		t.Fatalf("push: %v", kerr.ErrorForCode(code))
	}
	if code := push(1, sub, lag, false); code != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("a push right after another: %v", kerr.ErrorForCode(code))
	}
	m := r.telemetry.metrics()
	if len(m) != 1 || m[0].Name != "org.apache.kafka.consumer.lag" || m[0].Value != 10 || m[0].Clients != 2 {
		t.Fatalf("metrics %+v", m)
	}
	now += 6 * time.Second
	if code := push(1, sub, nil, true); code != 0 {
		t.Fatalf("terminating push: %v", kerr.ErrorForCode(code))
	}
	if m := r.telemetry.metrics(); len(m) != 1 || m[0].Value != 5 {
		t.Fatalf("after client 1 terminated: %+v", m)
	}
}
