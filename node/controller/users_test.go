package controller

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func cred(mech int8, iters int32) ScramCredential {
	n := ScramKeyBytes(mech)
	return ScramCredential{Mechanism: mech, Salt: []byte("salt"), Iterations: iters,
		StoredKey: bytes.Repeat([]byte{1}, n), ServerKey: bytes.Repeat([]byte{2}, n)}
}

func TestAlterUser(t *testing.T) {
	s := NewState("c")
	mustApply(t, s, &Command{AlterUser: &AlterUser{Name: "alice", Upsert: []ScramCredential{cred(2, 4096), cred(1, 8192)}}})
	u := s.Users["alice"]
	if u == nil || len(u.Scram) != 2 || u.Scram[0].Mechanism != 1 || u.Scram[1].Mechanism != 2 {
		t.Fatalf("user %+v: want both credentials, sorted by mechanism", u)
	}
	if c, ok := s.ScramCredential("alice", 1); !ok || c.Iterations != 8192 {
		t.Fatalf("lookup: %+v %v", c, ok)
	}
	// Replace one, delete the other.
	mustApply(t, s, &Command{AlterUser: &AlterUser{Name: "alice", Upsert: []ScramCredential{cred(1, 16384)}, Delete: []int8{2}}})
	if c, _ := s.ScramCredential("alice", 1); c.Iterations != 16384 {
		t.Fatal("upsert did not replace")
	}
	if _, ok := s.ScramCredential("alice", 2); ok {
		t.Fatal("delete did not delete")
	}
	// Deleting the last credential removes the user.
	mustApply(t, s, &Command{AlterUser: &AlterUser{Name: "alice", Delete: []int8{1}}})
	if _, ok := s.Users["alice"]; ok || len(s.UserNames()) != 0 {
		t.Fatal("user without credentials kept")
	}

	mustApply(t, s, &Command{AlterUser: &AlterUser{Name: "bob", Upsert: []ScramCredential{cred(1, 4096)}}})
	for _, tc := range []struct {
		name string
		a    *AlterUser
		want error
	}{
		{"empty name", &AlterUser{Upsert: []ScramCredential{cred(1, 4096)}}, kerr.UnacceptableCredential},
		{"nothing", &AlterUser{Name: "bob"}, kerr.InvalidRequest},
		{"too few iterations", &AlterUser{Name: "bob", Upsert: []ScramCredential{cred(1, 4095)}}, kerr.UnacceptableCredential},
		{"too many iterations", &AlterUser{Name: "bob", Upsert: []ScramCredential{cred(1, 16385)}}, kerr.UnacceptableCredential},
		{"unknown mechanism", &AlterUser{Name: "bob", Upsert: []ScramCredential{{Mechanism: 3, Salt: []byte("s"), Iterations: 4096}}}, kerr.UnsupportedSaslMechanism},
		{"delete unknown mechanism", &AlterUser{Name: "bob", Delete: []int8{0}}, kerr.UnsupportedSaslMechanism},
		{"short key", &AlterUser{Name: "bob", Upsert: []ScramCredential{{Mechanism: 2, Salt: []byte("s"), Iterations: 4096, StoredKey: make([]byte, 32), ServerKey: make([]byte, 32)}}}, kerr.UnacceptableCredential},
		{"no salt", &AlterUser{Name: "bob", Upsert: []ScramCredential{{Mechanism: 1, Iterations: 4096, StoredKey: make([]byte, 32), ServerKey: make([]byte, 32)}}}, kerr.UnacceptableCredential},
		{"delete missing", &AlterUser{Name: "bob", Delete: []int8{2}}, kerr.ResourceNotFound},
		{"delete missing user", &AlterUser{Name: "carol", Delete: []int8{1}}, kerr.ResourceNotFound},
		{"upsert and delete one mechanism", &AlterUser{Name: "bob", Upsert: []ScramCredential{cred(1, 4096)}, Delete: []int8{1}}, kerr.DuplicateResource},
		{"upsert twice", &AlterUser{Name: "bob", Upsert: []ScramCredential{cred(2, 4096), cred(2, 8192)}}, kerr.DuplicateResource},
		// A valid part does not apply when another part is invalid.
		{"half valid", &AlterUser{Name: "bob", Upsert: []ScramCredential{cred(2, 4096)}, Delete: []int8{2}}, kerr.DuplicateResource},
	} {
		before := s.Snapshot()
		if res := s.Apply(throughLog(t, &Command{AlterUser: tc.a})); !errors.Is(res.Err, tc.want) {
			t.Fatalf("%s: err %v, want %v", tc.name, res.Err, tc.want)
		}
		if !bytes.Equal(before, s.Snapshot()) {
			t.Fatalf("%s: failed command changed the state", tc.name)
		}
	}
}

func TestBootstrapUsersAppliesOnce(t *testing.T) {
	s := NewState("c")
	first := &BootstrapUsers{Users: []User{{Name: "admin", Scram: []ScramCredential{cred(1, 4096), cred(2, 4096)}}}}
	mustApply(t, s, &Command{BootstrapUsers: first})
	if !s.UsersBootstrapped || len(s.UserNames()) != 1 {
		t.Fatalf("bootstrap not applied: %v %v", s.UsersBootstrapped, s.UserNames())
	}
	// Another broker's bootstrap (different salts) and a later one change nothing.
	mustApply(t, s, &Command{AlterUser: &AlterUser{Name: "admin", Delete: []int8{2}}})
	before := s.Snapshot()
	second := &BootstrapUsers{Users: []User{{Name: "admin", Scram: []ScramCredential{cred(2, 8192)}}, {Name: "x", Scram: []ScramCredential{cred(1, 4096)}}}}
	mustApply(t, s, &Command{BootstrapUsers: second})
	if !bytes.Equal(before, s.Snapshot()) {
		t.Fatal("a second bootstrap changed the users")
	}
	// An invalid bootstrap changes nothing and does not use up the once.
	s2 := NewState("c")
	bad := &BootstrapUsers{Users: []User{{Name: "a", Scram: []ScramCredential{cred(1, 4096)}}, {Name: "b", Scram: []ScramCredential{cred(1, 100)}}}}
	if res := s2.Apply(&Command{BootstrapUsers: bad}); !errors.Is(res.Err, kerr.UnacceptableCredential) || s2.UsersBootstrapped || len(s2.Users) != 0 {
		t.Fatalf("invalid bootstrap: %v, bootstrapped %v, users %v", res.Err, s2.UsersBootstrapped, s2.UserNames())
	}
}

// Users survive a snapshot, and a snapshot with a malformed user is
// refused, not half-loaded.
func TestUsersSnapshot(t *testing.T) {
	s := NewState("c")
	mustApply(t, s, &Command{AlterUser: &AlterUser{Name: "alice", Upsert: []ScramCredential{cred(2, 4096)}}})
	r, err := Restore(s.Snapshot())
	if err != nil || !bytes.Equal(r.Snapshot(), s.Snapshot()) {
		t.Fatalf("restore: %v", err)
	}
	bad := strings.Replace(string(s.Snapshot()), `"iterations":4096`, `"iterations":12`, 1)
	if _, err := Restore([]byte(bad)); err == nil {
		t.Fatal("snapshot with a weak credential restored")
	}
	bad = strings.Replace(string(s.Snapshot()), `"name":"alice"`, `"name":"mallory"`, 1)
	if _, err := Restore([]byte(bad)); err == nil {
		t.Fatal("snapshot with a misfiled user restored")
	}
}

func TestBrokerAddressByListener(t *testing.T) {
	s := NewState("c")
	b := &Broker{ID: 1, KafkaHost: "h", KafkaPort: 9092, Listeners: []Endpoint{{"PLAINTEXT", "h", 9092}, {"SASL_SSL", "pub", 9093}}}
	mustApply(t, s, &Command{RegisterBroker: b})
	got := s.Brokers[1]
	if !got.Equal(b) {
		t.Fatalf("registered %+v, want %+v", got, b)
	}
	b.Listeners[1].Port = 1 // the state keeps its own copy
	if host, port, ok := got.Address("SASL_SSL"); !ok || host != "pub" || port != 9093 {
		t.Fatalf("SASL_SSL: %s %d %v", host, port, ok)
	}
	if _, _, ok := got.Address("OTHER"); ok {
		t.Fatal("an unknown listener has an address")
	}
	if host, port, ok := got.Address(""); !ok || host != "h" || port != 9092 {
		t.Fatal("default address")
	}
	old := &Broker{ID: 2, KafkaHost: "o", KafkaPort: 1}
	if host, _, ok := old.Address("SASL_SSL"); !ok || host != "o" {
		t.Fatal("a broker registered without listeners serves every listener at its one address")
	}
}
