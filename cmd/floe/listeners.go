package main

// --listeners, --advertised-listeners and --listener-security-protocol-map,
// as Kafka's listeners, advertised.listeners and
// listener.security.protocol.map: "NAME://host:port,..." and
// "NAME:PROTOCOL,...". A listener named after a protocol (PLAINTEXT, SSL,
// SASL_PLAINTEXT, SASL_SSL) uses it unless the map says otherwise; any
// other name must be in the map.

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/runtime"
)

var protocols = []string{runtime.ProtocolPlaintext, runtime.ProtocolSSL, runtime.ProtocolSASLPlaintext, runtime.ProtocolSASLSSL}

func isProtocol(s string) bool {
	for _, p := range protocols {
		if s == p {
			return true
		}
	}
	return false
}

// endpoint is one NAME://host:port.
type endpoint struct {
	name, host, port string
}

// parseEndpoints parses "NAME://host:port,..."; an empty host means every
// interface when listening.
func parseEndpoints(s string) ([]endpoint, error) {
	var out []endpoint
	seen := map[string]bool{}
	for _, part := range splitList(s) {
		name, addr, ok := strings.Cut(part, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want NAME://host:port", part)
		}
		name = strings.ToUpper(name)
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", part, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return nil, fmt.Errorf("%q: bad port", part)
		}
		if seen[name] {
			return nil, fmt.Errorf("listener %s named twice", name)
		}
		seen[name] = true
		out = append(out, endpoint{name, host, port})
	}
	return out, nil
}

// parseProtocolMap parses "NAME:PROTOCOL,...".
func parseProtocolMap(s string) (map[string]string, error) {
	m := map[string]string{}
	for _, part := range splitList(s) {
		name, proto, ok := strings.Cut(part, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" || !isProtocol(proto) {
			return nil, fmt.Errorf("%q: want NAME:PROTOCOL with PROTOCOL one of %s", part, strings.Join(protocols, ", "))
		}
		m[name] = proto
	}
	return m, nil
}

// listenerPlan is what the listener flags resolve to: what to listen on,
// and what to advertise (the first advertised address is also the
// broker's default one).
type listenerPlan struct {
	listen    []runtime.Listener
	advertise []controller.Endpoint
}

// planListeners resolves --listeners, --listener-security-protocol-map and
// --advertised-listeners.
func planListeners(listeners, protoMap, advertised string) (listenerPlan, error) {
	var plan listenerPlan
	ls, err := parseEndpoints(listeners)
	if err != nil {
		return plan, fmt.Errorf("--listeners: %v", err)
	}
	if len(ls) == 0 {
		return plan, fmt.Errorf("--listeners: no listener given")
	}
	pm, err := parseProtocolMap(protoMap)
	if err != nil {
		return plan, fmt.Errorf("--listener-security-protocol-map: %v", err)
	}
	adv, err := parseEndpoints(advertised)
	if err != nil {
		return plan, fmt.Errorf("--advertised-listeners: %v", err)
	}
	advByName := map[string]endpoint{}
	for _, a := range adv {
		advByName[a.name] = a
	}
	names := map[string]bool{}
	for _, l := range ls {
		names[l.name] = true
		proto, ok := pm[l.name]
		if !ok {
			if !isProtocol(l.name) {
				return plan, fmt.Errorf("listener %s: not a protocol name, and not in --listener-security-protocol-map", l.name)
			}
			proto = l.name
		}
		plan.listen = append(plan.listen, runtime.Listener{Name: l.name, Protocol: proto, Addr: net.JoinHostPort(l.host, l.port)})
		a, ok := advByName[l.name]
		if !ok {
			a = l
		}
		if a.host == "" || a.host == "0.0.0.0" || a.host == "::" {
			return plan, fmt.Errorf("listener %s listens on all interfaces: give the address clients should use in --advertised-listeners", l.name)
		}
		_, port, err := runtime.SplitHostPort(net.JoinHostPort(a.host, a.port))
		if err != nil {
			return plan, fmt.Errorf("--advertised-listeners %s: %v", l.name, err)
		}
		plan.advertise = append(plan.advertise, controller.Endpoint{Name: l.name, Host: a.host, Port: port})
	}
	for _, a := range adv {
		if !names[a.name] {
			return plan, fmt.Errorf("--advertised-listeners names %s, which is not in --listeners", a.name)
		}
	}
	return plan, nil
}
