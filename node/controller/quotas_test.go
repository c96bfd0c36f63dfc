package controller

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func ent(parts ...QuotaEntityPart) QuotaEntity { return parts }
func pUser(n string) QuotaEntityPart           { return named(QuotaEntityUser, n) }
func pClient(n string) QuotaEntityPart         { return named(QuotaEntityClientID, n) }

func setQuota(t fataler, s *State, e QuotaEntity, key string, v float64) {
	t.Helper()
	mustApply(t, s, &Command{AlterClientQuota: &AlterClientQuota{Entity: e, Set: map[string]float64{key: v}}})
}

// Kafka's precedence: each of the eight entity shapes, added from the
// least to the most specific, takes over in turn.
func TestClientQuotaPrecedence(t *testing.T) {
	s := NewState("c")
	if _, ok := s.ClientQuota(QuotaProducerByteRate, "alice", "app"); ok {
		t.Fatal("a quota with none set")
	}
	steps := []struct {
		e          QuotaEntity
		user, clnt string // the sharing key expected
	}{
		{ent(dflt(QuotaEntityClientID)), "", "app"},
		{ent(pClient("app")), "", "app"},
		{ent(dflt(QuotaEntityUser)), "alice", ""},
		{ent(dflt(QuotaEntityUser), dflt(QuotaEntityClientID)), "alice", "app"},
		{ent(dflt(QuotaEntityUser), pClient("app")), "alice", "app"},
		{ent(pUser("alice")), "alice", ""},
		{ent(pUser("alice"), dflt(QuotaEntityClientID)), "alice", "app"},
		{ent(pUser("alice"), pClient("app")), "alice", "app"},
	}
	for i, st := range steps {
		setQuota(t, s, st.e, QuotaProducerByteRate, float64(1000*(i+1)))
		m, ok := s.ClientQuota(QuotaProducerByteRate, "alice", "app")
		if !ok || m.Limit != float64(1000*(i+1)) || m.User != st.user || m.ClientID != st.clnt || m.Entity != st.e.Key() {
			t.Fatalf("step %d (%s): got %+v %v", i, st.e.Key(), m, ok)
		}
		// A key set elsewhere does not hide it.
		if _, ok := s.ClientQuota(QuotaConsumerByteRate, "alice", "app"); ok {
			t.Fatalf("step %d: consumer quota without one set", i)
		}
		// Restored, the index is the same.
		r, err := Restore(s.Snapshot())
		if err != nil {
			t.Fatal(err)
		}
		if m2, _ := r.ClientQuota(QuotaProducerByteRate, "alice", "app"); m2 != m {
			t.Fatalf("step %d: restored %+v, was %+v", i, m2, m)
		}
	}
	// Another user only sees the defaults and the client id's.
	m, _ := s.ClientQuota(QuotaProducerByteRate, "bob", "app")
	if m.Limit != 5000 || m.User != "bob" {
		t.Fatalf("bob: %+v", m)
	}
	m, _ = s.ClientQuota(QuotaProducerByteRate, "bob", "other")
	if m.Limit != 4000 || m.User != "bob" || m.ClientID != "other" {
		t.Fatalf("bob/other: %+v", m)
	}
	// A user named "<default>" (or with separators in its name) is not
	// the default user, nor confused with another entity.
	w := NewState("c")
	setQuota(t, w, ent(pUser("<default>")), QuotaProducerByteRate, 7)
	setQuota(t, w, ent(pUser("a,client-id=b")), QuotaProducerByteRate, 9)
	if m, ok := w.ClientQuota(QuotaProducerByteRate, "bob", ""); ok {
		t.Fatalf("the user named <default> applies to bob: %+v", m)
	}
	if m, ok := w.ClientQuota(QuotaProducerByteRate, "<default>", ""); !ok || m.Limit != 7 {
		t.Fatalf("the user named <default>: %+v %v", m, ok)
	}
	if m, ok := w.ClientQuota(QuotaProducerByteRate, "a", "b"); ok {
		t.Fatalf("user a with client b matched %+v", m)
	}
	if m, ok := w.ClientQuota(QuotaProducerByteRate, "a,client-id=b", "x"); !ok || m.Limit != 9 {
		t.Fatalf("the user named a,client-id=b: %+v %v", m, ok)
	}
}

// connection_creation_rate on ip entities: the named address, then the
// default ip; each address its own rate; IPv4-mapped IPv6 addresses are
// the IPv4 ones; user and client quotas are not ip quotas; restores keep
// the index.
func TestIPQuotaPrecedence(t *testing.T) {
	s := NewState("c")
	a := netip.MustParseAddr("10.0.0.1")
	if _, ok := s.IPQuota(QuotaConnectionCreationRate, a); ok {
		t.Fatal("an ip quota with none set")
	}
	setQuota(t, s, ent(pUser("alice")), QuotaProducerByteRate, 100)
	if _, ok := s.IPQuota(QuotaConnectionCreationRate, a); ok {
		t.Fatal("a user quota taken for an ip quota")
	}
	setQuota(t, s, ent(dflt(QuotaEntityIP)), QuotaConnectionCreationRate, 5)
	m, ok := s.IPQuota(QuotaConnectionCreationRate, a)
	if !ok || m.Limit != 5 || m.IP != "10.0.0.1" || m.Entity != ent(dflt(QuotaEntityIP)).Key() {
		t.Fatalf("default ip: %+v %v", m, ok)
	}
	setQuota(t, s, ent(named(QuotaEntityIP, "10.0.0.1")), QuotaConnectionCreationRate, 2)
	for _, addr := range []string{"10.0.0.1", "::ffff:10.0.0.1"} {
		m, ok = s.IPQuota(QuotaConnectionCreationRate, netip.MustParseAddr(addr))
		if !ok || m.Limit != 2 || m.IP != "10.0.0.1" {
			t.Fatalf("%s: %+v %v", addr, m, ok)
		}
	}
	if m, _ := s.IPQuota(QuotaConnectionCreationRate, netip.MustParseAddr("10.0.0.2")); m.Limit != 5 || m.IP != "10.0.0.2" {
		t.Fatalf("another address: %+v", m)
	}
	if _, ok := s.ClientQuota(QuotaConnectionCreationRate, "alice", "x"); ok {
		t.Fatal("an ip quota taken for a client quota")
	}
	r, err := Restore(s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if m2, _ := r.IPQuota(QuotaConnectionCreationRate, a); m2.Limit != 2 {
		t.Fatalf("restored: %+v", m2)
	}
}

func TestAlterClientQuotaRemoveAndErrors(t *testing.T) {
	s := NewState("c")
	e := ent(pUser("alice"))
	mustApply(t, s, &Command{AlterClientQuota: &AlterClientQuota{Entity: e,
		Set: map[string]float64{QuotaProducerByteRate: 1024, QuotaRequestPercentage: 12.5}}})
	mustApply(t, s, &Command{AlterClientQuota: &AlterClientQuota{Entity: e, Remove: []string{QuotaProducerByteRate, "nope"}}})
	if len(s.ClientQuotas) != 1 || len(s.ClientQuotas[0].Values) != 1 || s.ClientQuotas[0].Values[QuotaRequestPercentage] != 12.5 {
		t.Fatalf("after remove: %+v", s.ClientQuotas)
	}
	mustApply(t, s, &Command{AlterClientQuota: &AlterClientQuota{Entity: e, Remove: []string{QuotaRequestPercentage}}})
	if len(s.ClientQuotas) != 0 {
		t.Fatalf("an entity without values is kept: %+v", s.ClientQuotas)
	}
	ip := "10.0.0.1"
	bad := "10.0.0.300"
	for _, a := range []*AlterClientQuota{
		{Entity: nil, Set: map[string]float64{QuotaProducerByteRate: 1}},
		{Entity: ent(QuotaEntityPart{Type: "group"}), Set: map[string]float64{QuotaProducerByteRate: 1}},
		{Entity: ent(pUser("a"), pUser("b")), Set: map[string]float64{QuotaProducerByteRate: 1}},
		{Entity: ent(pUser("a"), QuotaEntityPart{Type: QuotaEntityIP, Name: &ip}), Set: map[string]float64{QuotaConnectionCreationRate: 1}},
		{Entity: ent(QuotaEntityPart{Type: QuotaEntityIP, Name: &bad}), Set: map[string]float64{QuotaConnectionCreationRate: 1}},
		{Entity: ent(QuotaEntityPart{Type: QuotaEntityIP, Name: &ip}), Set: map[string]float64{QuotaProducerByteRate: 1}},
		{Entity: e, Set: map[string]float64{"producer_byte_rat": 1}},
		{Entity: e, Set: map[string]float64{QuotaProducerByteRate: -1}},
		{Entity: e, Set: map[string]float64{QuotaProducerByteRate: 0}},
		{Entity: e, Set: map[string]float64{QuotaProducerByteRate: 1.5}},
		{Entity: e},
		{Entity: e, Set: map[string]float64{QuotaProducerByteRate: 1}, Remove: []string{QuotaProducerByteRate}},
	} {
		res := apply(t, s, &Command{AlterClientQuota: a})
		var ce *Error
		if !errors.Is(res.Err, kerr.InvalidRequest) || !errors.As(res.Err, &ce) || ce.Message == "" {
			t.Errorf("%+v: %v, want INVALID_REQUEST", a, res.Err)
		}
	}
	if len(s.ClientQuotas) != 0 {
		t.Fatalf("refused changes changed the state: %+v", s.ClientQuotas)
	}
	// An ip entity takes connection_creation_rate.
	mustApply(t, s, &Command{AlterClientQuota: &AlterClientQuota{Entity: ent(QuotaEntityPart{Type: QuotaEntityIP}),
		Set: map[string]float64{QuotaConnectionCreationRate: 10}}})
}

func TestDescribeClientQuotasMatching(t *testing.T) {
	s := NewState("c")
	for _, e := range []QuotaEntity{
		ent(pUser("alice")),
		ent(pUser("alice"), pClient("app")),
		ent(dflt(QuotaEntityUser)),
		ent(dflt(QuotaEntityUser), pClient("app")),
		ent(pClient("app")),
	} {
		setQuota(t, s, e, QuotaConsumerByteRate, 2048)
	}
	keys := func(fs []QuotaFilter, strict bool) []string {
		if err := CheckQuotaFilter(fs); err != nil {
			t.Fatalf("%+v: %v", fs, err)
		}
		var out []string
		for _, q := range s.DescribeClientQuotas(fs, strict) {
			out = append(out, q.Entity.Key())
		}
		return out
	}
	cases := []struct {
		fs     []QuotaFilter
		strict bool
		want   []string
	}{
		{nil, false, []string{"client-id=app", "client-id=app,user=<default>", "client-id=app,user=alice", "user=<default>", "user=alice"}},
		{nil, true, nil},
		{[]QuotaFilter{{Type: QuotaEntityUser, Match: QuotaMatchExact, Name: "alice"}}, false, []string{"client-id=app,user=alice", "user=alice"}},
		{[]QuotaFilter{{Type: QuotaEntityUser, Match: QuotaMatchExact, Name: "alice"}}, true, []string{"user=alice"}},
		{[]QuotaFilter{{Type: QuotaEntityUser, Match: QuotaMatchDefault}}, false, []string{"client-id=app,user=<default>", "user=<default>"}},
		{[]QuotaFilter{{Type: QuotaEntityUser, Match: QuotaMatchAny}}, true, []string{"user=<default>", "user=alice"}},
		{[]QuotaFilter{{Type: QuotaEntityUser, Match: QuotaMatchAny}, {Type: QuotaEntityClientID, Match: QuotaMatchExact, Name: "app"}}, true,
			[]string{"client-id=app,user=<default>", "client-id=app,user=alice"}},
		{[]QuotaFilter{{Type: QuotaEntityClientID, Match: QuotaMatchExact, Name: "app"}}, true, []string{"client-id=app"}},
	}
	for _, c := range cases {
		got := keys(c.fs, c.strict)
		if len(got) != len(c.want) {
			t.Errorf("%+v strict=%v: %q, want %q", c.fs, c.strict, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%+v strict=%v: %q, want %q", c.fs, c.strict, got, c.want)
				break
			}
		}
	}
	for _, fs := range [][]QuotaFilter{
		{{Type: "group", Match: QuotaMatchAny}},
		{{Type: QuotaEntityUser, Match: QuotaMatchAny}, {Type: QuotaEntityUser, Match: QuotaMatchDefault}},
		{{Type: QuotaEntityUser, Match: 7}},
		{{Type: QuotaEntityIP, Match: QuotaMatchAny}, {Type: QuotaEntityUser, Match: QuotaMatchAny}},
	} {
		if err := CheckQuotaFilter(fs); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("filter %+v: %v, want INVALID_REQUEST", fs, err)
		}
	}
}

// BenchmarkClientQuota is the lookup every produce and fetch pays while
// any quota exists (the reactor's thread, node/runtime quotas.go).
func BenchmarkClientQuota(b *testing.B) {
	s := NewState("c")
	setQuota(b, s, ent(dflt(QuotaEntityClientID)), QuotaProducerByteRate, 1<<20)
	setQuota(b, s, ent(pUser("alice")), QuotaConsumerByteRate, 1<<20)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, ok := s.ClientQuota(QuotaProducerByteRate, "bob", "app"); !ok {
			b.Fatal("no quota")
		}
	}
}
