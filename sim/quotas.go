package sim

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

// Client quotas under the nemesis (issue 20, the light way: the quota
// store is controller state). In about a third of the seeds an admin
// alters client quotas, one change at a time and through any broker (each
// forwarded to the controller): a byte rate set or removed on one of a
// few entities (a user, the default user, a client id, a user and client
// id, the default client id). Enforcement is runtime code (wall clock,
// connections) and is not simulated.
//
// Checked after the heal (quota-state):
//
//   - every broker's replicated quotas converge on the same ones, the
//     controller leader's among them, within the liveness bound;
//   - they hold every (entity, key) whose changes were all acknowledged
//     as its last change left it (set: that value; removed: absent), and
//     nothing never set. An (entity, key) with an unacknowledged change
//     may be either way.
//
// A violation is "checker: quota-state invalid ...", so the planted-bug
// test (quota-alter-missed-by-follower) counts it.

// chooseQuotas draws the quota workload from its own generator.
func chooseQuotas(seed int64) bool {
	return rand.New(rand.NewSource(seed^0x9107a)).Intn(3) == 0
}

// quotaEntities are the entities the admin alters.
var quotaEntities = []controller.QuotaEntity{
	{{Type: controller.QuotaEntityUser, Name: strPtr("alice")}},
	{{Type: controller.QuotaEntityUser}},
	{{Type: controller.QuotaEntityClientID, Name: strPtr("app")}},
	{{Type: controller.QuotaEntityClientID, Name: strPtr("app")}, {Type: controller.QuotaEntityUser, Name: strPtr("alice")}},
	{{Type: controller.QuotaEntityClientID}},
}

var quotaKeys = []string{controller.QuotaProducerByteRate, controller.QuotaConsumerByteRate}

func strPtr(s string) *string { return &s }

// quotaChange is one change the admin sent.
type quotaChange struct {
	entity, key int
	value       float64 // 0: removed
	definite    bool    // acknowledged without error
	at          time.Duration
}

type quotaWork struct {
	r       *run
	rng     *rand.Rand
	changes []quotaChange
}

func (r *run) startQuotas() {
	if !r.o.Quotas {
		return
	}
	q := &quotaWork{r: r, rng: rand.New(rand.NewSource(r.o.Seed ^ 0x9107b))}
	r.quotas = q
	r.active++
	q.step()
}

func (q *quotaWork) step() {
	r := q.r
	if r.stopping {
		r.active--
		return
	}
	c := quotaChange{entity: q.rng.Intn(len(quotaEntities)), key: q.rng.Intn(len(quotaKeys)), at: r.now()}
	if q.rng.Intn(3) > 0 {
		c.value = float64(1024 * (1 + q.rng.Intn(64)))
	}
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Version = 1
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for _, p := range quotaEntities[c.entity] {
		ee := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ee.Type, ee.Name = p.Type, p.Name
		e.Entity = append(e.Entity, ee)
	}
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = quotaKeys[c.key], c.value, c.value == 0
	e.Ops = append(e.Ops, op)
	req.Entries = append(req.Entries, e)
	q.changes = append(q.changes, c)
	n := len(q.changes) - 1
	r.kn.call(r.meta.anyNode(), req, 2*time.Second, func(resp kmsg.Response, err error) {
		code := int16(-1)
		if err == nil {
			if res := resp.(*kmsg.AlterClientQuotasResponse).Entries; len(res) == 1 {
				code = res[0].ErrorCode
			}
		}
		q.changes[n].definite = code == 0
		r.w.Tracef("quotas: %s %s=%v: %s (err %v)", quotaEntities[c.entity].Key(), quotaKeys[c.key], c.value, errName(code), err)
		if code == 0 {
			r.cover("client quota altered")
		}
		r.w.After(20*time.Millisecond+time.Duration(q.rng.Int63n(int64(200*time.Millisecond))), q.step)
	})
}

// quotaState renders a broker's quotas canonically.
func quotaState(st *controller.State) string {
	var parts []string
	for _, cq := range st.ClientQuotas {
		for _, k := range sortedStrings(cq.Values) {
			parts = append(parts, fmt.Sprintf("%s %s=%v", cq.Entity.Key(), k, cq.Values[k]))
		}
	}
	return strings.Join(parts, "; ")
}

// finishQuotas is the quota-state check.
func (r *run) finishQuotas() {
	q := r.quotas
	if q == nil {
		return
	}
	var states []string
	var last *controller.State
	agree := func() bool {
		states = states[:0]
		for _, id := range r.w.IDs() {
			b, ok := r.w.Instance(id).(*Broker)
			if !ok || b == nil || b.R == nil {
				states = append(states, fmt.Sprintf("n%d down", id))
				continue
			}
			st, open := b.R.MetadataIfOpen()
			if !open {
				states = append(states, fmt.Sprintf("n%d not open", id))
				continue
			}
			last = st
			states = append(states, quotaState(st))
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
			r.violation("checker", fmt.Sprintf("quota-state invalid diverged: the brokers' client quotas still differ %v after the heal: %s",
				wait, strings.Join(states, " | ")))
		}
		return
	}
	type ek struct{ entity, key int }
	lastChange := map[ek]quotaChange{}
	unsure := map[ek]bool{}
	for _, c := range q.changes {
		k := ek{c.entity, c.key}
		if !c.definite {
			unsure[k] = true
		}
		lastChange[k] = c
	}
	var wrong []string
	for k, c := range lastChange {
		if unsure[k] {
			continue
		}
		v, present := quotaValue(last, quotaEntities[k.entity], quotaKeys[k.key])
		switch {
		case c.value == 0 && present:
			wrong = append(wrong, fmt.Sprintf("%s %s=%v present, removed (acknowledged at %v)", quotaEntities[k.entity].Key(), quotaKeys[k.key], v, c.at))
		case c.value != 0 && (!present || v != c.value):
			wrong = append(wrong, fmt.Sprintf("%s %s=%v (present %v), set to %v (acknowledged at %v)",
				quotaEntities[k.entity].Key(), quotaKeys[k.key], v, present, c.value, c.at))
		}
	}
	changed := map[string]bool{}
	for k := range lastChange {
		changed[quotaEntities[k.entity].Key()+" "+quotaKeys[k.key]] = true
	}
	for _, cq := range last.ClientQuotas {
		for _, key := range sortedStrings(cq.Values) {
			if !changed[cq.Entity.Key()+" "+key] {
				wrong = append(wrong, fmt.Sprintf("%s %s present, never set", cq.Entity.Key(), key))
			}
		}
	}
	if len(wrong) > 0 {
		sort.Strings(wrong)
		r.violation("checker", fmt.Sprintf("quota-state invalid wrong=%d: %s", len(wrong), strings.Join(wrong, "; ")))
	}
	definite := 0
	for _, c := range q.changes {
		if c.definite {
			definite++
		}
	}
	r.w.Tracef("quotas: %d changes (%d acknowledged), %d entities at the end", len(q.changes), definite, len(last.ClientQuotas))
}

// quotaValue is the value of key set on exactly entity e.
func quotaValue(st *controller.State, e controller.QuotaEntity, key string) (float64, bool) {
	for _, cq := range st.DescribeClientQuotas(exactFilter(e), true) {
		v, ok := cq.Values[key]
		return v, ok
	}
	return 0, false
}

// exactFilter matches exactly e (strictly).
func exactFilter(e controller.QuotaEntity) []controller.QuotaFilter {
	var fs []controller.QuotaFilter
	for _, p := range e {
		f := controller.QuotaFilter{Type: p.Type, Match: controller.QuotaMatchDefault}
		if p.Name != nil {
			f.Match, f.Name = controller.QuotaMatchExact, *p.Name
		}
		fs = append(fs, f)
	}
	return fs
}
