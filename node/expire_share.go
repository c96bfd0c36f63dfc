package node

// Expiry answers of the share group APIs (expire.go): the coordinator's
// COORDINATOR_NOT_AVAILABLE for the group APIs, as for the classic ones;
// REQUEST_TIMED_OUT at the top level for ShareFetch and ShareAcknowledge,
// whose state write may still commit (the client's acks then stand, and
// records it did not hear of are redelivered when their locks expire), and
// for AlterShareGroupOffsets and DeleteShareGroupOffsets, whose write may
// too; DescribeShareGroupOffsets answers COORDINATOR_NOT_AVAILABLE per
// group.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// expiredShare answers a share group API (nil for any other request).
func expiredShare(req kmsg.Request) kmsg.Response {
	gone := kerr.CoordinatorNotAvailable.Code
	switch q := req.(type) {
	case *kmsg.ShareGroupHeartbeatRequest:
		resp := q.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = gone
		return resp
	case *kmsg.ShareGroupDescribeRequest:
		resp := q.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
		for _, name := range q.GroupIDs {
			g := kmsg.NewShareGroupDescribeResponseGroup()
			g.GroupID, g.ErrorCode = name, gone
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	case *kmsg.ShareFetchRequest:
		resp := q.ResponseKind().(*kmsg.ShareFetchResponse)
		resp.ErrorCode = kerr.RequestTimedOut.Code
		return resp
	case *kmsg.ShareAcknowledgeRequest:
		resp := q.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
		resp.ErrorCode = kerr.RequestTimedOut.Code
		return resp
	case *kmsg.DescribeShareGroupOffsetsRequest:
		resp := q.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
		for _, rg := range q.Groups {
			g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			g.GroupID, g.ErrorCode = rg.GroupID, gone
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	case *kmsg.AlterShareGroupOffsetsRequest:
		resp := q.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		resp.ErrorCode = kerr.RequestTimedOut.Code
		return resp
	case *kmsg.DeleteShareGroupOffsetsRequest:
		resp := q.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		resp.ErrorCode = kerr.RequestTimedOut.Code
		return resp
	}
	return nil
}
