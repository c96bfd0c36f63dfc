package node

// What AlterShareGroupOffsets and DeleteShareGroupOffsets (KIP-932) share:
// both change only an empty share group's state, and both write their
// records through the group's coordinator partition (shares.go) before
// they answer, every entry that was to be written answered
// NOT_LEADER_OR_FOLLOWER when the write failed (unknown whether it took
// effect).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/group"
)

// shareAdmin is what the two requests differ in before they touch state:
// the group, the operation they need on it, and whether the group must
// exist (GROUP_ID_NOT_FOUND) or may be one with no state yet.
type shareAdmin struct {
	group     string
	op        kmsg.ACLOperation
	mustExist bool
}

// changeEmptyShareGroup serves either request. It checks the client may do
// a.op on the group, that the group is coordinated here and empty, and
// lets apply change the group's state and fill in resp's per-entry
// answers; apply returns the records to write and the error codes of the
// entries they are for. A refusal sets topErr, resp's top-level error
// code.
func changeEmptyShareGroup[Req kmsg.Request, Resp kmsg.Response](r *Reactor, c Client, req Req, resp Resp, a shareAdmin, topErr *int16,
	apply func(*Reactor, *authz, *shareShard, Req, Resp) ([]group.Record, []*int16), respond func(kmsg.Response)) {
	az := r.authorize(c, req)
	sh, err := r.emptyShareShard(az, a)
	if err != nil {
		*topErr = err.Code
		respond(resp)
		return
	}
	recs, pending := apply(r, az, sh, req, resp)
	r.writeShareRecords(sh, recs, func(err error) {
		if err != nil {
			for _, code := range pending {
				*code = kerr.NotLeaderForPartition.Code
			}
		}
		respond(resp)
	})
}

// emptyShareShard returns the share state of the empty share group
// a.group, coordinated here and allowed a.op, or the error for the
// answer's top level: authorizedShareShard's, GROUP_ID_NOT_FOUND when
// a.mustExist and there is neither a group nor share state of that name,
// and NON_EMPTY_GROUP while the group has members.
func (r *Reactor) emptyShareShard(az *authz, a shareAdmin) (*shareShard, *kerr.Error) {
	sh, err := r.authorizedShareShard(az, a.group, a.op)
	switch {
	case err != nil:
		return nil, err
	case a.mustExist && !sh.hasShareGroup(a.group):
		return nil, kerr.GroupIDNotFound
	case !sh.shareGroupEmpty(a.group):
		return nil, kerr.NonEmptyGroup
	}
	return sh, nil
}
