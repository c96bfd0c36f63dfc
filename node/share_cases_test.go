package node

// The share group APIs' cases in the every-API matrices: authorization
// (authz_test.go) and majority loss (deadline_test.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func shareHeartbeatReq(g, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatRequest {
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.Version, hb.GroupID, hb.MemberID, hb.MemberEpoch = 1, g, member, epoch
	if epoch == 0 {
		hb.SubscribedTopicNames = append([]string{}, topics...)
	}
	return hb
}

func shareFetchReq(g, member string, epoch int32) *kmsg.ShareFetchRequest {
	f := kmsg.NewPtrShareFetchRequest()
	f.Version, f.GroupID, f.MemberID, f.ShareSessionEpoch = 2, kmsg.StringPtr(g), kmsg.StringPtr(member), epoch
	f.MaxRecords, f.BatchSize, f.MaxBytes = 100, 100, 1<<20
	return f
}

func shareAckReq(g, member string, epoch int32) *kmsg.ShareAcknowledgeRequest {
	a := kmsg.NewPtrShareAcknowledgeRequest()
	a.Version, a.GroupID, a.MemberID, a.ShareSessionEpoch = 2, kmsg.StringPtr(g), kmsg.StringPtr(member), epoch
	return a
}

// addShareAuthCases adds the share APIs to the authorization matrix, on
// share group sg (g is a classic group there).
func addShareAuthCases(cases map[int16]authCase) {
	cases[76] = authCase{needs: []string{"ALLOW READ GROUP LITERAL sg"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		return shareHeartbeatReq("sg", "alice-member", 0, "t")
	}}
	cases[77] = authCase{needs: []string{"ALLOW DESCRIBE GROUP LITERAL sg"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		d := kmsg.NewPtrShareGroupDescribeRequest()
		d.GroupIDs = []string{"sg"}
		return d
	}}
	cases[78] = authCase{needs: []string{"ALLOW READ GROUP LITERAL sg", "ALLOW READ TOPIC LITERAL t"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		return shareFetchReq("sg", "nobody", 0)
	}}
	cases[79] = authCase{needs: []string{"ALLOW READ GROUP LITERAL sg", "ALLOW READ TOPIC LITERAL t"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		return shareAckReq("sg", "nobody", 1)
	}}
	cases[90] = authCase{needs: []string{"ALLOW DESCRIBE GROUP LITERAL sg"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		return describeShareOffsetsReq("sg")
	}}
	cases[91] = authCase{needs: []string{"ALLOW READ GROUP LITERAL sg"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		return alterShareOffsetsReq("sg")
	}}
	cases[92] = authCase{needs: []string{"ALLOW DELETE GROUP LITERAL sg"}, denied: kerr.GroupAuthorizationFailed, req: func() kmsg.Request {
		return deleteShareOffsetsReq("sg")
	}}
}

func describeShareOffsetsReq(g string) *kmsg.DescribeShareGroupOffsetsRequest {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Version = 1
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = g
	req.Groups = append(req.Groups, rg)
	return req
}

// alterShareOffsetsReq and deleteShareOffsetsReq name no topic: the
// group-level checks are what the matrices exercise.
func alterShareOffsetsReq(g string) *kmsg.AlterShareGroupOffsetsRequest {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = g
	return req
}

func deleteShareOffsetsReq(g string) *kmsg.DeleteShareGroupOffsetsRequest {
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = g
	return req
}

// addShareMajorityLossCases adds the share APIs to the majority-loss
// matrix. Joining changes only the coordinator's memory; the fetch and the
// acknowledgement name no member, so all answer at once.
func addShareMajorityLossCases(cases map[int16]apiCase, g string) {
	none := requestTimeoutDefault
	cases[76] = apiCase{shareHeartbeatReq("share-"+g, "m", 0, "q"), none, false}
	d := kmsg.NewPtrShareGroupDescribeRequest()
	d.GroupIDs = []string{"share-" + g}
	cases[77] = apiCase{d, none, false}
	cases[78] = apiCase{shareFetchReq("share-"+g, "nobody", 0), none, true}
	cases[79] = apiCase{shareAckReq("share-"+g, "nobody", 1), none, true}
	cases[90] = apiCase{describeShareOffsetsReq("share-" + g), none, false}
	cases[91] = apiCase{alterShareOffsetsReq("share-" + g), none, false}
	cases[92] = apiCase{deleteShareOffsetsReq("share-" + g), none, false}
}
