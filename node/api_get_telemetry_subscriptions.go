package node

// GetTelemetrySubscriptions (key 71), version 0 (KIP-714): the broker's
// telemetry subscription (telemetry.go). A client that sends the zero
// instance id is given one. No ACL is needed, as in Kafka.

import "github.com/twmb/franz-go/pkg/kmsg"

func serveGetTelemetrySubscriptions(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := req.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	cfg := r.cfg.Telemetry.withDefaults()
	resp.ClientInstanceID = req.ClientInstanceID
	if resp.ClientInstanceID == ([16]byte{}) {
		for i := 0; i < len(resp.ClientInstanceID); i += 8 {
			v := r.env.Rand.Uint64()
			for j := 0; j < 8; j++ {
				resp.ClientInstanceID[i+j] = byte(v >> (8 * j))
			}
		}
		resp.ClientInstanceID[6] = resp.ClientInstanceID[6]&0x0f | 0x40
		resp.ClientInstanceID[8] = resp.ClientInstanceID[8]&0x3f | 0x80
	}
	resp.SubscriptionID = cfg.subscriptionID()
	resp.AcceptedCompressionTypes = []int8{} // uncompressed only
	resp.PushIntervalMillis = int32(cfg.PushInterval.Milliseconds())
	resp.TelemetryMaxBytes = cfg.MaxBytes
	resp.DeltaTemporality = false
	resp.RequestedMetrics = append([]string{}, cfg.Metrics...)
	respond(resp)
}
