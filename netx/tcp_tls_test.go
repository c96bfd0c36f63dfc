package netx

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/pki"
)

// mTLS between peers: brokers holding certificates from the cluster CA
// exchange messages; a connection without a certificate, with one from
// another CA, or in plaintext is refused, and the transport goes on.
func TestTCPMutualTLS(t *testing.T) {
	leakCheck(t)
	ca, err := pki.NewCA("cluster")
	if err != nil {
		t.Fatal(err)
	}
	tlsFor := func(ca *pki.CA, name string) (server *tls.Config, client func(string) *tls.Config) {
		p, err := ca.Issue(pki.Leaf{Subject: pkix.Name{CommonName: name}, Hosts: []string{"127.0.0.1"}, Server: true, Client: true})
		if err != nil {
			t.Fatal(err)
		}
		cert, _ := p.TLS()
		server = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
		client = func(addr string) *tls.Config {
			host, _, _ := net.SplitHostPort(addr)
			return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: ca.Pool(), ServerName: host, MinVersion: tls.VersionTLS12}
		}
		return server, client
	}
	a, b, inA, inB := pair(t, func(c *TCPConfig) { c.ServerTLS, c.ClientTLS = tlsFor(ca, "node") })
	sendBatch(t, a, 1, 2, inB, "a-to-b", 50)
	sendBatch(t, b, 2, 1, inA, "b-to-a", 50)

	// A stranger: certificate from another CA.
	other, _ := pki.NewCA("other")
	cs := fastCfg(3)
	cs.ServerTLS, cs.ClientTLS = tlsFor(other, "stranger")
	stranger := newTCPForTest(t, cs, (&inbox{}).handle)
	stranger.SetPeer(2, b.Addr())
	stranger.Send(2, []byte("intruder"))
	eventually(t, "the stranger refused", func() bool { return b.Stats().InboundRejected >= 1 })

	// Plaintext where TLS is expected.
	raw := rawConn(t, b, 7)
	raw.Write([]byte("\x00\x00\x00\x05plain"))
	expectDropped(t, raw)
	eventually(t, "the plaintext peer refused", func() bool { return b.Stats().InboundRejected >= 2 })
	if inB.has("3:intruder") || inB.has("7:plain") {
		t.Fatal("a refused peer's message was delivered")
	}
	sendBatch(t, a, 1, 2, inB, "still-serving", 20)
}

// expectDropped reads until the transport closes c (an EOF, or a reset
// when the TLS server answered with an alert it did not wait to deliver).
func expectDropped(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 512)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("connection not closed by the transport")
		}
		return
	}
}
