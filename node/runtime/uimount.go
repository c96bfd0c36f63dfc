package runtime

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/floe-broker/floe/node"
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
	cfg := ui.Config{Logger: b.log, NodeID: b.opts.Node.NodeID, RaftLocal: b.uiRaftLocal}
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

// uiRaftLocal reads this broker's Raft replicas on the reactor, for the
// UI's Raft health page (which checks the session's authorization first).
func (b *Broker) uiRaftLocal(ctx context.Context) ([]ui.RaftGroup, error) {
	var hs []node.RaftHealth
	timeout := 5 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if !b.loop.call(func() { hs = b.reactor.RaftHealth() }, timeout) {
		return nil, errors.New("the broker's reactor did not answer in time")
	}
	out := make([]ui.RaftGroup, 0, len(hs))
	for _, h := range hs {
		g := ui.RaftGroup{Controller: h.Controller, Topic: h.Topic, Partition: h.Partition, Term: h.Term, Lead: h.Lead,
			Role: h.Role, Commit: h.Commit, Applied: h.Applied, FirstIndex: h.FirstIndex, LastIndex: h.LastIndex,
			Voters: h.Voters, Learners: h.Learners, Fenced: h.Fenced, Damaged: h.Damaged}
		for _, pr := range h.Progress {
			g.Members = append(g.Members, ui.RaftMember{ID: pr.ID, Match: pr.Match, Next: pr.Next, State: pr.State.String(),
				Learner: pr.IsLearner, RecentActive: pr.RecentActive, PendingSnapshot: pr.PendingSnapshot, Inflight: pr.InflightMsgs})
		}
		out = append(out, g)
	}
	return out, nil
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
