package sim

// The ACL workload of an authenticated run (auth.go).
//
// While the nemesis runs, one admin (a super user) changes, one change at
// a time and through any broker (forwarded to the controller):
//   - ACLs on the topic "acl-a": a binding drawn from a small universe
//     (principals alice, bob and everyone; READ, WRITE, DESCRIBE, ALL;
//     ALLOW or DENY; LITERAL acl-a, PREFIXED acl-, LITERAL *), created
//     or deleted by an exact filter;
//   - users: alice's or bob's SCRAM credential deleted or created again
//     (AlterUserScramCredentials).
//
// Meanwhile alice and bob, each authenticated with SCRAM, send Produce
// (WRITE), Fetch (READ) and ListOffsets (DESCRIBE) for acl-a to random
// brokers. At the instant a request reaches its broker the simulator
// copies that broker's ACLs, the state its decision is made from (the
// authorizer runs then, on one thread). authcheck.go then checks every
// answer against a naive model of those ACLs, the brokers' ACLs after the
// heal against the admin's acknowledged changes, and every SCRAM
// exchange against the credential its broker held.

import (
	"fmt"
	"math/rand"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
)

// aclTopic and aclGroup are the ACL workload's topic and group.
const (
	aclTopic = "acl-a"
	aclGroup = "acl-g"
)

// simACL is a topic or group ACL as the model sees it (every host).
type simACL struct {
	rt        kmsg.ACLResourceType
	principal string
	op        kmsg.ACLOperation
	perm      kmsg.ACLPermissionType
	pattern   kmsg.ACLResourcePatternType
	name      string
}

func (a simACL) String() string {
	return fmt.Sprintf("%s %s %s on %s %s:%s", a.principal, a.perm, a.op, a.rt, a.pattern, a.name)
}

// aclUniverse is every binding the admin may create.
func aclUniverse() []simACL {
	type resource struct {
		pt   kmsg.ACLResourcePatternType
		name string
	}
	kinds := []struct {
		rt  kmsg.ACLResourceType
		ops []kmsg.ACLOperation
		res []resource
	}{
		{kmsg.ACLResourceTypeTopic,
			[]kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe, kmsg.ACLOperationAll},
			[]resource{{kmsg.ACLResourcePatternTypeLiteral, aclTopic}, {kmsg.ACLResourcePatternTypePrefixed, "acl-"}, {kmsg.ACLResourcePatternTypeLiteral, "*"}}},
		{kmsg.ACLResourceTypeGroup,
			[]kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationAll},
			[]resource{{kmsg.ACLResourcePatternTypeLiteral, aclGroup}, {kmsg.ACLResourcePatternTypePrefixed, "acl-"}, {kmsg.ACLResourcePatternTypeLiteral, "*"}}},
	}
	var u []simACL
	for _, k := range kinds {
		for _, p := range []string{"User:alice", "User:bob", "User:*"} {
			for _, op := range k.ops {
				for _, perm := range []kmsg.ACLPermissionType{kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny} {
					for _, res := range k.res {
						u = append(u, simACL{rt: k.rt, principal: p, op: op, perm: perm, pattern: res.pt, name: res.name})
					}
				}
			}
		}
	}
	return u
}

// adminChange is one change the admin made and what its answer said.
type adminChange struct {
	acl      int // index in the universe, -1 for a user change
	create   bool
	user     string
	definite bool // acknowledged: it happened
	at       time.Duration
}

// aclDecision is one authorized request and the ACLs it was decided on.
type aclDecision struct {
	user      string
	principal string // the session's principal at the broker
	node      netx.NodeID
	api       string
	rt        kmsg.ACLResourceType
	name      string
	op        kmsg.ACLOperation
	acls      []simACL
	code      int16
	at        time.Duration
}

// aclWork is the ACL workload of a run.
type aclWork struct {
	r         *run
	ba        *BrokerAuth
	rng       *rand.Rand
	universe  []simACL
	changes   []adminChange
	decisions []aclDecision
	userUp    map[string]bool // the admin's view: whose credential it last created
	believed  map[int]bool    // the admin's view: the bindings it last created
	active    int
	salts     *rand.Rand
	stats     struct{ produces, fetches, listOffsets, groupOps, denied, allowed, failed int }
	// mismatches counts answers the model disagrees with.
	mismatches int
}

// newACLWork sets a run up for authentication: clients log in as "sim",
// the admin and the ACL clients as themselves.
func newACLWork(r *run, ba *BrokerAuth, cache saltCache) *aclWork {
	w := r.w
	r.kn.auth = newClientAuth(r.kn, rand.New(rand.NewSource(w.Rand().Int63())), cache)
	r.kn.user = workloadUser
	return &aclWork{r: r, ba: ba, rng: rand.New(rand.NewSource(w.Rand().Int63())), universe: aclUniverse(),
		userUp: map[string]bool{}, believed: map[int]bool{}, salts: rand.New(rand.NewSource(w.Rand().Int63()))}
}

// setup creates alice and bob and the topic acl-a, as admin.
func (aw *aclWork) setup() bool {
	r := aw.r
	pending := map[string]bool{"topic": true}
	for _, u := range aclUsers {
		pending[u] = true
	}
	var try func()
	try = func() {
		for _, what := range sortedStrings(pending) {
			what := what
			done := func(ok bool) {
				if ok {
					delete(pending, what)
				}
			}
			if what == "topic" {
				aw.createTopic(done)
			} else {
				aw.alterUser(what, true, done)
			}
		}
		if len(pending) > 0 {
			r.w.After(200*time.Millisecond, func() {
				if len(pending) > 0 {
					try()
				}
			})
		}
	}
	try()
	if !r.runUntil(func() bool { return len(pending) == 0 }, 30*time.Second) {
		r.violation("liveness", fmt.Sprintf("a healthy cluster did not create the ACL workload's users and topic within 30s (left: %v)", sortedStrings(pending)))
		return false
	}
	for _, u := range aclUsers {
		aw.userUp[u] = true
	}
	r.w.Tracef("auth setup done: users %v, topic %s", aclUsers, aclTopic)
	return true
}

func (aw *aclWork) createTopic(done func(bool)) {
	r := aw.r
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 5000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = aclTopic, 1, int16(min(3, r.o.Nodes))
	req.Topics = append(req.Topics, t)
	r.kn.callAs(adminUser, aw.anyNode(), req, 6*time.Second, nil, nil, func(resp kmsg.Response, err error, _ bool) {
		if err != nil {
			done(false)
			return
		}
		code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
		done(code == 0 || code == kerr.TopicAlreadyExists.Code)
	})
}

// alterUser creates (with a fresh salt) or deletes user's SCRAM-SHA-256
// credential; done says whether the answer acknowledged it.
func (aw *aclWork) alterUser(user string, create bool, done func(bool)) {
	r := aw.r
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	if create {
		cred, err := scramCredential(aw.salts, r.kn.auth.cache, user)
		if err != nil {
			r.violation("sim", err.Error())
			done(false)
			return
		}
		salted, _ := r.kn.auth.cache.salted(passwordOf(user), cred.Salt, scramIterations)
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = user, scramMechanismID, scramIterations, cred.Salt, salted
		req.Upsertions = append(req.Upsertions, up)
	} else {
		del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		del.Name, del.Mechanism = user, scramMechanismID
		req.Deletions = append(req.Deletions, del)
	}
	r.kn.callAs(adminUser, aw.anyNode(), req, 2*time.Second, nil, nil, func(resp kmsg.Response, err error, _ bool) {
		if err != nil {
			done(false)
			return
		}
		ok := true
		for _, res := range resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
			ok = ok && res.ErrorCode == 0
		}
		done(ok)
	})
}

func (aw *aclWork) anyNode() netx.NodeID {
	ids := aw.r.w.IDs()
	return ids[aw.rng.Intn(len(ids))]
}

// start starts the admin and one client per ACL user.
func (aw *aclWork) start() {
	aw.active++
	aw.r.w.After(aw.think(aw.r.o.Auth.AdminThinkMax), aw.adminStep)
	for _, u := range aclUsers {
		aw.active++
		aw.r.w.After(aw.think(aw.r.o.Auth.ClientThinkMax), func() { aw.clientStep(u) })
	}
}

func (aw *aclWork) think(maxDur time.Duration) time.Duration {
	return time.Duration(aw.rng.Int63n(int64(maxDur) + 1))
}

// adminStep makes one change and, once it is answered, schedules the next.
func (aw *aclWork) adminStep() {
	r := aw.r
	if r.stopping {
		aw.active--
		return
	}
	next := func() { r.w.After(aw.think(r.o.Auth.AdminThinkMax), aw.adminStep) }
	if aw.rng.Float64() < r.o.Auth.UserChangeProb {
		u := aclUsers[aw.rng.Intn(len(aclUsers))]
		create := !aw.userUp[u]
		n := aw.issue(adminChange{acl: -1, user: u, create: create, at: r.now()})
		aw.alterUser(u, create, func(ok bool) {
			aw.changes[n].definite = ok
			if ok {
				aw.userUp[u] = create
			}
			r.w.Tracef("auth: admin %s user %s: acknowledged=%v", map[bool]string{true: "created", false: "deleted"}[create], u, ok)
			next()
		})
		return
	}
	i, create := aw.pickACLChange()
	n := aw.issue(adminChange{acl: i, create: create, at: r.now()})
	a := aw.universe[i]
	var req kmsg.Request
	if create {
		q := kmsg.NewPtrCreateACLsRequest()
		q.Version = 2
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = a.rt, a.name, a.pattern
		c.Principal, c.Host, c.Operation, c.PermissionType = a.principal, "*", a.op, a.perm
		q.Creations = append(q.Creations, c)
		req = q
	} else {
		q := kmsg.NewPtrDeleteACLsRequest()
		q.Version = 2
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourceName, f.ResourcePatternType = a.rt, kmsg.StringPtr(a.name), a.pattern
		f.Principal, f.Host, f.Operation, f.PermissionType = kmsg.StringPtr(a.principal), kmsg.StringPtr("*"), a.op, a.perm
		q.Filters = append(q.Filters, f)
		req = q
	}
	r.kn.callAs(adminUser, aw.anyNode(), req, 2*time.Second, nil, nil, func(resp kmsg.Response, err error, _ bool) {
		if err == nil {
			switch q := resp.(type) {
			case *kmsg.CreateACLsResponse:
				aw.changes[n].definite = len(q.Results) == 1 && q.Results[0].ErrorCode == 0
			case *kmsg.DeleteACLsResponse:
				aw.changes[n].definite = len(q.Results) == 1 && q.Results[0].ErrorCode == 0
			}
		}
		r.w.Tracef("auth: admin create=%v %s: acknowledged=%v (err %v)", create, a, aw.changes[n].definite, err)
		next()
	})
}

// pickACLChange draws the next ACL change: a creation of any binding
// (denies less often), or mostly a deletion of one the admin created, so
// deletions remove something.
func (aw *aclWork) pickACLChange() (int, bool) {
	var created []int
	for i := range aw.universe {
		if aw.believed[i] {
			created = append(created, i)
		}
	}
	if len(created) > 0 && aw.rng.Float64() < 0.45 {
		i := created[aw.rng.Intn(len(created))]
		if aw.rng.Float64() < 0.1 {
			i = aw.rng.Intn(len(aw.universe)) // now and then one that may not exist
		}
		aw.believed[i] = false
		return i, false
	}
	i := aw.rng.Intn(len(aw.universe))
	if aw.universe[i].perm == kmsg.ACLPermissionTypeDeny && aw.rng.Float64() < 0.4 {
		i = aw.rng.Intn(len(aw.universe)) // a second draw: fewer denies
	}
	aw.believed[i] = true
	return i, true
}

// issue records a change as it is sent, unacknowledged until its answer
// says otherwise: a change whose answer never comes, or comes after the
// final check, may have happened.
func (aw *aclWork) issue(c adminChange) int {
	aw.changes = append(aw.changes, c)
	return len(aw.changes) - 1
}

// clientStep sends one request as user and records its decision.
func (aw *aclWork) clientStep(user string) {
	r := aw.r
	if r.stopping {
		aw.active--
		return
	}
	var req kmsg.Request
	var op kmsg.ACLOperation
	rt, name := kmsg.ACLResourceTypeTopic, aclTopic
	switch aw.rng.Intn(5) {
	case 0:
		q := kmsg.NewPtrProduceRequest()
		q.Version, q.Acks, q.TimeoutMillis = 9, 1, int32((r.o.RequestTimeout * 8 / 10).Milliseconds())
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = aclTopic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = encodeBatch([]string{user}, r.w.Clock().Now().UnixMilli(), producerStamp{pid: -1, epoch: -1, seq: -1})
		rt.Partitions = append(rt.Partitions, rp)
		q.Topics = append(q.Topics, rt)
		req, op = q, kmsg.ACLOperationWrite
		aw.stats.produces++
	case 1:
		q := kmsg.NewPtrFetchRequest()
		q.Version, q.ReplicaID, q.MaxBytes = 12, -1, 64<<10
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = aclTopic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 16<<10, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		q.Topics = append(q.Topics, rt)
		req, op = q, kmsg.ACLOperationRead
		aw.stats.fetches++
	case 2:
		q := kmsg.NewPtrFindCoordinatorRequest()
		q.Version, q.CoordinatorKey = 3, aclGroup
		req, op, rt, name = q, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, aclGroup
		aw.stats.groupOps++
	case 3:
		q := kmsg.NewPtrOffsetFetchRequest()
		q.Version, q.Group = 5, aclGroup
		req, op, rt, name = q, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, aclGroup
		aw.stats.groupOps++
	default:
		q := kmsg.NewPtrListOffsetsRequest()
		q.Version, q.ReplicaID = 4, -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = aclTopic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.CurrentLeaderEpoch = -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		q.Topics = append(q.Topics, rt)
		req, op = q, kmsg.ACLOperationDescribe
		aw.stats.listOffsets++
	}
	id := aw.anyNode()
	d := aclDecision{user: user, node: id, api: kmsg.NameForKey(req.Key()), rt: rt, name: name, op: op, code: -1}
	arrived := false
	arrive := func(b *Broker, principal string) {
		arrived = true
		d.principal, d.at = principal, r.now()
		d.acls = aclsOf(b)
	}
	r.kn.callAs(user, id, req, r.o.RequestTimeout, arrive, nil, func(resp kmsg.Response, err error, _ bool) {
		if err == nil && arrived {
			d.code = answerErrorCode(resp)
			aw.decisions = append(aw.decisions, d)
		} else {
			aw.stats.failed++
		}
		r.w.After(aw.think(r.o.Auth.ClientThinkMax), func() { aw.clientStep(user) })
	})
}

// aclsOf copies a broker's topic ACLs as the model sees them.
func aclsOf(b *Broker) []simACL {
	var out []simACL
	for _, x := range b.R.Metadata().ACLs {
		if x.ResourceType != kmsg.ACLResourceTypeTopic && x.ResourceType != kmsg.ACLResourceTypeGroup || x.Host != "*" {
			continue
		}
		out = append(out, simACL{rt: x.ResourceType, principal: x.Principal, op: x.Operation, perm: x.Permission, pattern: x.PatternType, name: x.ResourceName})
	}
	return out
}

// answerErrorCode is the error of an answer: the request's own error,
// else acl-a's partition 0's.
func answerErrorCode(resp kmsg.Response) int16 {
	switch q := resp.(type) {
	case *kmsg.FindCoordinatorResponse:
		return q.ErrorCode
	case *kmsg.OffsetFetchResponse:
		return q.ErrorCode
	case *kmsg.ProduceResponse:
		for _, t := range q.Topics {
			for _, p := range t.Partitions {
				return p.ErrorCode
			}
		}
	case *kmsg.FetchResponse:
		if q.ErrorCode != 0 {
			return q.ErrorCode
		}
		for _, t := range q.Topics {
			for _, p := range t.Partitions {
				return p.ErrorCode
			}
		}
	case *kmsg.ListOffsetsResponse:
		for _, t := range q.Topics {
			for _, p := range t.Partitions {
				return p.ErrorCode
			}
		}
	}
	return kerr.UnknownServerError.Code
}
