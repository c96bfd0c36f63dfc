package main

// floe serve's security flags: TLS, SASL, OAuth, peer mTLS, admin HTTPS,
// bootstrap users and super users (docs/security.md).

import (
	"bufio"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/runtime"
	"github.com/floe-broker/floe/node/sasl"
)

type securityFlags struct {
	tlsCert, tlsKey, tlsClientCA, tlsClientAuth, principalRules *string
	saslMechanisms                                              *string
	reauthMs                                                    *int64
	jwks, issuer, audience, principalClaim                      *string
	clockSkew                                                   *time.Duration
	allowUnsigned                                               *bool
	peerCert, peerKey, peerCA                                   *string
	adminTLS                                                    *bool
	bootstrapUsers, superUsers                                  *string
}

func addSecurityFlags(fs *flag.FlagSet) *securityFlags {
	return &securityFlags{
		tlsCert:        fs.String("tls-cert-file", "", "PEM certificate of SSL and SASL_SSL listeners (and the admin endpoint with --admin-tls); reloaded when it changes"),
		tlsKey:         fs.String("tls-key-file", "", "PEM private key of --tls-cert-file"),
		tlsClientCA:    fs.String("tls-client-ca-file", "", "PEM CA bundle that client certificates must chain to (mTLS)"),
		tlsClientAuth:  fs.String("tls-client-auth", "none", "client certificates on TLS listeners: none, requested or required"),
		principalRules: fs.String("ssl-principal-mapping-rules", "DEFAULT", "Kafka's ssl.principal.mapping.rules: client certificate subject to principal, e.g. 'RULE:^CN=(.*?),OU=.*$/$1/L,DEFAULT'"),
		saslMechanisms: fs.String("sasl-mechanisms", "SCRAM-SHA-512,SCRAM-SHA-256", "mechanisms of SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER"),
		reauthMs:       fs.Int64("connections-max-reauth-ms", 0, "Kafka's connections.max.reauth.ms: an authenticated session lasts at most this long, then the client re-authenticates or is disconnected (0: no limit but a token's expiry)"),
		jwks:           fs.String("oauth-jwks-file", "", "JSON Web Key Set whose keys sign accepted OAUTHBEARER tokens; reloaded when it changes"),
		issuer:         fs.String("oauth-issuer", "", "required iss claim of OAUTHBEARER tokens (empty: not checked)"),
		audience:       fs.String("oauth-audience", "", "required aud claim of OAUTHBEARER tokens (empty: not checked)"),
		principalClaim: fs.String("oauth-principal-claim", "sub", "claim holding the user name of OAUTHBEARER tokens"),
		clockSkew:      fs.Duration("oauth-clock-skew", 30*time.Second, "leeway on tokens' exp, nbf and iat"),
		allowUnsigned:  fs.Bool("oauth-allow-unsigned-tokens", false, "DEVELOPMENT ONLY: accept unsigned OAUTHBEARER tokens (alg none): anyone can be anyone"),
		peerCert:       fs.String("peer-tls-cert-file", "", "PEM certificate for the peer (Raft) transport; with --peer-tls-key-file and --peer-tls-ca-file, brokers talk over mutual TLS"),
		peerKey:        fs.String("peer-tls-key-file", "", "PEM private key of --peer-tls-cert-file"),
		peerCA:         fs.String("peer-tls-ca-file", "", "PEM CA bundle peer certificates must chain to"),
		adminTLS:       fs.Bool("admin-tls", false, "serve the admin endpoint (metrics, health) over HTTPS with --tls-cert-file"),
		bootstrapUsers: fs.String("bootstrap-users", "", "file of first users, one `name password` a line, created once when the cluster is new (never logged)"),
		superUsers:     fs.String("super-users", "", "principals allowed everything by the authorizer, e.g. 'User:admin;User:ops'"),
	}
}

// security builds the runtime's Security.
func (sf *securityFlags) security() (runtime.Security, error) {
	sec := runtime.Security{
		TLS:        runtime.TLSFiles{CertFile: *sf.tlsCert, KeyFile: *sf.tlsKey, CAFile: *sf.tlsClientCA},
		ClientAuth: *sf.tlsClientAuth, PrincipalRules: *sf.principalRules,
		ReauthMax: time.Duration(*sf.reauthMs) * time.Millisecond,
		OAuth: runtime.OAuthOptions{JWKSFile: *sf.jwks, Issuer: *sf.issuer, Audience: *sf.audience,
			ClockSkew: *sf.clockSkew, PrincipalClaim: *sf.principalClaim, AllowUnsigned: *sf.allowUnsigned},
		AdminTLS: *sf.adminTLS,
	}
	if *sf.reauthMs < 0 {
		return sec, errors.New("--connections-max-reauth-ms must not be negative")
	}
	if _, err := runtime.ParseClientAuth(*sf.tlsClientAuth); err != nil {
		return sec, fmt.Errorf("--tls-client-auth: %v", err)
	}
	if _, err := sasl.ParsePrincipalMappingRules(*sf.principalRules); err != nil {
		return sec, fmt.Errorf("--ssl-principal-mapping-rules: %v", err)
	}
	for _, m := range splitList(*sf.saslMechanisms) {
		m = strings.ToUpper(m)
		if !isMechanism(m) {
			return sec, fmt.Errorf("--sasl-mechanisms: %q: want %s", m, strings.Join(sasl.AllMechanisms(), ", "))
		}
		sec.SASLMechanisms = append(sec.SASLMechanisms, m)
	}
	for _, m := range sec.SASLMechanisms {
		if m == sasl.OAuthBearer && *sf.jwks == "" && !*sf.allowUnsigned {
			return sec, errors.New("OAUTHBEARER needs --oauth-jwks-file (or, for development only, --oauth-allow-unsigned-tokens)")
		}
	}
	if *sf.peerCert != "" || *sf.peerKey != "" || *sf.peerCA != "" {
		if *sf.peerCert == "" || *sf.peerKey == "" || *sf.peerCA == "" {
			return sec, errors.New("peer TLS needs --peer-tls-cert-file, --peer-tls-key-file and --peer-tls-ca-file")
		}
		sec.PeerTLS = &runtime.TLSFiles{CertFile: *sf.peerCert, KeyFile: *sf.peerKey, CAFile: *sf.peerCA}
	}
	return sec, nil
}

func isMechanism(m string) bool {
	for _, k := range sasl.AllMechanisms() {
		if m == k {
			return true
		}
	}
	return false
}

// parseSuperUsers parses --super-users: principals separated by ';', each
// Type:name (User:admin).
func parseSuperUsers(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		typ, name, ok := strings.Cut(p, ":")
		if !ok || strings.TrimSpace(typ) == "" || name == "" {
			return nil, fmt.Errorf("--super-users: %q: want Type:name, e.g. User:admin", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// bootstrapIterations is the PBKDF2 iteration count of bootstrap users'
// credentials.
const bootstrapIterations = sasl.DefaultIterations

// readBootstrapUsers reads --bootstrap-users: one "name password" a line
// (the password is the rest of the line after the first run of spaces;
// blank lines and lines starting with # are skipped) and derives both
// SCRAM credentials of each user. Errors name the line, never its text:
// it holds a password.
func readBootstrapUsers(path string) ([]controller.User, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--bootstrap-users: %w", err)
	}
	defer f.Close()
	var users []controller.User
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, pass, ok := strings.Cut(text, " ")
		pass = strings.TrimSpace(pass)
		if i := strings.IndexByte(name, '\t'); i >= 0 { // "name<TAB>password"
			name, pass, ok = name[:i], strings.TrimSpace(text[i+1:]), true
		}
		if !ok || name == "" || pass == "" {
			return nil, fmt.Errorf("--bootstrap-users %s:%d: want `name password`", path, line)
		}
		if seen[name] {
			return nil, fmt.Errorf("--bootstrap-users %s:%d: user %q listed twice", path, line, name)
		}
		seen[name] = true
		u := controller.User{Name: name}
		for _, m := range []int8{controller.MechanismScramSHA256, controller.MechanismScramSHA512} {
			mech := sasl.ScramSHA256
			if m == controller.MechanismScramSHA512 {
				mech = sasl.ScramSHA512
			}
			c, err := sasl.FromPassword(mech, pass, bootstrapIterations, rand.Reader)
			if err != nil {
				return nil, fmt.Errorf("--bootstrap-users %s:%d: %v", path, line, err)
			}
			u.Scram = append(u.Scram, controller.ScramCredential{Mechanism: m, Salt: c.Salt,
				Iterations: int32(c.Iterations), StoredKey: c.StoredKey, ServerKey: c.ServerKey})
		}
		users = append(users, u)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--bootstrap-users: %w", err)
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("--bootstrap-users %s: no user in it", path)
	}
	return users, nil
}
