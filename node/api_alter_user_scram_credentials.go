package node

// AlterUserScramCredentials (key 51), version 0 (KIP-554).
//
// Creates, replaces and deletes users' SCRAM credentials. The client ran
// PBKDF2 and sends the salted password; this broker derives StoredKey and
// ServerKey from it (node/sasl) and forwards only those, with the salt and
// iteration count, to the controller: the salted password, a password
// equivalent, never reaches the metadata log. Each distinct user gets one
// result, in order of first mention, and a user's changes apply together
// or not at all (one controller command per user). Errors, as Kafka's:
// UNACCEPTABLE_CREDENTIAL for an empty name, iterations outside 4096-16384,
// an empty salt or a salted password of the wrong length;
// UNSUPPORTED_SASL_MECHANISM for a mechanism other than 1 (SCRAM-SHA-256)
// or 2 (SCRAM-SHA-512); DUPLICATE_RESOURCE for a user and mechanism named
// twice; RESOURCE_NOT_FOUND for deleting a credential that does not exist;
// REQUEST_TIMED_OUT when the controller did not apply the change in time.
//
// Authorization: ALTER on the cluster, else every user's result is
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/sasl"
)

// scramMechanismName maps KIP-554's mechanism numbers to names.
func scramMechanismName(m int8) string {
	switch m {
	case controller.MechanismScramSHA256:
		return sasl.ScramSHA256
	case controller.MechanismScramSHA512:
		return sasl.ScramSHA512
	}
	return ""
}

// userChange is one user's part of the request.
type userChange struct {
	cmd controller.AlterUser
	err error // the first problem found
}

func serveAlterUserScramCredentials(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	changes, order := planUserChanges(req)
	resp.Results = make([]kmsg.AlterUserSCRAMCredentialsResponseResult, len(order))
	if !r.authorize(c, req).cluster(kmsg.ACLOperationAlter) {
		for i, name := range order {
			resp.Results[i] = kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			resp.Results[i].User, resp.Results[i].ErrorCode = name, errClusterAuth.Code
		}
		respond(resp)
		return
	}
	g := newGather(func() { respond(resp) })
	for i, name := range order {
		res := &resp.Results[i]
		*res = kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = name
		ch := changes[name]
		if ch.err != nil {
			res.ErrorCode, res.ErrorMessage = errParts(ch.err)
			continue
		}
		g.add()
		r.propose(&controller.Command{AlterUser: &ch.cmd}, func(cr controller.Result) {
			res.ErrorCode, res.ErrorMessage = errParts(cr.Err)
			g.done()
		})
	}
	g.done()
}

// planUserChanges groups the request by user and checks it, deriving the
// stored keys of each upsertion. It returns the changes and the user
// names in order of first mention.
func planUserChanges(req *kmsg.AlterUserSCRAMCredentialsRequest) (map[string]*userChange, []string) {
	changes := map[string]*userChange{}
	var order []string
	get := func(name string) *userChange {
		ch, ok := changes[name]
		if !ok {
			ch = &userChange{cmd: controller.AlterUser{Name: name}}
			changes[name] = ch
			order = append(order, name)
		}
		return ch
	}
	type key struct {
		user string
		mech int8
	}
	seen := map[key]bool{}
	fail := func(ch *userChange, err error) {
		if ch.err == nil {
			ch.err = err
		}
	}
	check := func(ch *userChange, name string, mech int8) bool {
		switch {
		case name == "":
			fail(ch, withMessage(kerr.UnacceptableCredential, "the user name must not be empty"))
		case scramMechanismName(mech) == "":
			fail(ch, withMessage(kerr.UnsupportedSaslMechanism, fmt.Sprintf("unknown SCRAM mechanism %d (1 is SCRAM-SHA-256, 2 is SCRAM-SHA-512)", mech)))
		case seen[key{name, mech}]:
			fail(ch, withMessage(kerr.DuplicateResource, "a user's credential for one mechanism is altered twice in the request"))
		default:
			seen[key{name, mech}] = true
			return true
		}
		return false
	}
	for _, d := range req.Deletions {
		ch := get(d.Name)
		if check(ch, d.Name, d.Mechanism) {
			ch.cmd.Delete = append(ch.cmd.Delete, d.Mechanism)
		}
	}
	for _, u := range req.Upsertions {
		ch := get(u.Name)
		if !check(ch, u.Name, u.Mechanism) {
			continue
		}
		if u.Iterations < controller.ScramIterationsMin || u.Iterations > controller.ScramIterationsMax {
			fail(ch, withMessage(kerr.UnacceptableCredential, fmt.Sprintf("iterations must be within %d-%d, got %d",
				controller.ScramIterationsMin, controller.ScramIterationsMax, u.Iterations)))
			continue
		}
		cred, err := sasl.FromSaltedPassword(scramMechanismName(u.Mechanism), u.SaltedPassword, u.Salt, int(u.Iterations))
		if err != nil {
			fail(ch, withMessage(kerr.UnacceptableCredential, "the salt or salted password is malformed"))
			continue
		}
		ch.cmd.Upsert = append(ch.cmd.Upsert, controller.ScramCredential{Mechanism: u.Mechanism, Salt: cred.Salt,
			Iterations: u.Iterations, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey})
	}
	return changes, order
}
