package cluster

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/floe-broker/floe/internal/pki"
)

// Secure is what a run with security on needs: a CA, one broker
// certificate (valid for every node's name and for 127.0.0.1, where
// clients reach the published ports), and a bootstrap users file with one
// admin user whose password is drawn at run time. All of it is made fresh
// in a directory mounted read-only at /certs in every container: nothing
// secret is committed, and nothing outlives the run's data root.
//
// Brokers then serve clients on SASL_SSL (SCRAM) only, and talk to each
// other over mutual TLS.
type Secure struct {
	Dir      string // host directory mounted at /certs
	CA       *pki.CA
	User     string
	Password string
	CertFile string // host paths
	KeyFile  string
	CAFile   string
}

// secureMount is where Dir appears in containers.
const secureMount = "/certs"

// maxNodeNames is how many node<N> names the certificate covers (membership
// nemeses add brokers).
const maxNodeNames = 32

// NewSecure makes the CA, certificate and users file in dir.
func NewSecure(dir string) (*Secure, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ca, err := pki.NewCA("floe jepsen CA")
	if err != nil {
		return nil, err
	}
	hosts := []string{"127.0.0.1", "localhost"}
	for i := 1; i <= maxNodeNames; i++ {
		hosts = append(hosts, fmt.Sprintf("node%d", i))
	}
	pair, err := ca.Issue(pki.Leaf{Subject: pkix.Name{CommonName: "floe-jepsen-node"}, Hosts: hosts, Server: true, Client: true})
	if err != nil {
		return nil, err
	}
	s := &Secure{Dir: dir, CA: ca, User: "jepsen"}
	if s.CertFile, s.KeyFile, err = pair.Write(dir, "node"); err != nil {
		return nil, err
	}
	// The brokers run as root in their containers, but the key must be
	// readable there whatever the host's umask did: 0644 inside a
	// directory only this run knows of.
	if err := os.Chmod(s.KeyFile, 0o644); err != nil {
		return nil, err
	}
	if s.CAFile, err = ca.WriteCA(dir, "ca"); err != nil {
		return nil, err
	}
	pw := make([]byte, 16)
	if _, err := rand.Read(pw); err != nil {
		return nil, err
	}
	s.Password = hex.EncodeToString(pw)
	if err := os.WriteFile(filepath.Join(dir, "users.txt"), []byte(s.User+" "+s.Password+"\n"), 0o644); err != nil {
		return nil, err
	}
	return s, nil
}

// Mount is the docker -v specification of the certificate directory.
func (s *Secure) Mount() string { return s.Dir + ":" + secureMount + ":ro" }

// ServeArgs wraps a plaintext command line (ServeArgs): the Kafka
// listener becomes SASL_SSL with SCRAM, advertised at the node's published
// address, and the peer transport runs over mutual TLS.
func (s *Secure) ServeArgs(base func(c *Cluster, n int) []string) func(c *Cluster, n int) []string {
	in := func(name string) string { return secureMount + "/" + name }
	return func(c *Cluster, n int) []string {
		args := base(c, n)
		var out []string
		for i := 0; i < len(args); i++ {
			switch args[i] {
			case "--kafka-addr":
				out = append(out, "--listeners", "SASL_SSL://"+args[i+1])
				i++
			case "--advertise-kafka-addr":
				out = append(out, "--advertised-listeners", "SASL_SSL://"+args[i+1])
				i++
			default:
				out = append(out, args[i])
			}
		}
		return append(out,
			"--tls-cert-file", in("node.crt"), "--tls-key-file", in("node.key"),
			"--sasl-mechanisms", "SCRAM-SHA-512,SCRAM-SHA-256", "--bootstrap-users", in("users.txt"),
			"--super-users", "User:"+s.User,
			"--peer-tls-cert-file", in("node.crt"), "--peer-tls-key-file", in("node.key"), "--peer-tls-ca-file", in("ca.crt"))
	}
}

// ClientTLS is the TLS configuration of a client on this host.
func (s *Secure) ClientTLS() *tls.Config {
	return &tls.Config{RootCAs: s.CA.Pool(), MinVersion: tls.VersionTLS12}
}

// Describe says what the run used, for its summary (no secret).
func (s *Secure) Describe() string {
	return "clients: SASL_SSL, SCRAM-SHA-512 as User:" + s.User + "; brokers: mutual TLS (CA made for this run, " +
		strconv.Itoa(maxNodeNames) + " node names)"
}
