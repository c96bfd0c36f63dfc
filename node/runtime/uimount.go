package runtime

import (
	"crypto/tls"
	"net"
	"slices"
	"strconv"

	"github.com/floe-broker/floe/node/runtime/ui"
	"github.com/floe-broker/floe/node/sasl"
)

// uiConfig points the web UI (package ui, mounted at / of the admin
// server) at one of this broker's own Kafka listeners: the first SASL
// listener with a password mechanism (the UI then asks for a login and
// uses it as the SASL credentials, so ACLs apply), else the first PLAINTEXT
// listener or SSL one that does not require client certificates (the UI
// is then User:ANONYMOUS to the authorizer). It never borrows the
// broker's own certificate as a client identity.
func (b *Broker) uiConfig() ui.Config {
	cfg := ui.Config{Logger: b.log}
	ls := b.opts.Listeners
	if len(ls) == 0 {
		ls = []Listener{{Name: ProtocolPlaintext, Protocol: ProtocolPlaintext}}
	}
	pick := -1
	if mech := uiMechanism(b.opts.Security.SASLMechanisms); mech != "" {
		for i, l := range ls {
			if l.usesSASL() {
				pick, cfg.SASLMechanism = i, mech
				break
			}
		}
	}
	if pick < 0 {
		for i, l := range ls {
			if l.Protocol == ProtocolPlaintext || (l.Protocol == ProtocolSSL && b.sec.auth != tls.RequireAndVerifyClientCert) {
				pick = i
				break
			}
		}
	}
	if pick < 0 {
		cfg.Unavailable = "no listener the UI can use (it needs PLAINTEXT, SSL without required client certificates, or SASL with PLAIN or SCRAM)"
		return cfg
	}
	l := ls[pick]
	cfg.Addr = b.ListenerAddr(l.Name)
	cfg.Advertised = b.advertised(l.Name)
	if l.usesTLS() && b.sec.tls != nil {
		cfg.TLS = func(serverName string) *tls.Config {
			c := b.sec.tls.ClientConfig(serverName)
			c.Certificates = nil // the UI authenticates by SASL or not at all
			return c
		}
	}
	return cfg
}

// uiMechanism is the password mechanism the UI logs in with, strongest
// first.
func uiMechanism(ms []string) string {
	for _, m := range []string{sasl.ScramSHA512, sasl.ScramSHA256, sasl.Plain} {
		if slices.Contains(ms, m) {
			return m
		}
	}
	return ""
}

// advertised is the address Metadata gives for this broker on a listener.
func (b *Broker) advertised(name string) string {
	n := b.opts.Node
	for _, e := range n.Listeners {
		if e.Name == name {
			return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
		}
	}
	host, port := n.KafkaHost, n.KafkaPort
	if host == "" {
		host = "127.0.0.1"
	}
	if port == 0 {
		port = 9092
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}
