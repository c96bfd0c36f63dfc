// Package sasl is the server side of Kafka's SASL mechanisms: PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512 (RFC 5802, with Kafka's nonce rule: see
// scram.go) and OAUTHBEARER (RFC 7628, JWTs checked with github.com/go-jose/go-jose/v4
// against a JSON Web Key Set). It also derives the SCRAM credentials Floe
// stores (salt, iterations, StoredKey, ServerKey: never the password, never
// the salted password) and maps TLS certificate subjects to principals with
// Kafka's ssl.principal.mapping.rules.
//
// A Server says which mechanisms are enabled; Start begins one exchange on
// one connection, and Exchange.Step consumes each client message. The
// protocol server (node/kafka) owns the connection state around it: the
// SaslHandshake and SaslAuthenticate framing, which requests are allowed
// before authentication, re-authentication and session expiry.
//
// Core code: no clock (callers pass the time), no global randomness
// (nonces come from Config.Rand: crypto/rand in production, a seeded
// source in the simulator), no I/O (credentials come from Config.Credentials,
// keys from Config.OAuth). Errors returned by Step are safe to show the
// client and to log: they never carry a password, a proof or a token.
package sasl
