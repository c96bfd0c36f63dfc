package itest

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/floe-broker/floe/internal/pki"
)

// Three brokers replicate over mutual TLS (--peer-tls-*) and serve
// clients on SASL_SSL; acks=all writes reach every replica; a peer
// connection without a certificate from the cluster CA is refused; the
// admin endpoint serves HTTPS (--admin-tls).
func TestSecureCluster(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, err := pki.NewCA("cluster CA")
	if err != nil {
		t.Fatal(err)
	}
	caFile := must(ca.WriteCA(dir, "ca"))
	pair, err := ca.Issue(pki.Leaf{Subject: pkix.Name{CommonName: "floe-node"}, Hosts: []string{"127.0.0.1"}, Server: true, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := pair.Write(dir, "node")
	if err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(dir, "users.txt")
	writeFile(t, users, "admin "+adminPass+"\n")
	const n = 3
	raft, kafkaAddrs, peers := make([]string, n), make([]string, n), make([]string, n)
	for i := range raft {
		raft[i], kafkaAddrs[i] = FreeAddr(t), FreeAddr(t)
		peers[i] = fmt.Sprintf("%d@%s", i+1, raft[i])
	}
	common := []string{"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--sasl-mechanisms", "SCRAM-SHA-512",
		"--bootstrap-users", users, "--peer-tls-cert-file", certFile, "--peer-tls-key-file", keyFile, "--peer-tls-ca-file", caFile,
		"--admin-tls"}
	brokers := make([]*Broker, n)
	for i := range brokers {
		brokers[i] = StartBroker(t, WithNodeID(i+1), WithRaftAddr(raft[i]), WithPeers(strings.Join(peers, ",")),
			WithListeners("SASL_SSL://"+kafkaAddrs[i]), WithFlags(common...), NoWait())
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	for _, b := range brokers {
		eventually(t, 60*time.Second, "broker "+b.AdminAddr+" ready over HTTPS", func() bool {
			resp, err := hc.Get("https://" + b.AdminAddr + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		if resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + b.AdminAddr + "/readyz"); err == nil && resp.StatusCode == http.StatusOK {
			t.Fatal("the admin endpoint answered plain HTTP")
		}
	}
	opts := []kgo.Opt{kgo.SeedBrokers(kafkaAddrs...), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()}),
		kgo.SASL(scram.Auth{User: "admin", Pass: adminPass}.AsSha512Mechanism())}
	var cl *kgo.Client
	eventually(t, 30*time.Second, "the bootstrap users", func() bool {
		c, err := kgo.NewClient(append(opts, kgo.RequestRetries(0))...)
		if err != nil {
			return false
		}
		ctx := ctxFor(t, 10*time.Second)
		if _, err := kadm.NewClient(c).ListBrokers(ctx); err != nil {
			c.Close()
			return false
		}
		cl = c
		return true
	})
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := ctxFor(t, 60*time.Second)
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "replicated"); err != nil {
		t.Fatalf("create: %v", err)
	}
	prod, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic("replicated"), kgo.RequiredAcks(kgo.AllISRAcks()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 20 {
		if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatalf("acks=all produce over peer mTLS: %v", err)
		}
	}
	// The leader hears from both followers (over mTLS) within the ISR
	// window: all three are in sync.
	eventually(t, 30*time.Second, "three in sync", func() bool {
		md, err := adm.Metadata(ctx, "replicated")
		if err != nil {
			return false
		}
		p := md.Topics["replicated"].Partitions[0]
		return len(p.ISR) == 3
	})
	// A peer without a certificate: a plaintext handshake is refused.
	c, err := net.DialTimeout("tcp", raft[0], 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("\x00\x00\x00\x10FLOE\x00\x01\x00\x00\x00\x00\x00\x00\x00\x09"))
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 512)
	for {
		if _, err := c.Read(buf); err != nil {
			if isTimeout(err) {
				t.Fatal("a plaintext peer connection was left open")
			}
			break
		}
	}
	// A stranger's certificate (another CA) fails the TLS handshake.
	other, _ := pki.NewCA("other")
	op, _ := other.Issue(pki.Leaf{Subject: pkix.Name{CommonName: "intruder"}, Client: true})
	oc, _ := op.TLS()
	tc, err := tls.Dial("tcp", raft[0], &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{oc}, ServerName: "127.0.0.1"})
	if err == nil {
		// TLS 1.3 reports a refused client certificate on the first read.
		tc.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err = tc.Read(buf)
		tc.Close()
	}
	if err == nil || isTimeout(err) {
		t.Fatalf("a peer with another CA's certificate was accepted: %v", err)
	}
}
