package runtime

import (
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/node/kafka"
)

func TestAPIName(t *testing.T) {
	for key, want := range map[int16]string{0: "Produce", 1: "Fetch", 18: "ApiVersions", -1: "unknown"} {
		if got := apiName(key); got != want {
			t.Errorf("apiName(%d) = %q, want %q", key, got, want)
		}
	}
}

// Every metric the broker registers is named floe_*, and the observer
// hooks land in the right series.
func TestMetricsObservers(t *testing.T) {
	m := newMetrics()
	m.ObserveRequest(0, 9, 100, 20, 3*time.Millisecond, false)
	m.ObserveRequest(0, 9, 50, 10, time.Millisecond, true)
	m.ObserveRequest(-1, 0, 7, 0, 0, true)
	m.ObserveConnOpen()
	m.ObserveConnOpen()
	m.ObserveConnClose(kafka.ReasonClientClosed)
	m.ObserveSync(time.Millisecond, 4)
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "floe_") {
			t.Errorf("metric %s does not start with floe_", f.GetName())
		}
		for _, mt := range f.Metric {
			key := f.GetName()
			for _, l := range mt.Label {
				key += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			switch {
			case mt.Counter != nil:
				got[key] = mt.Counter.GetValue()
			case mt.Gauge != nil:
				got[key] = mt.Gauge.GetValue()
			case mt.Histogram != nil:
				got[key] = float64(mt.Histogram.GetSampleCount())
			}
		}
	}
	for key, want := range map[string]float64{
		"floe_requests_total{api=Produce}":           2,
		"floe_requests_total{api=unknown}":           1,
		"floe_request_errors_total{api=Produce}":     1,
		"floe_request_errors_total{api=unknown}":     1,
		"floe_request_duration_seconds{api=Produce}": 2,
		"floe_network_bytes_in_total":                157,
		"floe_network_bytes_out_total":               30,
		"floe_connections":                           1,
		"floe_fsync_duration_seconds":                1,
		"floe_fsync_round_logs":                      1,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
}
