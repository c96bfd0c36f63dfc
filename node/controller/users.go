package controller

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The user credential store: SCRAM credentials by user and mechanism,
// replicated with the rest of the metadata. PLAIN checks passwords against
// the same credentials. What is stored is what RFC 5802 says a server
// keeps: salt, iteration count, StoredKey and ServerKey. Never a password,
// never the salted password (a password equivalent: it yields ClientKey).

// SCRAM mechanisms, numbered as in KIP-554's AlterUserScramCredentials.
const (
	MechanismScramSHA256 int8 = 1
	MechanismScramSHA512 int8 = 2
)

// Iteration bounds enforced on stored credentials (Kafka's).
const (
	ScramIterationsMin = 4096
	ScramIterationsMax = 16384
)

// ScramCredential is one user's credential for one mechanism.
//
// Invariant (checked by Apply): Mechanism is 1 or 2, Iterations within
// ScramIterationsMin..Max, Salt non-empty, StoredKey and ServerKey the
// mechanism's hash size.
type ScramCredential struct {
	Mechanism  int8   `json:"mechanism"`
	Salt       []byte `json:"salt"`
	Iterations int32  `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// User is a user with at least one credential.
//
// Invariant: Scram is sorted by mechanism, one entry per mechanism, never
// empty (a user whose last credential is deleted is removed).
type User struct {
	Name  string            `json:"name"`
	Scram []ScramCredential `json:"scram"`
}

// AlterUser changes one user's credentials: Delete removes the credentials
// of the listed mechanisms, Upsert adds or replaces. All of it applies, or
// none (Kafka answers AlterUserScramCredentials per user).
type AlterUser struct {
	Name   string            `json:"name"`
	Upsert []ScramCredential `json:"upsert,omitempty"`
	Delete []int8            `json:"delete,omitempty"`
}

// BootstrapUsers creates the first users of a new cluster (floe serve
// --bootstrap-users). It applies once in a cluster's life: later ones,
// from any broker, change nothing.
type BootstrapUsers struct {
	Users []User `json:"users"`
}

// ScramKeyBytes is the StoredKey and ServerKey length of a mechanism, 0
// for an unknown one.
func ScramKeyBytes(mechanism int8) int {
	switch mechanism {
	case MechanismScramSHA256:
		return 32
	case MechanismScramSHA512:
		return 64
	}
	return 0
}

// UserNames returns the users' names, sorted.
func (s *State) UserNames() []string {
	names := make([]string, 0, len(s.Users))
	for n := range s.Users { //floe:unordered sorted below
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ScramCredential returns user's credential for mechanism.
func (s *State) ScramCredential(user string, mechanism int8) (ScramCredential, bool) {
	u, ok := s.Users[user]
	if !ok {
		return ScramCredential{}, false
	}
	for _, c := range u.Scram {
		if c.Mechanism == mechanism {
			return c, true
		}
	}
	return ScramCredential{}, false
}

// CheckScramCredential validates one credential, with the error Kafka
// answers for it.
func CheckScramCredential(c ScramCredential) error {
	switch {
	case ScramKeyBytes(c.Mechanism) == 0:
		return kerr.UnsupportedSaslMechanism
	case c.Iterations < ScramIterationsMin || c.Iterations > ScramIterationsMax,
		len(c.Salt) == 0, len(c.StoredKey) != ScramKeyBytes(c.Mechanism), len(c.ServerKey) != ScramKeyBytes(c.Mechanism):
		return kerr.UnacceptableCredential
	}
	return nil
}

// alterUser applies an AlterUser, all or nothing.
func (s *State) alterUser(a *AlterUser) Result {
	if a.Name == "" {
		return Result{Err: kerr.UnacceptableCredential}
	}
	if len(a.Upsert) == 0 && len(a.Delete) == 0 {
		return Result{Err: kerr.InvalidRequest}
	}
	seen := map[int8]bool{}
	for _, m := range a.Delete {
		if ScramKeyBytes(m) == 0 {
			return Result{Err: kerr.UnsupportedSaslMechanism}
		}
		if seen[m] {
			return Result{Err: kerr.DuplicateResource}
		}
		seen[m] = true
	}
	for _, c := range a.Upsert {
		if err := CheckScramCredential(c); err != nil {
			return Result{Err: err}
		}
		if seen[c.Mechanism] {
			return Result{Err: kerr.DuplicateResource}
		}
		seen[c.Mechanism] = true
	}
	for _, m := range a.Delete {
		if _, ok := s.ScramCredential(a.Name, m); !ok {
			return Result{Err: kerr.ResourceNotFound}
		}
	}
	byMech := map[int8]ScramCredential{}
	if u, ok := s.Users[a.Name]; ok {
		for _, c := range u.Scram {
			byMech[c.Mechanism] = c
		}
	}
	for _, m := range a.Delete {
		delete(byMech, m)
	}
	for _, c := range a.Upsert {
		byMech[c.Mechanism] = cloneCredential(c)
	}
	s.setUser(a.Name, byMech)
	return Result{}
}

// setUser stores a user's credentials in mechanism order, or removes the
// user when there are none.
func (s *State) setUser(name string, byMech map[int8]ScramCredential) {
	if len(byMech) == 0 {
		delete(s.Users, name)
		return
	}
	u := &User{Name: name}
	for _, m := range []int8{MechanismScramSHA256, MechanismScramSHA512} {
		if c, ok := byMech[m]; ok {
			u.Scram = append(u.Scram, c)
		}
	}
	if s.Users == nil {
		s.Users = map[string]*User{}
	}
	s.Users[name] = u
}

// bootstrapUsers applies BootstrapUsers once.
func (s *State) bootstrapUsers(b *BootstrapUsers) Result {
	if s.UsersBootstrapped {
		return Result{}
	}
	names := map[string]bool{}
	for _, u := range b.Users {
		if u.Name == "" || names[u.Name] || len(u.Scram) == 0 {
			return Result{Err: kerr.UnacceptableCredential}
		}
		names[u.Name] = true
		mechs := map[int8]bool{}
		for _, c := range u.Scram {
			if err := CheckScramCredential(c); err != nil {
				return Result{Err: err}
			}
			if mechs[c.Mechanism] {
				return Result{Err: kerr.DuplicateResource}
			}
			mechs[c.Mechanism] = true
		}
	}
	for _, u := range b.Users {
		byMech := map[int8]ScramCredential{}
		for _, c := range u.Scram {
			byMech[c.Mechanism] = cloneCredential(c)
		}
		s.setUser(u.Name, byMech)
	}
	s.UsersBootstrapped = true
	return Result{}
}

func cloneCredential(c ScramCredential) ScramCredential {
	c.Salt = append([]byte(nil), c.Salt...)
	c.StoredKey = append([]byte(nil), c.StoredKey...)
	c.ServerKey = append([]byte(nil), c.ServerKey...)
	return c
}

// checkUsers validates restored users.
func (s *State) checkUsers() error {
	for name, u := range s.Users { //floe:unordered validation only
		if u == nil || u.Name != name || len(u.Scram) == 0 {
			return errMalformedUser(name)
		}
		for _, c := range u.Scram {
			if CheckScramCredential(c) != nil {
				return errMalformedUser(name)
			}
		}
	}
	return nil
}
