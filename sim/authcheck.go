package sim

// The checks of an authenticated run (auth.go, authwork.go).
//
//   - acl-decisions: every answer alice and bob got agrees with a naive
//     model of the ACLs its broker held when the request reached it:
//     denied by the model, the answer is TOPIC_AUTHORIZATION_FAILED (or
//     GROUP_AUTHORIZATION_FAILED for the group's requests);
//     allowed, it is anything else (success, or a failure for another
//     reason such as NOT_LEADER_OR_FOLLOWER).
//   - acl-state: after the heal every broker converges on the same ACLs,
//     and they hold every binding whose changes were all acknowledged as
//     its last change left it (created: present; deleted: absent), so an
//     ACL change survives controller failover and reaches every broker.
//     A binding with an unacknowledged change may be either way.
//   - sasl: a SCRAM login succeeds only if its broker held the user's
//     credential when the exchange began, and never fails when it did
//     (the clients always know the password).
//
// A violation is "checker: <name> invalid ...", like the history
// checkers', so the planted-bug tests count it.

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// modelAllows is Kafka's rule for one request, read literally: the ACLs
// that match the principal (or User:*) and the resource (its type and
// literal name, the wildcard "*", or a prefix); a matching DENY of the operation
// or of ALL refuses; else a matching ALLOW of the operation, of ALL, or
// (for DESCRIBE) of READ, WRITE, DELETE or ALTER allows; else it is
// refused (no allow.everyone.if.no.acl.found, no roles, not a super
// user).
func modelAllows(acls []simACL, principal string, rt kmsg.ACLResourceType, op kmsg.ACLOperation, name string) bool {
	allowed := false
	for _, a := range acls {
		if a.rt != rt || a.principal != principal && a.principal != "User:*" {
			continue
		}
		switch a.pattern {
		case kmsg.ACLResourcePatternTypeLiteral:
			if a.name != name && a.name != "*" {
				continue
			}
		case kmsg.ACLResourcePatternTypePrefixed:
			if !strings.HasPrefix(name, a.name) {
				continue
			}
		default:
			continue
		}
		if a.perm == kmsg.ACLPermissionTypeDeny {
			if a.op == op || a.op == kmsg.ACLOperationAll {
				return false
			}
			continue
		}
		switch {
		case a.op == op, a.op == kmsg.ACLOperationAll:
			allowed = true
		case op == kmsg.ACLOperationDescribe:
			switch a.op {
			case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
				allowed = true
			}
		}
	}
	return allowed
}

// checkDecisions is the acl-decisions check.
func (aw *aclWork) checkDecisions() {
	var bad []string
	for _, d := range aw.decisions {
		allow := modelAllows(d.acls, d.principal, d.rt, d.op, d.name)
		denied := d.code == kerr.TopicAuthorizationFailed.Code
		if d.rt == kmsg.ACLResourceTypeGroup {
			denied = d.code == kerr.GroupAuthorizationFailed.Code
		}
		if allow {
			aw.stats.allowed++
		} else {
			aw.stats.denied++
		}
		if denied == !allow && d.principal == "User:"+d.user {
			continue
		}
		if len(bad) < 3 {
			acls := make([]string, len(d.acls))
			for i, a := range d.acls {
				acls[i] = a.String()
			}
			bad = append(bad, fmt.Sprintf("%s by %s (session principal %s) at n%d, %v: model allows=%v, answer %s; ACLs: [%s]",
				d.api, d.user, d.principal, d.node, d.at, allow, errName(d.code), strings.Join(acls, "; ")))
		}
		aw.mismatches++
	}
	if aw.mismatches > 0 {
		aw.r.violation("checker", fmt.Sprintf("acl-decisions invalid mismatches=%d of %d; %s", aw.mismatches, len(aw.decisions), strings.Join(bad, "; ")))
	}
}

// final runs after the liveness phase: waits for the brokers to agree on
// the ACLs, then runs every check.
func (aw *aclWork) final() {
	r := aw.r
	aw.checkDecisions()
	aw.checkLogins()
	var states []string
	agree := func() bool {
		states = states[:0]
		for _, id := range r.w.IDs() {
			b, ok := r.w.Instance(id).(*Broker)
			if !ok || b == nil {
				states = append(states, fmt.Sprintf("n%d down", id))
				continue
			}
			states = append(states, aclKey(aclsOf(b)))
		}
		for _, s := range states[1:] {
			if s != states[0] {
				return false
			}
		}
		return true
	}
	wait := max(r.liveDeadline-r.now(), 10*time.Second)
	if !r.runUntil(agree, wait) {
		if !r.halted {
			r.violation("checker", fmt.Sprintf("acl-state invalid diverged: the brokers' ACLs still differ %v after the heal: %s",
				wait, strings.Join(states, " | ")))
		}
		return
	}
	aw.checkState(aclsOfFirst(r))
	r.note(fmt.Sprintf("auth: %d logins (%d refused), %d server nonces; alice/bob: %d produces, %d fetches, %d list-offsets, %d group requests, %d decided (%d denied), %d unanswered; admin: %d changes (%d unacknowledged)",
		r.kn.auth.logins, r.kn.auth.refused, aw.ba.ledger.nonces, aw.stats.produces, aw.stats.fetches, aw.stats.listOffsets, aw.stats.groupOps,
		len(aw.decisions), aw.stats.denied, aw.stats.failed, len(aw.changes), aw.unacknowledged()))
}

func (aw *aclWork) unacknowledged() int {
	n := 0
	for _, c := range aw.changes {
		if !c.definite {
			n++
		}
	}
	return n
}

func aclsOfFirst(r *run) []simACL {
	for _, id := range r.w.IDs() {
		if b, ok := r.w.Instance(id).(*Broker); ok && b != nil {
			return aclsOf(b)
		}
	}
	return nil
}

// aclKey renders a set of ACLs in a canonical order.
func aclKey(acls []simACL) string {
	s := make([]string, len(acls))
	for i, a := range acls {
		s[i] = a.String()
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// checkState compares the converged ACLs with the admin's acknowledged
// changes.
func (aw *aclWork) checkState(final []simACL) {
	present := map[string]bool{}
	for _, a := range final {
		present[a.String()] = true
	}
	last := map[int]adminChange{}
	unsure := map[int]bool{}
	for _, c := range aw.changes {
		if c.acl < 0 {
			continue
		}
		if !c.definite {
			unsure[c.acl] = true
		}
		last[c.acl] = c
	}
	var lost []string
	for i, c := range last {
		if unsure[i] {
			continue
		}
		if present[aw.universe[i].String()] != c.create {
			lost = append(lost, fmt.Sprintf("%s (last change create=%v acknowledged at %v)", aw.universe[i], c.create, c.at))
		}
	}
	changed := map[string]bool{}
	for i := range last {
		changed[aw.universe[i].String()] = true
	}
	for s := range present {
		if !changed[s] {
			lost = append(lost, s+" (present, never created)")
		}
	}
	if len(lost) > 0 {
		sort.Strings(lost)
		aw.r.violation("checker", fmt.Sprintf("acl-state invalid wrong=%d: %s", len(lost), strings.Join(lost, "; ")))
	}
}

// checkLogins is the sasl check.
func (aw *aclWork) checkLogins() {
	var bad []string
	for _, e := range aw.ba.ledger.exchanges {
		switch {
		case e.ok && !e.hadFirst:
			bad = append(bad, fmt.Sprintf("n%d let %s in without a credential", e.node, e.user))
		case e.finished && !e.ok && e.hadFirst && e.hadFinal && e.saltFirst == e.saltFinal:
			bad = append(bad, fmt.Sprintf("n%d refused %s holding its credential: %s", e.node, e.user, e.reason))
		}
	}
	if len(bad) > 0 {
		aw.r.violation("checker", fmt.Sprintf("sasl invalid bad=%d: %s", len(bad), strings.Join(bad[:min(len(bad), 3)], "; ")))
	}
}
