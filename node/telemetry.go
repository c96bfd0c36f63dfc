package node

// Client telemetry (KIP-714): what GetTelemetrySubscriptions hands out and
// what PushTelemetry keeps (api_get_telemetry_subscriptions.go,
// api_push_telemetry.go).
//
// The subscription asks for the metrics whose names start with one of
// TelemetryConfig.Metrics (Kafka's prefix match; empty: none, so clients
// push nothing), every PushInterval, uncompressed (no compression type is
// accepted, so clients send the OTLP protobuf as it is), at most MaxBytes.
// A push is decoded (OTLP MetricsData: every gauge and sum data point) and
// each client's latest value per metric name is kept; Stats adds them up
// per name across clients for the Prometheus endpoint
// (floe_client_telemetry{metric=...}). Cardinality is bounded: at most
// telemetryClientsMax clients (the least recently heard from goes) and
// telemetryNamesMax names per client. While tracing is on, the runtime
// also exports the sums over OTLP (node/runtime/telemetry_otlp.go).
// Histograms and summaries are not decoded, and the state is this
// broker's memory only (a push is a hint, not a record: Kafka keeps none
// either).

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math"
	"sort"
	"strings"
	"time"
)

// TelemetryConfig is the broker's telemetry subscription.
type TelemetryConfig struct {
	Metrics      []string      // requested name prefixes; nil: DefaultTelemetryMetrics
	PushInterval time.Duration // 0: 30 s
	MaxBytes     int32         // 0: 1 MiB
}

// DefaultTelemetryMetrics are the prefixes asked for by default: the Java
// and librdkafka clients' standard producer and consumer metrics.
var DefaultTelemetryMetrics = []string{"org.apache.kafka.producer.", "org.apache.kafka.consumer."}

const (
	telemetryClientsMax = 256
	telemetryNamesMax   = 128
)

func (c TelemetryConfig) withDefaults() TelemetryConfig {
	if c.Metrics == nil {
		c.Metrics = DefaultTelemetryMetrics
	}
	if c.PushInterval <= 0 {
		c.PushInterval = 30 * time.Second
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 1 << 20
	}
	return c
}

// subscriptionID names the subscription's content, so a client holding an
// older one is told (UNKNOWN_SUBSCRIPTION_ID) to fetch it again.
func (c TelemetryConfig) subscriptionID() int32 {
	h := fnv.New32a()
	h.Write([]byte(strings.Join(c.Metrics, "\x00")))
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], uint64(c.PushInterval))
	binary.BigEndian.PutUint32(b[8:], uint32(c.MaxBytes))
	h.Write(b[:])
	return int32(h.Sum32() & 0x7fffffff)
}

// telemetryClient is one client instance's latest pushed values.
type telemetryClient struct {
	lastPush time.Duration
	pushed   bool
	values   map[string]float64
}

// telemetryState is the broker's telemetry memory.
type telemetryState struct {
	clients map[[16]byte]*telemetryClient
	pushes  uint64
	bytes   uint64
}

// TelemetryMetric is one metric name's value summed across the clients
// that pushed it.
type TelemetryMetric struct {
	Name    string
	Value   float64
	Clients int
}

// telemetryMetrics sums the clients' latest values per name, sorted.
func (t *telemetryState) metrics() []TelemetryMetric {
	sum := map[string]*TelemetryMetric{}
	for _, c := range t.clients { //floe:unordered sums; sorted below
		for n, v := range c.values { //floe:unordered sums
			m := sum[n]
			if m == nil {
				m = &TelemetryMetric{Name: n}
				sum[n] = m
			}
			m.Value += v
			m.Clients++
		}
	}
	out := make([]TelemetryMetric, 0, len(sum))
	for _, m := range sum { //floe:unordered sorted below
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// client returns the state of a client instance, making room for it.
func (t *telemetryState) client(id [16]byte) *telemetryClient {
	if t.clients == nil {
		t.clients = map[[16]byte]*telemetryClient{}
	}
	if c := t.clients[id]; c != nil {
		return c
	}
	if len(t.clients) >= telemetryClientsMax {
		var oldest [16]byte
		first := true
		for k, c := range t.clients { //floe:unordered a minimum, ties by id
			o := t.clients[oldest]
			if first || c.lastPush < o.lastPush || (c.lastPush == o.lastPush && string(k[:]) < string(oldest[:])) {
				oldest, first = k, false
			}
		}
		delete(t.clients, oldest)
	}
	c := &telemetryClient{values: map[string]float64{}}
	t.clients[id] = c
	return c
}

var errBadOTLP = errors.New("telemetry: metrics do not decode as OTLP MetricsData")

// decodeOTLPMetrics walks an OTLP MetricsData protobuf and calls fn with
// each gauge or sum metric's name and the sum of its number data points.
// Other metric kinds are skipped. Malformed input returns errBadOTLP.
func decodeOTLPMetrics(b []byte, fn func(name string, v float64)) error {
	// MetricsData.resource_metrics = 1 → ResourceMetrics.scope_metrics = 2
	// → ScopeMetrics.metrics = 2 → Metric{name = 1, gauge = 5, sum = 7}
	// → Gauge/Sum.data_points = 1 → NumberDataPoint{as_double = 4,
	// as_int = 6}.
	return pbFields(b, func(f int, wt int, v []byte, _ uint64) error {
		if f != 1 || wt != 2 {
			return nil
		}
		return pbFields(v, func(f int, wt int, v []byte, _ uint64) error {
			if f != 2 || wt != 2 {
				return nil
			}
			return pbFields(v, func(f int, wt int, v []byte, _ uint64) error {
				if f != 2 || wt != 2 {
					return nil
				}
				return decodeOTLPMetric(v, fn)
			})
		})
	})
}

func decodeOTLPMetric(b []byte, fn func(string, float64)) error {
	var name string
	var total float64
	number := false
	err := pbFields(b, func(f int, wt int, v []byte, _ uint64) error {
		switch {
		case f == 1 && wt == 2:
			name = string(v)
		case (f == 5 || f == 7) && wt == 2:
			number = true
			return pbFields(v, func(f int, wt int, v []byte, _ uint64) error {
				if f != 1 || wt != 2 {
					return nil
				}
				return pbFields(v, func(f int, wt int, _ []byte, x uint64) error {
					switch {
					case f == 4 && wt == 1:
						total += math.Float64frombits(x)
					case f == 6 && wt == 1:
						total += float64(int64(x))
					}
					return nil
				})
			})
		}
		return nil
	})
	if err == nil && number && name != "" {
		fn(name, total)
	}
	return err
}

// pbFields calls fn for each field of a protobuf message: its number, wire
// type, and its bytes (length-delimited) or value (varint, fixed).
func pbFields(b []byte, fn func(field, wireType int, v []byte, x uint64) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return errBadOTLP
		}
		b = b[n:]
		field, wt := int(key>>3), int(key&7)
		var v []byte
		var x uint64
		switch wt {
		case 0:
			x, n = binary.Uvarint(b)
			if n <= 0 {
				return errBadOTLP
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return errBadOTLP
			}
			x, b = binary.LittleEndian.Uint64(b), b[8:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return errBadOTLP
			}
			v, b = b[n:n+int(l)], b[n+int(l):]
		case 5:
			if len(b) < 4 {
				return errBadOTLP
			}
			x, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		default:
			return errBadOTLP
		}
		if field == 0 {
			return errBadOTLP
		}
		if err := fn(field, wt, v, x); err != nil {
			return err
		}
	}
	return nil
}
