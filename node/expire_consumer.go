package node

// Expiry answers of the KIP-848 consumer group APIs (expire.go): the
// coordinator's COORDINATOR_NOT_AVAILABLE, as for the classic group APIs
// (a heartbeat whose record did not commit in time is retried; the write
// may still commit, and the member then hears its state at the next one).
// The KIP-714 telemetry APIs are answered at once and never expire; their
// expiry answer is REQUEST_TIMED_OUT all the same.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// expiredConsumer answers a KIP-848 group API (nil for any other request).
func expiredConsumer(req kmsg.Request) kmsg.Response {
	gone := kerr.CoordinatorNotAvailable.Code
	switch q := req.(type) {
	case *kmsg.ConsumerGroupHeartbeatRequest:
		resp := q.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = gone
		return resp
	case *kmsg.ConsumerGroupDescribeRequest:
		resp := q.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		for _, name := range q.Groups {
			g := kmsg.NewConsumerGroupDescribeResponseGroup()
			g.Group, g.ErrorCode = name, gone
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	case *kmsg.GetTelemetrySubscriptionsRequest:
		resp := q.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
		resp.ErrorCode = kerr.RequestTimedOut.Code
		return resp
	case *kmsg.PushTelemetryRequest:
		resp := q.ResponseKind().(*kmsg.PushTelemetryResponse)
		resp.ErrorCode = kerr.RequestTimedOut.Code
		return resp
	}
	return nil
}
