package sasl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// OAuthConfig says which OAUTHBEARER tokens are accepted: JWTs signed by a
// key of the set Keys returns, naming Issuer and Audience (when set), not
// expired and not before their nbf, each time within ClockSkew.
type OAuthConfig struct {
	// Keys returns the current JSON Web Key Set (the runtime reloads it
	// when its file changes). A token's kid header picks the key; a token
	// without one is tried against every key of the set.
	Keys func() *jose.JSONWebKeySet
	// Issuer, when set, must equal the token's iss claim.
	Issuer string
	// Audience, when set, must be among the token's aud claim.
	Audience string
	// ClockSkew is the leeway on exp, nbf and iat.
	ClockSkew time.Duration
	// PrincipalClaim names the claim holding the user name; default "sub"
	// (Kafka's sasl.oauthbearer.sub.claim.name).
	PrincipalClaim string
	// AllowUnsigned accepts unsigned tokens (alg "none", as librdkafka's
	// sasl.oauthbearer.config makes): anyone can then claim any name. For
	// development only.
	AllowUnsigned bool
}

func (c *OAuthConfig) check() error {
	if c.Keys == nil && !c.AllowUnsigned {
		return errors.New("sasl: OAUTHBEARER needs a key set (a JWKS file), or unsigned tokens allowed for development")
	}
	if c.ClockSkew < 0 {
		return errors.New("sasl: negative clock skew")
	}
	return nil
}

// SignatureAlgorithms are the JWS algorithms accepted; HMAC algorithms are
// left out on purpose (a JWKS of public keys cannot hold their secret).
var SignatureAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// ParseKeySet decodes a JSON Web Key Set, keeping only public signing keys
// it can use; a set with none is an error.
func ParseKeySet(data []byte) (*jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	out := &jose.JSONWebKeySet{}
	for _, k := range set.Keys {
		if !k.Valid() || (k.Use != "" && k.Use != "sig") {
			continue
		}
		out.Keys = append(out.Keys, k.Public())
	}
	if len(out.Keys) == 0 {
		return nil, errors.New("JWKS: no usable public signing key")
	}
	return out, nil
}

// oauthExchange is OAUTHBEARER (RFC 7628) as Kafka speaks it: the client
// sends gs2-header, then kvpairs separated by 0x01 among which
// "auth=Bearer <jwt>". On success the server answers empty bytes; on a bad
// token it answers {"status":"invalid_token"}, the client acknowledges
// with a lone 0x01, and only then does the exchange fail.
type oauthExchange struct {
	cfg       *OAuthConfig
	principal string
	expiry    time.Time
	failed    error // the reason, once the JSON status was sent
	over      bool
}

// oauthMessageBytesMax bounds the client's message (a JWT with headers).
const oauthMessageBytesMax = 64 << 10

func (e *oauthExchange) Mechanism() string { return OAuthBearer }
func (e *oauthExchange) Principal() string { return e.principal }
func (e *oauthExchange) Expiry() time.Time { return e.expiry }

func (e *oauthExchange) Step(msg []byte, now time.Time) ([]byte, bool, error) {
	switch {
	case e.over:
		return nil, false, ErrExchangeOver
	case e.failed != nil:
		e.over = true
		return nil, false, e.failed
	}
	if len(msg) > oauthMessageBytesMax {
		e.over = true
		return nil, false, authFailed("authentication failed: OAUTHBEARER message too long")
	}
	token, authzid, err := parseOAuthMessage(msg)
	if err != nil {
		e.over = true
		return nil, false, err
	}
	name, expiry, err := e.cfg.validate(token, now)
	if err == nil && authzid != "" && authzid != name {
		err = authFailed("authentication failed: the authorization id must be empty or the token's subject")
	}
	if err != nil {
		e.failed = err
		return []byte(`{"status":"invalid_token"}`), false, nil
	}
	e.over = true
	e.principal, e.expiry = UserPrincipal(name), expiry
	return []byte{}, true, nil
}

// parseOAuthMessage extracts the bearer token and the authorization id.
func parseOAuthMessage(msg []byte) (token, authzid string, err error) {
	bad := func(why string) (string, string, error) {
		return "", "", authFailed("authentication failed: malformed OAUTHBEARER message: %s", why)
	}
	gs2, rest, ok := bytes.Cut(msg, []byte{0x01})
	if !ok {
		return bad("no 0x01 separator")
	}
	parts := strings.Split(string(gs2), ",")
	if len(parts) != 3 || parts[0] != "n" || parts[2] != "" {
		return bad("bad GS2 header (channel binding is not supported)")
	}
	if parts[1] != "" {
		z, ok := strings.CutPrefix(parts[1], "a=")
		if !ok {
			return bad("bad authorization id")
		}
		authzid = strings.NewReplacer("=2C", ",", "=3D", "=").Replace(z)
	}
	if !bytes.HasSuffix(rest, []byte{0x01, 0x01}) {
		return bad("not terminated by 0x01 0x01")
	}
	for _, kv := range bytes.Split(rest[:len(rest)-2], []byte{0x01}) {
		k, v, _ := strings.Cut(string(kv), "=")
		if k == "auth" {
			scheme, tok, ok := strings.Cut(v, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
				return bad("auth is not a Bearer token")
			}
			token = strings.TrimSpace(tok)
		}
	}
	if token == "" {
		return bad("no auth=Bearer token")
	}
	return token, authzid, nil
}

// validate checks a token's signature and claims and returns its user name
// and expiry. The errors name what failed, never the token.
func (c *OAuthConfig) validate(token string, now time.Time) (string, time.Time, error) {
	var cl jwt.Claims
	extra := map[string]any{}
	if c.AllowUnsigned && isUnsigned(token) {
		if err := decodeUnsigned(token, &cl, &extra); err != nil {
			return "", time.Time{}, err
		}
	} else {
		if err := c.verify(token, &cl, &extra); err != nil {
			return "", time.Time{}, err
		}
	}
	if err := c.checkClaims(cl, now); err != nil {
		return "", time.Time{}, err
	}
	claim := c.PrincipalClaim
	if claim == "" {
		claim = "sub"
	}
	name, _ := extra[claim].(string)
	if name == "" {
		return "", time.Time{}, authFailed("authentication failed: token has no %q claim", claim)
	}
	return name, cl.Expiry.Time(), nil
}

func (c *OAuthConfig) verify(token string, cl *jwt.Claims, extra *map[string]any) error {
	tok, err := jwt.ParseSigned(token, SignatureAlgorithms)
	if err != nil {
		return authFailed("authentication failed: token is not a signed JWT with an accepted algorithm")
	}
	var set *jose.JSONWebKeySet
	if c.Keys != nil {
		set = c.Keys()
	}
	if set == nil || len(tok.Headers) != 1 {
		return authFailed("authentication failed: token signature cannot be checked")
	}
	keys := set.Keys
	if kid := tok.Headers[0].KeyID; kid != "" {
		keys = set.Key(kid)
		if len(keys) == 0 {
			return authFailed("authentication failed: token is signed with an unknown key id")
		}
	}
	for _, k := range keys {
		if k.Algorithm != "" && k.Algorithm != tok.Headers[0].Algorithm {
			continue
		}
		if tok.Claims(k.Key, cl, extra) == nil {
			return nil
		}
	}
	return authFailed("authentication failed: token signature is invalid")
}

// checkClaims applies issuer, audience and the time claims, with exp
// required.
func (c *OAuthConfig) checkClaims(cl jwt.Claims, now time.Time) error {
	skew := c.ClockSkew
	switch {
	case c.Issuer != "" && cl.Issuer != c.Issuer:
		return authFailed("authentication failed: token issuer is not the expected one")
	case c.Audience != "" && !cl.Audience.Contains(c.Audience):
		return authFailed("authentication failed: token audience does not include the expected one")
	case cl.Expiry == nil:
		return authFailed("authentication failed: token has no exp claim")
	case now.Add(-skew).After(cl.Expiry.Time()):
		return authFailed("authentication failed: token expired")
	case cl.NotBefore != nil && now.Add(skew).Before(cl.NotBefore.Time()):
		return authFailed("authentication failed: token not valid yet (nbf)")
	case cl.IssuedAt != nil && now.Add(skew).Before(cl.IssuedAt.Time()):
		return authFailed("authentication failed: token issued in the future (iat)")
	}
	return nil
}

// isUnsigned reports whether a compact JWT has alg "none" and no
// signature.
func isUnsigned(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[2] != "" {
		return false
	}
	hdr, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return false
	}
	var h struct {
		Alg string `json:"alg"`
	}
	return json.Unmarshal(hdr, &h) == nil && h.Alg == "none"
}

func decodeUnsigned(token string, cl *jwt.Claims, extra *map[string]any) error {
	parts := strings.Split(token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return authFailed("authentication failed: unsigned token payload is not base64url")
	}
	if json.Unmarshal(payload, cl) != nil || json.Unmarshal(payload, extra) != nil {
		return authFailed("authentication failed: unsigned token payload is not a JSON claims set")
	}
	return nil
}
