package node

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/sasl"
)

// upsertion builds an AlterUserScramCredentials upsertion as kadm does:
// the client salts the password.
func upsertion(t *testing.T, user string, mech int8, iters int32, password string) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	t.Helper()
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations = user, mech, iters
	u.Salt = make([]byte, 24)
	rand.Read(u.Salt)
	if name := scramMechanismName(mech); name != "" && iters >= 4096 && iters <= 16384 {
		salted, err := sasl.SaltPassword(name, password, u.Salt, int(iters))
		if err != nil {
			t.Fatal(err)
		}
		u.SaltedPassword = salted
	} else {
		u.SaltedPassword = make([]byte, 32)
	}
	return u
}

func deletion(user string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = user, mech
	return d
}

func alterUsers(t *testing.T, c *cluster, node int32, dels []kmsg.AlterUserSCRAMCredentialsRequestDeletion,
	ups ...kmsg.AlterUserSCRAMCredentialsRequestUpsertion) map[string]int16 {
	t.Helper()
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions, req.Upsertions = dels, ups
	resp := admin(t, c, node, req).(*kmsg.AlterUserSCRAMCredentialsResponse)
	out := map[string]int16{}
	for _, r := range resp.Results {
		if _, dup := out[r.User]; dup {
			t.Fatalf("user %q answered twice", r.User)
		}
		out[r.User] = r.ErrorCode
	}
	return out
}

func describeUsers(t *testing.T, c *cluster, node int32, names ...string) *kmsg.DescribeUserSCRAMCredentialsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, n := range names {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = n
		req.Users = append(req.Users, u)
	}
	return admin(t, c, node, req).(*kmsg.DescribeUserSCRAMCredentialsResponse)
}

// Users created through one broker are in every broker's metadata, as
// StoredKey and ServerKey that check the password (and never the salted
// password); Describe shows mechanisms and iterations only; the errors are
// Kafka's.
func TestUserScramCredentialsAPIs(t *testing.T) {
	c := newCluster(t, 3, 11)
	c.waitReady()
	up := upsertion(t, "alice", 2, 8192, "s3cret")
	res := alterUsers(t, c, 2, nil, up, upsertion(t, "alice", 1, 4096, "s3cret"), upsertion(t, "bob", 1, 4096, "pw"))
	if res["alice"] != 0 || res["bob"] != 0 {
		t.Fatalf("create: %v", res)
	}
	c.runFor(500 * 1e6)
	for id, n := range c.nodes {
		cred, ok := n.r.ScramCredential("alice", 2)
		if !ok {
			t.Fatalf("node %d lacks alice's credential", id)
		}
		sc := sasl.ScramCredential{Salt: cred.Salt, Iterations: int(cred.Iterations), StoredKey: cred.StoredKey, ServerKey: cred.ServerKey}
		if !sc.Verify(sasl.ScramSHA512, []byte("s3cret")) || sc.Verify(sasl.ScramSHA512, []byte("s3cret!")) {
			t.Fatalf("node %d: the stored credential does not check the password", id)
		}
		if snap := n.r.Metadata().Snapshot(); bytes.Contains(snap, up.SaltedPassword) || strings.Contains(string(snap), "s3cret") {
			t.Fatalf("node %d: the metadata holds the salted password or the password", id)
		}
	}
	d := describeUsers(t, c, 3, "alice", "nobody", "bob", "bob")
	if len(d.Results) != 3 {
		t.Fatalf("describe: %d results, want 3 (alice, nobody, bob)", len(d.Results))
	}
	alice := d.Results[0]
	if alice.User != "alice" || alice.ErrorCode != 0 || len(alice.CredentialInfos) != 2 ||
		alice.CredentialInfos[0].Mechanism != 1 || alice.CredentialInfos[0].Iterations != 4096 ||
		alice.CredentialInfos[1].Mechanism != 2 || alice.CredentialInfos[1].Iterations != 8192 {
		t.Fatalf("alice: %+v", alice)
	}
	wantCode(t, "describe nobody", d.Results[1].ErrorCode, d.Results[1].ErrorMessage, kerr.ResourceNotFound)
	wantCode(t, "describe bob twice", d.Results[2].ErrorCode, d.Results[2].ErrorMessage, kerr.DuplicateResource)
	all := describeUsers(t, c, 1)
	if len(all.Results) != 2 || all.Results[0].User != "alice" || all.Results[1].User != "bob" {
		t.Fatalf("describe all: %+v", all.Results)
	}

	res = alterUsers(t, c, 1, []kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("alice", 1), deletion("bob", 2), deletion("x", 3), deletion("", 1)},
		upsertion(t, "carol", 1, 100, "pw"), upsertion(t, "dave", 1, 20000, "pw"), upsertion(t, "erin", 1, 4096, "pw"),
		upsertion(t, "erin", 1, 4096, "pw2"), upsertion(t, "fay", 9, 4096, "pw"))
	want := map[string]*kerr.Error{"alice": nil, "bob": kerr.ResourceNotFound, "x": kerr.UnsupportedSaslMechanism,
		"": kerr.UnacceptableCredential, "carol": kerr.UnacceptableCredential, "dave": kerr.UnacceptableCredential,
		"erin": kerr.DuplicateResource, "fay": kerr.UnsupportedSaslMechanism}
	for u, w := range want {
		code, ok := res[u]
		if !ok {
			t.Fatalf("no result for %q: %v", u, res)
		}
		wantCode(t, "alter "+u, code, nil, w)
	}
	c.runFor(500 * 1e6)
	if _, ok := c.nodes[3].r.ScramCredential("alice", 1); ok {
		t.Fatal("alice's SHA-256 credential survived its deletion")
	}
	if _, ok := c.nodes[3].r.ScramCredential("erin", 1); ok {
		t.Fatal("erin's duplicated upsertion applied")
	}
	// A salted password of the wrong length is refused.
	bad := upsertion(t, "gus", 2, 4096, "pw")
	bad.SaltedPassword = bad.SaltedPassword[:10]
	wantCode(t, "short salted password", alterUsers(t, c, 1, nil, bad)["gus"], nil, kerr.UnacceptableCredential)
}

// Bootstrap users are applied once in the cluster's life: a broker
// restarted with another file, and more brokers with their own salts,
// change nothing.
func TestBootstrapUsersOnce(t *testing.T) {
	mk := func(pw string) []controller.User {
		var creds []controller.ScramCredential
		for _, m := range []int8{1, 2} {
			sc, err := sasl.FromPassword(scramMechanismName(m), pw, sasl.MinIterations, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			creds = append(creds, controller.ScramCredential{Mechanism: m, Salt: sc.Salt, Iterations: int32(sc.Iterations), StoredKey: sc.StoredKey, ServerKey: sc.ServerKey})
		}
		return []controller.User{{Name: "admin", Scram: creds}}
	}
	file := mk("first")
	c := newClusterWith(t, 3, 5, func(cfg *Config) { cfg.BootstrapUsers = file })
	c.waitReady()
	if !c.runUntil(10*1e9, func() bool { return c.nodes[1].r.Metadata().UsersBootstrapped }) {
		t.Fatal("bootstrap users never applied")
	}
	c.runFor(1e9)
	check := func(pw string) {
		t.Helper()
		for id, n := range c.nodes {
			cred, ok := n.r.ScramCredential("admin", 2)
			if !ok {
				t.Fatalf("node %d lacks admin", id)
			}
			sc := sasl.ScramCredential{Salt: cred.Salt, Iterations: int(cred.Iterations), StoredKey: cred.StoredKey, ServerKey: cred.ServerKey}
			if !sc.Verify(sasl.ScramSHA512, []byte(pw)) {
				t.Fatalf("node %d: admin's password is not %q", id, pw)
			}
		}
	}
	check("first")
	before := c.nodes[2].r.Metadata().Snapshot()
	file = mk("second")
	c.nodes[2].crash()
	c.nodes[2].boot()
	c.runFor(3e9)
	c.waitReady()
	check("first")
	after := c.nodes[1].r.Metadata().Snapshot()
	if !bytes.Equal(usersPart(t, before), usersPart(t, after)) {
		t.Fatal("a restart with another bootstrap file changed the users")
	}
}

func usersPart(t *testing.T, snap []byte) []byte {
	t.Helper()
	st, err := controller.Restore(snap)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, n := range st.UserNames() {
		for _, c := range st.Users[n].Scram {
			b.Write(c.StoredKey)
		}
	}
	return b.Bytes()
}

// Metadata, DescribeCluster and FindCoordinator answer each client with
// the addresses of the listener it came in on.
func TestMetadataByListener(t *testing.T) {
	c := newClusterWith(t, 3, 3, func(cfg *Config) {
		cfg.Listeners = []controller.Endpoint{
			{Name: "INTERNAL", Host: "10.0.0.1", Port: 9000 + cfg.NodeID},
			{Name: "EXTERNAL", Host: "public.example", Port: 19000 + cfg.NodeID},
		}
		cfg.KafkaHost, cfg.KafkaPort = "10.0.0.1", 9000+cfg.NodeID
	})
	c.waitReady()
	if !c.runUntil(10*1e9, func() bool {
		for _, b := range c.nodes[1].r.Metadata().Brokers {
			if len(b.Listeners) != 2 {
				return false
			}
		}
		return true
	}) {
		t.Fatal("brokers did not register their listeners")
	}
	for _, tc := range []struct {
		listener, host string
		port           int32
	}{{"EXTERNAL", "public.example", 19000}, {"INTERNAL", "10.0.0.1", 9000}, {"", "10.0.0.1", 9000}} {
		md := c.requestAs(2, Client{Listener: tc.listener}, kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
		if len(md.Brokers) != 3 {
			t.Fatalf("%q: %d brokers", tc.listener, len(md.Brokers))
		}
		for _, b := range md.Brokers {
			if b.Host != tc.host || b.Port != tc.port+b.NodeID {
				t.Fatalf("listener %q: broker %d at %s:%d", tc.listener, b.NodeID, b.Host, b.Port)
			}
		}
		dc := c.requestAs(2, Client{Listener: tc.listener}, kmsg.NewPtrDescribeClusterRequest()).(*kmsg.DescribeClusterResponse)
		for _, b := range dc.Brokers {
			if b.Host != tc.host {
				t.Fatalf("DescribeCluster on %q: %s", tc.listener, b.Host)
			}
		}
	}
	md := c.requestAs(1, Client{Listener: "NOPE"}, kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
	if len(md.Brokers) != 0 {
		t.Fatalf("a listener no broker has: %d brokers listed", len(md.Brokers))
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	var resp *kmsg.FindCoordinatorResponse
	c.runUntil(20*1e9, func() bool {
		resp = c.requestAs(3, Client{Listener: "EXTERNAL"}, fc).(*kmsg.FindCoordinatorResponse)
		return resp.ErrorCode == 0
	})
	if resp.ErrorCode != 0 || resp.Host != "public.example" {
		t.Fatalf("FindCoordinator on EXTERNAL: %v %s", resp.ErrorCode, resp.Host)
	}
}
