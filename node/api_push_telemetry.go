package node

// PushTelemetry (key 72), version 0 (KIP-714): a client's metrics, kept as
// its latest value per metric name (telemetry.go) and exposed summed
// across clients by the Prometheus endpoint. Errors, as Kafka's:
// INVALID_REQUEST for the zero instance id, UNKNOWN_SUBSCRIPTION_ID for a
// subscription that is not the current one, TELEMETRY_TOO_LARGE,
// UNSUPPORTED_COMPRESSION_TYPE (only uncompressed is accepted),
// THROTTLING_QUOTA_EXCEEDED for a push sooner than half the push interval
// after the last (a terminating push is always taken), INVALID_RECORD for
// metrics that do not decode as OTLP. No ACL is needed, as in Kafka.

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func servePushTelemetry(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.PushTelemetryRequest)
	resp := req.ResponseKind().(*kmsg.PushTelemetryResponse)
	resp.ErrorCode = r.pushTelemetryAt(req, r.monoNow())
	respond(resp)
}

func (r *Reactor) pushTelemetryAt(req *kmsg.PushTelemetryRequest, now time.Duration) int16 {
	cfg := r.cfg.Telemetry.withDefaults()
	t := &r.telemetry
	switch {
	case req.ClientInstanceID == ([16]byte{}):
		return kerr.InvalidRequest.Code
	case req.SubscriptionID != cfg.subscriptionID():
		return kerr.UnknownSubscriptionID.Code
	case len(req.Metrics) > int(cfg.MaxBytes):
		return kerr.TelemetryTooLarge.Code
	case req.CompressionType != 0:
		return kerr.UnsupportedCompressionType.Code
	}
	if old := t.clients[req.ClientInstanceID]; old != nil && old.pushed && !req.Terminating && now-old.lastPush < cfg.PushInterval/2 {
		return kerr.ThrottlingQuotaExceeded.Code
	}
	values := map[string]float64{}
	err := decodeOTLPMetrics(req.Metrics, func(name string, v float64) {
		if len(values) < telemetryNamesMax && requested(cfg.Metrics, name) {
			values[name] += v
		}
	})
	if err != nil {
		return kerr.InvalidRecord.Code
	}
	t.pushes++
	t.bytes += uint64(len(req.Metrics))
	if req.Terminating {
		delete(t.clients, req.ClientInstanceID)
		return 0
	}
	cl := t.client(req.ClientInstanceID)
	cl.lastPush, cl.pushed, cl.values = now, true, values
	return 0
}

// requested reports whether a metric name matches a requested prefix.
func requested(prefixes []string, name string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
