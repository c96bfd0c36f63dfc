package acl

import (
	"net/netip"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Index is a set of bindings arranged for lookups. It is immutable once
// built: a change to the ACLs builds a new one.
//
// Invariant: bindings is sorted by Compare without duplicates; every
// binding appears exactly once in types, under its resource type, in
// literal or prefixed by its name, under its principal; prefixLens holds
// exactly the distinct lengths of the names in prefixed, ascending.
type Index struct {
	bindings []Binding
	types    map[ResourceType]*typeIndex
}

type typeIndex struct {
	literal    map[string]*resourceACLs // by name, "*" included
	prefixed   map[string]*resourceACLs // by prefix
	prefixLens []int
}

// resourceACLs are the bindings of one resource pattern, by principal.
type resourceACLs struct {
	byPrincipal map[string][]entry
}

// entry is a binding's access control entry, with its host parsed once.
type entry struct {
	host string
	addr netip.Addr // valid when host is an IP address
	op   Operation
	perm Permission
	b    *Binding
}

// NewIndex builds an index of bs (in any order; duplicates are dropped).
// Bindings are not validated here: the controller stores only valid ones.
func NewIndex(bs []Binding) *Index {
	x := &Index{bindings: slices.Clone(bs), types: map[ResourceType]*typeIndex{}}
	slices.SortFunc(x.bindings, Compare)
	x.bindings = slices.CompactFunc(x.bindings, func(a, b Binding) bool { return Compare(a, b) == 0 })
	for i := range x.bindings {
		x.add(&x.bindings[i])
	}
	for _, ti := range x.types { //floe:unordered each type's lengths are sorted on their own
		sort.Ints(ti.prefixLens)
	}
	return x
}

func (x *Index) add(b *Binding) {
	ti := x.types[b.ResourceType]
	if ti == nil {
		ti = &typeIndex{literal: map[string]*resourceACLs{}, prefixed: map[string]*resourceACLs{}}
		x.types[b.ResourceType] = ti
	}
	m := ti.literal
	if b.PatternType == kmsg.ACLResourcePatternTypePrefixed {
		m = ti.prefixed
	}
	r := m[b.ResourceName]
	if r == nil {
		r = &resourceACLs{byPrincipal: map[string][]entry{}}
		m[b.ResourceName] = r
		if b.PatternType == kmsg.ACLResourcePatternTypePrefixed && !slices.Contains(ti.prefixLens, len(b.ResourceName)) {
			ti.prefixLens = append(ti.prefixLens, len(b.ResourceName))
		}
	}
	e := entry{host: b.Host, op: b.Operation, perm: b.Permission, b: b}
	if a, err := netip.ParseAddr(b.Host); err == nil {
		e.addr = a.Unmap()
	}
	r.byPrincipal[b.Principal] = append(r.byPrincipal[b.Principal], e)
}

// Bindings returns every binding, in canonical order. Callers must not
// modify it.
func (x *Index) Bindings() []Binding { return x.bindings }

// Len is the number of bindings.
func (x *Index) Len() int { return len(x.bindings) }

// visit calls fn with the ACLs of every pattern that applies to the named
// resource: its own literal name, the literal "*", and each prefix of the
// name that has prefixed ACLs. It reports whether any pattern had ACLs.
func (x *Index) visit(rt ResourceType, name string, fn func(*resourceACLs) bool) (found bool) {
	ti := x.types[rt]
	if ti == nil {
		return false
	}
	try := func(r *resourceACLs) bool {
		if r == nil {
			return true
		}
		found = true
		return fn(r)
	}
	if !try(ti.literal[name]) {
		return found
	}
	if name != Wildcard && !try(ti.literal[Wildcard]) {
		return found
	}
	for _, l := range ti.prefixLens {
		if l > len(name) {
			break
		}
		if !try(ti.prefixed[name[:l]]) {
			return found
		}
	}
	return found
}

// hostMatches reports whether an entry's host admits a client at host
// (ip: host parsed, or invalid). Addresses compare as addresses, so
// "::1" and "0:0:0:0:0:0:0:1" (Java's form) are the same host.
func (e *entry) hostMatches(host string, ip netip.Addr) bool {
	if e.host == Wildcard || e.host == host {
		return true
	}
	return ip.IsValid() && e.addr.IsValid() && e.addr == ip
}
