package runtime

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/pki"
)

// served returns the common name of the certificate a server config
// presents to a new connection.
func served(t *testing.T, c *tls.Config) string {
	t.Helper()
	cfg, err := c.GetConfigForClient(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	cert := cfg.Certificates[0]
	leaf := cert.Leaf
	if leaf == nil {
		t.Fatal("no parsed leaf")
	}
	return leaf.Subject.CommonName
}

// A changed certificate is served to new connections; a broken one (a
// half-written file, a key that does not match) is logged and the last
// good one stays.
func TestTLSReloader(t *testing.T) {
	dir := t.TempDir()
	ca, _ := pki.NewCA("ca")
	issue := func(cn string) pki.Pair {
		p, err := ca.Issue(pki.Leaf{Subject: pkix.Name{CommonName: cn}, Hosts: []string{"127.0.0.1"}, Server: true})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	certFile, keyFile, _ := issue("first").Write(dir, "srv")
	caFile, _ := ca.WriteCA(dir, "ca")
	r, err := NewTLSReloader(TLSFiles{CertFile: certFile, KeyFile: keyFile, CAFile: caFile}, slog.New(slog.DiscardHandler), time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := r.ServerConfig(tls.RequireAndVerifyClientCert)
	if err != nil {
		t.Fatal(err)
	}
	if got := served(t, sc); got != "first" {
		t.Fatalf("serving %q", got)
	}
	// Modification times have a coarse grain on some file systems: make
	// each change visible by its time too.
	bump := func(path string, at time.Time) { os.Chtimes(path, at, at) }
	second := issue("second")
	os.WriteFile(certFile, second.CertPEM, 0o644) // the key does not match yet
	bump(certFile, time.Now().Add(time.Minute))
	if got := served(t, sc); got != "first" {
		t.Fatalf("a mismatched pair replaced the certificate: serving %q", got)
	}
	os.WriteFile(keyFile, second.KeyPEM, 0o600)
	bump(keyFile, time.Now().Add(2*time.Minute))
	if got := served(t, sc); got != "second" {
		t.Fatalf("the renewed certificate is not served: %q", got)
	}
	os.WriteFile(certFile, []byte("-----BEGIN CERT"), 0o644) // half written
	bump(certFile, time.Now().Add(3*time.Minute))
	if got := served(t, sc); got != "second" {
		t.Fatalf("a broken file replaced the certificate: %q", got)
	}
	if _, err := NewTLSReloader(TLSFiles{CertFile: certFile, KeyFile: keyFile}, slog.New(slog.DiscardHandler), 0); err == nil {
		t.Fatal("a broken certificate loaded at start")
	}
	if _, err := NewTLSReloader(TLSFiles{CertFile: certFile}, slog.New(slog.DiscardHandler), 0); err == nil {
		t.Fatal("a certificate without its key accepted")
	}
}

func TestParseClientAuth(t *testing.T) {
	for in, want := range map[string]tls.ClientAuthType{"": tls.NoClientCert, "none": tls.NoClientCert,
		"requested": tls.VerifyClientCertIfGiven, "required": tls.RequireAndVerifyClientCert} {
		if got, err := ParseClientAuth(in); err != nil || got != want {
			t.Fatalf("%q: %v %v", in, got, err)
		}
	}
	if _, err := ParseClientAuth("optional"); err == nil {
		t.Fatal("optional accepted")
	}
}
