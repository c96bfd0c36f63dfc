package node

// What CreateACLs and DeleteACLs (api_create_acls.go, api_delete_acls.go)
// share: each entry (a binding to create, a filter to delete by) is
// checked on its own, and the valid ones go to the controller in one
// command, whose outcome answers each of them.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

// aclChange is one CreateACLs or DeleteACLs request, its entries already
// converted to bindings or filters.
type aclChange[T interface{ Validate() error }] struct {
	entries []T
	// setErr sets entry i's error code and message in the response.
	setErr func(i int, code int16, msg *string)
	// command is the controller command that applies the valid entries.
	command func(valid []T) *controller.Command
	// applied adds what the command did for valid entry k (entry i of the
	// request) to the response, after its error is set.
	applied func(res controller.Result, k, i int)
}

// aclEntries converts a request's entries (creations, or filters) with
// of, and gives each its result, made by newResult (kmsg's defaults).
func aclEntries[E, T, R any](in []E, of func(E) T, newResult func() R) ([]T, []R) {
	entries, results := make([]T, len(in)), make([]R, len(in))
	for i, e := range in {
		entries[i], results[i] = of(e), newResult()
	}
	return entries, results
}

// serveACLChange refuses every entry without ALTER on the cluster
// (CLUSTER_AUTHORIZATION_FAILED) and each invalid one (INVALID_REQUEST,
// with Validate's reason), proposes the rest in one command, and answers
// once the command is applied or has failed.
func serveACLChange[T interface{ Validate() error }](r *Reactor, allowed bool, ch aclChange[T], respond func()) {
	var valid []T
	var at []int
	for i, e := range ch.entries {
		if !allowed {
			ch.setErr(i, errClusterAuth.Code, nil)
			continue
		}
		if err := e.Validate(); err != nil {
			ch.setErr(i, kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error()))
			continue
		}
		valid = append(valid, e)
		at = append(at, i)
	}
	if len(valid) == 0 {
		respond()
		return
	}
	r.propose(ch.command(valid), func(res controller.Result) {
		code, msg := errParts(res.Err)
		for k, i := range at {
			ch.setErr(i, code, msg)
			if ch.applied != nil {
				ch.applied(res, k, i)
			}
		}
		respond()
	})
}

// patternTypeAt is the pattern type of a binding or filter sent at
// version: v0 has none, and its ACLs and filters are LITERAL.
func patternTypeAt(version int16, sent kmsg.ACLResourcePatternType) kmsg.ACLResourcePatternType {
	if version == 0 {
		return kmsg.ACLResourcePatternTypeLiteral
	}
	return sent
}
