package cluster

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The secure command line replaces the plaintext listener with SASL_SSL
// at the same addresses and adds the TLS, SASL and peer mTLS flags; the
// certificate serves every node name and 127.0.0.1.
func TestSecureServeArgs(t *testing.T) {
	s, err := NewSecure(filepath.Join(t.TempDir(), "certs"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{RunID: "r1", Nodes: 3, Image: "i", Args: nil})
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(s.ServeArgs(ServeArgs)(c, 2), " ")
	for _, want := range []string{"--listeners SASL_SSL://0.0.0.0:9092", "--advertised-listeners SASL_SSL://127.0.0.1:19093",
		"--peer-tls-ca-file /certs/ca.crt", "--tls-cert-file /certs/node.crt", "--bootstrap-users /certs/users.txt",
		"--advertise-raft-addr node2:9093"} {
		if !strings.Contains(args, want) {
			t.Errorf("no %q in %s", want, args)
		}
	}
	if strings.Contains(args, "--kafka-addr") || strings.Contains(args, s.Password) {
		t.Errorf("plaintext listener or the password on the command line: %s", args)
	}
	users, err := os.ReadFile(filepath.Join(s.Dir, "users.txt"))
	if err != nil || string(users) != s.User+" "+s.Password+"\n" || len(s.Password) < 32 {
		t.Fatalf("users file %q, %v", users, err)
	}
	pair, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	leaf := pair.Leaf
	for _, host := range []string{"node1", "node7", "127.0.0.1"} {
		if err := leaf.VerifyHostname(host); err != nil {
			t.Errorf("certificate does not cover %s: %v", host, err)
		}
	}
}
