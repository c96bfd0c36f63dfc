package main

// --command-config FILE: Kafka client properties for the commands that
// talk to a broker, as Kafka's own tools take them (kafka-topics.sh
// --command-config client.properties). Both spellings are read: Java's
// (sasl.mechanism, sasl.jaas.config) and librdkafka's (sasl.mechanisms,
// sasl.username, sasl.password, ssl.ca.location,
// ssl.certificate.location, ssl.key.location). Certificates and keys are
// PEM files; Java key and trust stores (JKS, PKCS12) are not read.

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// commandConfigUsage is the flag's help.
const commandConfigUsage = "Kafka client properties `file` (security.protocol, sasl.mechanism, sasl.username, sasl.password, ssl.ca.location, ssl.certificate.location, ssl.key.location, ...)"

// readProperties reads a Java properties file: "key=value", "key: value"
// or "key value" lines, # and ! comments, a trailing backslash continuing
// a line. Errors name the line, never its value (it may be a password).
func readProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--command-config: %w", err)
	}
	defer f.Close()
	return parseProperties(f, path)
}

func parseProperties(r io.Reader, name string) (map[string]string, error) {
	props := map[string]string{}
	sc := bufio.NewScanner(r)
	var pending string
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimLeft(sc.Text(), " \t")
		if pending == "" && (text == "" || text[0] == '#' || text[0] == '!') {
			continue
		}
		if strings.HasSuffix(text, `\`) && !strings.HasSuffix(text, `\\`) {
			pending += strings.TrimSuffix(text, `\`)
			continue
		}
		text, pending = pending+text, ""
		i := strings.IndexAny(text, "=: \t")
		if i <= 0 {
			return nil, fmt.Errorf("--command-config %s:%d: want key=value", name, line)
		}
		key := text[:i]
		value := strings.TrimLeft(text[i:], " \t")
		if value != "" && (value[0] == '=' || value[0] == ':') {
			value = value[1:]
		}
		props[key] = strings.TrimSpace(value)
	}
	return props, sc.Err()
}

// securityOpts turns client properties into franz-go options.
func securityOpts(props map[string]string) ([]kgo.Opt, error) {
	get := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := props[k]; ok {
				return v
			}
		}
		return ""
	}
	for _, k := range []string{"ssl.truststore.location", "ssl.keystore.location", "ssl.key.password"} {
		if _, ok := props[k]; ok {
			return nil, fmt.Errorf("--command-config: %s is not supported: use PEM files (ssl.ca.location, ssl.certificate.location, ssl.key.location) with an unencrypted key", k)
		}
	}
	proto := strings.ToUpper(get("security.protocol"))
	if proto == "" {
		proto = "PLAINTEXT"
	}
	var opts []kgo.Opt
	switch proto {
	case "PLAINTEXT":
	case "SSL", "SASL_SSL":
		tc, err := clientTLS(get)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	case "SASL_PLAINTEXT":
	default:
		return nil, fmt.Errorf("--command-config: security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", proto)
	}
	if strings.HasPrefix(proto, "SASL_") {
		m, err := saslMechanism(get)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	if id := get("client.id"); id != "" {
		opts = append(opts, kgo.ClientID(id))
	}
	warnUnknownProperties(props)
	return opts, nil
}

func clientTLS(get func(...string) string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := get("ssl.ca.location"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("--command-config: ssl.ca.location: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--command-config: ssl.ca.location %s: no PEM certificate in it", ca)
		}
	}
	cert, key := get("ssl.certificate.location"), get("ssl.key.location")
	if (cert == "") != (key == "") {
		return nil, errors.New("--command-config: ssl.certificate.location and ssl.key.location go together")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("--command-config: client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	switch strings.ToLower(get("ssl.endpoint.identification.algorithm")) {
	case "", "https":
	case "none":
		// The chain is still verified; only the host name check is off.
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error { return verifyChain(cs, tc.RootCAs) }
	default:
		return nil, errors.New("--command-config: ssl.endpoint.identification.algorithm: want https or none")
	}
	return tc, nil
}

func verifyChain(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the broker sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

// jaasField reads key="value" out of a sasl.jaas.config line.
var jaasField = regexp.MustCompile(`(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"`)

func saslMechanism(get func(...string) string) (sasl.Mechanism, error) {
	mech := strings.ToUpper(get("sasl.mechanism", "sasl.mechanisms"))
	user, pass := get("sasl.username"), get("sasl.password")
	if jaas := get("sasl.jaas.config"); jaas != "" {
		for _, m := range jaasField.FindAllStringSubmatch(jaas, -1) {
			v := strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[2])
			switch m[1] {
			case "username":
				user = v
			case "password":
				pass = v
			}
		}
	}
	switch mech {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		if user == "" || pass == "" {
			return nil, fmt.Errorf("--command-config: %s needs sasl.username and sasl.password (or sasl.jaas.config)", mech)
		}
		switch mech {
		case "PLAIN":
			return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
		case "SCRAM-SHA-256":
			return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
		}
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	case "OAUTHBEARER":
		tok := get("sasl.oauthbearer.token")
		if file := get("sasl.oauthbearer.token.file"); file != "" {
			b, err := os.ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("--command-config: sasl.oauthbearer.token.file: %w", err)
			}
			tok = strings.TrimSpace(string(b))
		}
		if tok == "" {
			return nil, errors.New("--command-config: OAUTHBEARER needs sasl.oauthbearer.token or sasl.oauthbearer.token.file (a JWT)")
		}
		return oauth.Auth{Token: tok}.AsMechanism(), nil
	case "":
		return nil, errors.New("--command-config: a SASL security.protocol needs sasl.mechanism")
	}
	return nil, fmt.Errorf("--command-config: sasl.mechanism %q: want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", mech)
}

// knownProperties are read by securityOpts.
var knownProperties = map[string]bool{
	"security.protocol": true, "sasl.mechanism": true, "sasl.mechanisms": true, "sasl.username": true,
	"sasl.password": true, "sasl.jaas.config": true, "sasl.oauthbearer.token": true, "sasl.oauthbearer.token.file": true,
	"ssl.ca.location": true, "ssl.certificate.location": true, "ssl.key.location": true,
	"ssl.endpoint.identification.algorithm": true, "client.id": true,
}

// warnUnknownProperties says which properties are ignored, as Kafka's
// tools do ("was supplied but isn't a known config").
func warnUnknownProperties(props map[string]string) {
	var unknown []string
	for k := range props {
		if !knownProperties[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		fmt.Fprintf(os.Stderr, "floe: --command-config: %s is not used by floe; ignored\n", k)
	}
}

// commandConfigOpts reads path (none when empty) into franz-go options.
func commandConfigOpts(path string) ([]kgo.Opt, error) {
	if path == "" {
		return nil, nil
	}
	props, err := readProperties(path)
	if err != nil {
		return nil, err
	}
	return securityOpts(props)
}

// newKafkaClient opens a franz-go client on comma-separated seed brokers
// with the client properties of commandConfig.
func newKafkaClient(brokers, commandConfig string, opts ...kgo.Opt) (*kgo.Client, error) {
	seeds := splitList(brokers)
	if len(seeds) == 0 {
		return nil, usagef("--brokers: no broker given")
	}
	sec, err := commandConfigOpts(commandConfig)
	if err != nil {
		return nil, err
	}
	all := append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, sec...)
	return kgo.NewClient(append(all, opts...)...)
}
