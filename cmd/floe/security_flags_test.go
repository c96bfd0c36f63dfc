package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/sasl"
)

func TestPlanListeners(t *testing.T) {
	p, err := planListeners("SASL_SSL://0.0.0.0:9093,internal://10.0.0.5:9094,PLAINTEXT://127.0.0.1:9092",
		"INTERNAL:SASL_PLAINTEXT", "SASL_SSL://pub.example:19093")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"SASL_SSL SASL_SSL 0.0.0.0:9093", "INTERNAL SASL_PLAINTEXT 10.0.0.5:9094", "PLAINTEXT PLAINTEXT 127.0.0.1:9092"}
	for i, l := range p.listen {
		if got := l.Name + " " + l.Protocol + " " + l.Addr; got != want[i] {
			t.Fatalf("listener %d: %s, want %s", i, got, want[i])
		}
	}
	wantAdv := []controller.Endpoint{{Name: "SASL_SSL", Host: "pub.example", Port: 19093},
		{Name: "INTERNAL", Host: "10.0.0.5", Port: 9094}, {Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}
	for i, e := range p.advertise {
		if e != wantAdv[i] {
			t.Fatalf("advertised %d: %+v, want %+v", i, e, wantAdv[i])
		}
	}
	for _, bad := range [][3]string{
		{"", "", ""},
		{"PLAINTEXT://h", "", ""},                   // no port
		{"OTHER://h:1", "", ""},                     // name is no protocol, not mapped
		{"PLAINTEXT://0.0.0.0:1", "", ""},           // wildcard advertised
		{"PLAINTEXT://h:1,PLAINTEXT://h:2", "", ""}, // twice
		{"PLAINTEXT://h:1", "X:TLS", ""},            // bad protocol
		{"PLAINTEXT://h:1", "", "SSL://h:2"},        // advertised but not a listener
		{"PLAINTEXT://h:99999", "", ""},             // port range
		{"PLAINTEXT//h:1", "", ""},                  // no ://
	} {
		if _, err := planListeners(bad[0], bad[1], bad[2]); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
	// --kafka-addr and --listeners together are refused.
	if _, err := serveListeners("PLAINTEXT://h:1", "", "", "127.0.0.1:9999", ""); err == nil {
		t.Fatal("--listeners with --kafka-addr accepted")
	}
	p, err = serveListeners("", "", "", "0.0.0.0:9092", "b1:9092")
	if err != nil || p.listen[0].Protocol != "PLAINTEXT" || p.advertise[0].Host != "b1" {
		t.Fatalf("shorthand: %+v %v", p, err)
	}
}

func TestParseProperties(t *testing.T) {
	in := `# comment
! also a comment
security.protocol = SASL_SSL
sasl.mechanism:SCRAM-SHA-512
sasl.username alice
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="bob" password="p=w \"q\"";
`
	props, err := parseProperties(strings.NewReader(in), "x")
	if err != nil {
		t.Fatal(err)
	}
	if props["security.protocol"] != "SASL_SSL" || props["sasl.mechanism"] != "SCRAM-SHA-512" || props["sasl.username"] != "alice" {
		t.Fatalf("%q", props)
	}
	m, err := saslMechanism(func(keys ...string) string {
		for _, k := range keys {
			if v, ok := props[k]; ok {
				return v
			}
		}
		return ""
	})
	if err != nil || m.Name() != "SCRAM-SHA-512" {
		t.Fatalf("mechanism %v %v", m, err)
	}
	for name, text := range map[string]string{
		"JKS":             "security.protocol=SSL\nssl.truststore.location=/x.jks\n",
		"no mechanism":    "security.protocol=SASL_PLAINTEXT\n",
		"no password":     "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=a\n",
		"bad protocol":    "security.protocol=TLS\n",
		"bad mechanism":   "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n",
		"no token":        "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n",
		"missing CA file": "security.protocol=SSL\nssl.ca.location=/nonexistent/ca.pem\n",
	} {
		props, err := parseProperties(strings.NewReader(text), "x")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := securityOpts(props); err == nil {
			t.Fatalf("%s: accepted", name)
		}
	}
	if _, err := parseProperties(strings.NewReader("=novalue\n"), "x"); err == nil {
		t.Fatal("a line without a key parsed")
	}
}

func TestReadBootstrapUsers(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "users")
	os.WriteFile(good, []byte("# users\nadmin s3cret\n\nalice  two words\n"), 0o600)
	users, err := readBootstrapUsers(good)
	if err != nil || len(users) != 2 {
		t.Fatalf("%v %v", users, err)
	}
	for _, u := range users {
		if len(u.Scram) != 2 {
			t.Fatalf("%s: %d credentials", u.Name, len(u.Scram))
		}
	}
	c := users[1].Scram[1]
	sc := sasl.ScramCredential{Salt: c.Salt, Iterations: int(c.Iterations), StoredKey: c.StoredKey, ServerKey: c.ServerKey}
	if users[1].Name != "alice" || !sc.Verify(sasl.ScramSHA512, []byte("two words")) {
		t.Fatal("alice's password is not `two words`")
	}
	for name, text := range map[string]string{
		"no password": "admin\n", "twice": "a p1\na hunter2\n", "empty": "# nothing\n",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o600)
		_, err := readBootstrapUsers(p)
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "p1") {
			t.Fatalf("%s: the error shows a password: %v", name, err)
		}
	}
}

func TestParseSuperUsers(t *testing.T) {
	got, err := parseSuperUsers(" User:admin; User:ops ;")
	if err != nil || strings.Join(got, ",") != "User:admin,User:ops" {
		t.Fatalf("%q %v", got, err)
	}
	for _, bad := range []string{"admin", ":x", "User:"} {
		if _, err := parseSuperUsers(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}
