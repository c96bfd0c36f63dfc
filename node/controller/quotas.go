package controller

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Client quotas (KIP-13, KIP-55, KIP-546): values by quota entity,
// replicated with the rest of the metadata so every broker enforces the
// same ones and they survive restarts. An entity is a user, a client id,
// a user and a client id, or an IP; each part names one (Name set) or is
// the default entity of its type (Name nil), as in Kafka.

// Quota entity types.
const (
	QuotaEntityUser     = "user"
	QuotaEntityClientID = "client-id"
	QuotaEntityIP       = "ip"
)

// Quota keys.
const (
	QuotaProducerByteRate       = "producer_byte_rate"
	QuotaConsumerByteRate       = "consumer_byte_rate"
	QuotaRequestPercentage      = "request_percentage"
	QuotaControllerMutationRate = "controller_mutation_rate"
	QuotaConnectionCreationRate = "connection_creation_rate"
)

// quotaKeyKind says what values a key takes: Kafka's config types.
type quotaKeyKind int

const (
	quotaLong   quotaKeyKind = iota + 1 // an integer up to MaxInt64
	quotaInt                            // an integer up to MaxInt32
	quotaDouble                         // any positive number
)

// userClientKeys are the keys of user and client-id entities; ipKeys
// those of ip entities.
var (
	userClientKeys = map[string]quotaKeyKind{
		QuotaProducerByteRate: quotaLong, QuotaConsumerByteRate: quotaLong,
		QuotaRequestPercentage: quotaDouble, QuotaControllerMutationRate: quotaDouble,
	}
	ipKeys = map[string]quotaKeyKind{QuotaConnectionCreationRate: quotaInt}
)

// QuotaEntityPart is one part of an entity: a type and a name, or the
// type's default entity when Name is nil.
type QuotaEntityPart struct {
	Type string  `json:"type"`
	Name *string `json:"name,omitempty"`
}

// QuotaEntity is a quota's entity. In canonical form (NormalizeQuotaEntity)
// its parts are sorted by type, one per type.
type QuotaEntity []QuotaEntityPart

// ClientQuota is one entity's quota values.
//
// Invariant (checkQuotas): Entity canonical and valid; Values non-empty,
// every key valid for the entity, every value valid for its key.
type ClientQuota struct {
	Entity QuotaEntity        `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// AlterClientQuota changes one entity's quota values: Set writes, Remove
// deletes (a key not set is no error). It applies whole, or not at all.
type AlterClientQuota struct {
	Entity QuotaEntity        `json:"entity"`
	Set    map[string]float64 `json:"set,omitempty"`
	Remove []string           `json:"remove,omitempty"`
}

// Key is the entity's canonical text, e.g. "client-id=<default>,user=alice"
// (names are quoted when they need it); equal entities have equal keys.
func (e QuotaEntity) Key() string {
	parts := make([]string, len(e))
	for i, p := range NormalizeQuotaEntity(e) {
		parts[i] = p.Type + "=" + p.display()
	}
	return strings.Join(parts, ",")
}

func (p QuotaEntityPart) display() string {
	if p.Name == nil {
		return "<default>"
	}
	n := *p.Name
	if n == "" || strings.ContainsAny(n, ",=\"<> ") {
		return fmt.Sprintf("%q", n)
	}
	return n
}

// Has returns the part of type typ and whether there is one.
func (e QuotaEntity) Has(typ string) (QuotaEntityPart, bool) {
	for _, p := range e {
		if p.Type == typ {
			return p, true
		}
	}
	return QuotaEntityPart{}, false
}

// NormalizeQuotaEntity returns a copy of e sorted by type.
func NormalizeQuotaEntity(e QuotaEntity) QuotaEntity {
	out := make(QuotaEntity, len(e))
	for i, p := range e {
		out[i] = QuotaEntityPart{Type: p.Type}
		if p.Name != nil {
			n := *p.Name
			out[i].Name = &n
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// CheckQuotaEntity validates an entity as Kafka does: known types, each at
// most once, not empty, an ip alone and a valid address. The error is
// INVALID_REQUEST with the reason.
func CheckQuotaEntity(e QuotaEntity) error {
	if len(e) == 0 {
		return quotaErr("the quota entity is empty")
	}
	seen := map[string]bool{}
	for _, p := range e {
		switch p.Type {
		case QuotaEntityUser, QuotaEntityClientID:
		case QuotaEntityIP:
			if p.Name != nil {
				if _, err := netip.ParseAddr(*p.Name); err != nil {
					return quotaErr(fmt.Sprintf("%q is not a valid IP address", *p.Name))
				}
			}
		default:
			return quotaErr(fmt.Sprintf("unknown quota entity type %q (user, client-id or ip)", p.Type))
		}
		if seen[p.Type] {
			return quotaErr(fmt.Sprintf("the entity type %q is given twice", p.Type))
		}
		seen[p.Type] = true
	}
	if seen[QuotaEntityIP] && len(e) > 1 {
		return quotaErr("an ip entity cannot be combined with user or client-id")
	}
	return nil
}

// CheckQuotaValue validates one key and value for an entity already
// checked, as Kafka does: the key must be one of the entity's, the value
// positive, and an integer for the integer keys.
func CheckQuotaValue(e QuotaEntity, key string, v float64) error {
	keys := userClientKeys
	if _, ip := e.Has(QuotaEntityIP); ip {
		keys = ipKeys
	}
	kind, ok := keys[key]
	if !ok {
		return quotaErr(fmt.Sprintf("unknown quota key %q for this entity", key))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return quotaErr(fmt.Sprintf("quota %s must be greater than 0, got %v", key, v))
	}
	switch kind {
	case quotaLong:
		if v != math.Trunc(v) || v > math.MaxInt64 {
			return quotaErr(fmt.Sprintf("quota %s must be an integer up to %d, got %v", key, int64(math.MaxInt64), v))
		}
	case quotaInt:
		if v != math.Trunc(v) || v > math.MaxInt32 {
			return quotaErr(fmt.Sprintf("quota %s must be an integer up to %d, got %v", key, math.MaxInt32, v))
		}
	}
	return nil
}

// quotaErr is a refused quota change: Kafka's INVALID_REQUEST and why.
func quotaErr(reason string) error { return withMessage(kerr.InvalidRequest, reason) }

// alterClientQuota applies an AlterClientQuota, all or nothing.
func (s *State) alterClientQuota(a *AlterClientQuota) Result {
	if err := CheckQuotaEntity(a.Entity); err != nil {
		return Result{Err: err}
	}
	if len(a.Set) == 0 && len(a.Remove) == 0 {
		return Result{Err: quotaErr("nothing to change")}
	}
	for _, k := range sortedQuotaKeys(a.Set) {
		if err := CheckQuotaValue(a.Entity, k, a.Set[k]); err != nil {
			return Result{Err: err}
		}
	}
	for _, k := range a.Remove {
		if _, ok := a.Set[k]; ok {
			return Result{Err: quotaErr(fmt.Sprintf("quota key %q is both set and removed", k))}
		}
	}
	e := NormalizeQuotaEntity(a.Entity)
	key := e.Key()
	i := sort.Search(len(s.ClientQuotas), func(i int) bool { return s.ClientQuotas[i].Entity.Key() >= key })
	found := i < len(s.ClientQuotas) && s.ClientQuotas[i].Entity.Key() == key
	values := map[string]float64{}
	if found {
		for k, v := range s.ClientQuotas[i].Values { //floe:unordered copied into a map
			values[k] = v
		}
	}
	for _, k := range a.Remove {
		delete(values, k)
	}
	for k, v := range a.Set { //floe:unordered copied into a map
		values[k] = v
	}
	switch {
	case len(values) == 0 && found:
		s.ClientQuotas = append(s.ClientQuotas[:i], s.ClientQuotas[i+1:]...)
	case len(values) == 0:
	case found:
		s.ClientQuotas[i].Values = values
	default:
		s.ClientQuotas = append(s.ClientQuotas, ClientQuota{})
		copy(s.ClientQuotas[i+1:], s.ClientQuotas[i:])
		s.ClientQuotas[i] = ClientQuota{Entity: e, Values: values}
	}
	s.quotasChanged()
	return Result{}
}

func sortedQuotaKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m { //floe:unordered sorted below
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkQuotas validates restored quotas.
func (s *State) checkQuotas() error {
	prev := ""
	for i, q := range s.ClientQuotas {
		key := q.Entity.Key()
		bad := CheckQuotaEntity(q.Entity) != nil || len(q.Values) == 0 || (i > 0 && key <= prev)
		for _, k := range sortedQuotaKeys(q.Values) {
			bad = bad || CheckQuotaValue(q.Entity, k, q.Values[k]) != nil
		}
		if bad {
			return fmt.Errorf("controller: snapshot: client quota %q is malformed", key)
		}
		prev = key
	}
	return nil
}

// quotaSlot is a user / client-id entity as the lookup index keys it:
// each type absent, the default, or a name. (ip entities never match a
// client's user and client id, and are not indexed.)
type quotaSlot struct {
	user, client       string
	hasUser, hasClient bool
	userDflt, clntDflt bool
}

// indexedQuota is one indexed entity: its key and values.
type indexedQuota struct {
	entity string
	values map[string]float64
}

// quotasChanged rebuilds the lookup index.
func (s *State) quotasChanged() {
	s.quotaIndex = make(map[quotaSlot]indexedQuota, len(s.ClientQuotas))
	s.ipQuotaIndex = map[netip.Addr]indexedQuota{}
	for _, q := range s.ClientQuotas {
		var k quotaSlot
		ip := false
		var addr netip.Addr // the zero Addr: the default ip
		for _, p := range q.Entity {
			switch p.Type {
			case QuotaEntityUser:
				k.hasUser, k.userDflt = true, p.Name == nil
				if p.Name != nil {
					k.user = *p.Name
				}
			case QuotaEntityClientID:
				k.hasClient, k.clntDflt = true, p.Name == nil
				if p.Name != nil {
					k.client = *p.Name
				}
			default:
				ip = true
				if p.Name != nil {
					addr, _ = netip.ParseAddr(*p.Name) // valid: CheckQuotaEntity
					addr = addr.Unmap()
				}
			}
		}
		iq := indexedQuota{entity: q.Entity.Key(), values: q.Values}
		if ip {
			s.ipQuotaIndex[addr] = iq
		} else {
			s.quotaIndex[k] = iq
		}
	}
}

// IPQuota resolves the quota on key (connection_creation_rate) for
// connections from addr, in Kafka's order: the entity naming addr, then
// the default ip entity. Each address has its own rate either way
// (QuotaMatch.IP).
func (s *State) IPQuota(key string, addr netip.Addr) (QuotaMatch, bool) {
	if len(s.ipQuotaIndex) == 0 {
		return QuotaMatch{}, false
	}
	addr = addr.Unmap()
	for _, a := range [...]netip.Addr{addr, {}} {
		if iq, ok := s.ipQuotaIndex[a]; ok {
			if v, ok := iq.values[key]; ok {
				return QuotaMatch{Limit: v, Entity: iq.entity, IP: addr.String()}, true
			}
		}
	}
	return QuotaMatch{}, false
}

// QuotaMatch is the quota that applies to a client for one key: the
// limit, and the user and client id that share it. Clients with the same
// (User, ClientID) share one rate: a quota set on a user covers all its
// client ids together (ClientID ""), one set on the default user covers
// each user separately.
type QuotaMatch struct {
	Limit    float64
	Entity   string // the key of the entity it was set on
	User     string
	ClientID string
	IP       string // for ip quotas: the address whose connections share it
}

func named(typ, name string) QuotaEntityPart {
	return QuotaEntityPart{Type: typ, Name: &name}
}

func dflt(typ string) QuotaEntityPart { return QuotaEntityPart{Type: typ} }

// ClientQuota resolves the quota on key for a client, in Kafka's order of
// precedence (the first entity that sets key wins):
//
//  1. user and client id;       2. user and default client id;
//  3. user;                     4. default user and client id;
//  5. default user and default client id;
//  6. default user;             7. client id;   8. default client id.
//
// It runs for every produce and fetch while any quota exists: eight
// lookups in an index keyed by structs, nothing allocated.
func (s *State) ClientQuota(key, user, clientID string) (QuotaMatch, bool) {
	if len(s.quotaIndex) == 0 {
		return QuotaMatch{}, false
	}
	order := [...]struct {
		slot       quotaSlot
		user, clnt bool // whether the rate is per user, per client id
	}{
		{quotaSlot{user: user, client: clientID, hasUser: true, hasClient: true}, true, true},
		{quotaSlot{user: user, hasUser: true, hasClient: true, clntDflt: true}, true, true},
		{quotaSlot{user: user, hasUser: true}, true, false},
		{quotaSlot{client: clientID, hasUser: true, hasClient: true, userDflt: true}, true, true},
		{quotaSlot{hasUser: true, hasClient: true, userDflt: true, clntDflt: true}, true, true},
		{quotaSlot{hasUser: true, userDflt: true}, true, false},
		{quotaSlot{client: clientID, hasClient: true}, false, true},
		{quotaSlot{hasClient: true, clntDflt: true}, false, true},
	}
	for _, o := range order {
		iq, ok := s.quotaIndex[o.slot]
		if !ok {
			continue
		}
		v, ok := iq.values[key]
		if !ok {
			continue
		}
		m := QuotaMatch{Limit: v, Entity: iq.entity}
		if o.user {
			m.User = user
		}
		if o.clnt {
			m.ClientID = clientID
		}
		return m, true
	}
	return QuotaMatch{}, false
}

// QuotaFilter is one component of a DescribeClientQuotas filter.
type QuotaFilter struct {
	Type string
	// Match is MatchExact (Name), MatchDefault or MatchAny.
	Match int8
	Name  string
}

// DescribeClientQuotas match types.
const (
	QuotaMatchExact   int8 = 0
	QuotaMatchDefault int8 = 1
	QuotaMatchAny     int8 = 2
)

// CheckQuotaFilter validates a Describe filter as Kafka does.
func CheckQuotaFilter(fs []QuotaFilter) error {
	seen := map[string]bool{}
	for _, f := range fs {
		switch f.Type {
		case QuotaEntityUser, QuotaEntityClientID, QuotaEntityIP:
		default:
			return quotaErr(fmt.Sprintf("unknown quota entity type %q (user, client-id or ip)", f.Type))
		}
		if seen[f.Type] {
			return quotaErr(fmt.Sprintf("the entity type %q is filtered twice", f.Type))
		}
		seen[f.Type] = true
		switch f.Match {
		case QuotaMatchExact, QuotaMatchDefault, QuotaMatchAny:
		default:
			return quotaErr(fmt.Sprintf("unknown match type %d", f.Match))
		}
	}
	if seen[QuotaEntityIP] && (seen[QuotaEntityUser] || seen[QuotaEntityClientID]) {
		return quotaErr("an ip filter cannot be combined with user or client-id")
	}
	return nil
}

// DescribeClientQuotas returns the quotas whose entities match every
// filter component; with strict, only entities with no other part. The
// filter must have passed CheckQuotaFilter. The result is in key order and
// shares nothing with the state.
func (s *State) DescribeClientQuotas(fs []QuotaFilter, strict bool) []ClientQuota {
	var out []ClientQuota
	for _, q := range s.ClientQuotas {
		if !quotaMatches(q.Entity, fs, strict) {
			continue
		}
		c := ClientQuota{Entity: NormalizeQuotaEntity(q.Entity), Values: make(map[string]float64, len(q.Values))}
		for k, v := range q.Values { //floe:unordered copied into a map
			c.Values[k] = v
		}
		out = append(out, c)
	}
	return out
}

func quotaMatches(e QuotaEntity, fs []QuotaFilter, strict bool) bool {
	for _, f := range fs {
		p, ok := e.Has(f.Type)
		if !ok {
			return false
		}
		switch f.Match {
		case QuotaMatchExact:
			if p.Name == nil || *p.Name != f.Name {
				return false
			}
		case QuotaMatchDefault:
			if p.Name != nil {
				return false
			}
		}
	}
	return !strict || len(e) == len(fs)
}
