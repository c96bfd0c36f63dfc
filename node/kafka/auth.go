package kafka

// Authentication on a connection: the TLS handshake and the TLS principal
// (SSL listeners), and the SASL exchange (SASL_PLAINTEXT, SASL_SSL):
// SaslHandshake (key 17, v0-1) and SaslAuthenticate (key 36, v0-2),
// answered here by the connection's reader, like ApiVersions, because the
// state they change (who the connection is, until when) belongs to the
// connection. The mechanisms themselves are node/sasl's.
//
// The sequence, as Kafka's SaslServerAuthenticator runs it:
//   - Before authentication only ApiVersions, SaslHandshake and
//     SaslAuthenticate are served; any other request closes the
//     connection, and requests are capped at UnauthenticatedMaxBytes.
//   - SaslHandshake names a mechanism. An unknown one is answered
//     UNSUPPORTED_SASL_MECHANISM with the enabled list, then the
//     connection closes (clients retry with one from the list). With
//     Handshake v0, the exchange's tokens then come as raw size-prefixed
//     frames without request headers (Kafka before 1.0); with v1, in
//     SaslAuthenticate requests.
//   - Each SaslAuthenticate gets an answer, the last one included. A
//     failure is SASL_AUTHENTICATION_FAILED with a message that names no
//     secret, sent after a delay that grows with recent failures from the
//     same address (FailureDelay), then the connection closes. A SASL
//     request out of sequence is ILLEGAL_SASL_STATE, then close.
//   - Success sets the principal and the session's end: ReauthMax after
//     now, or the credential's own expiry (an OAuth token's exp) if
//     sooner; SaslAuthenticate v1+ tells the client (SessionLifetimeMillis,
//     KIP-368). Before the end the client may authenticate again on the
//     same connection, with the same mechanism and as the same principal;
//     after it, any request other than the SASL ones closes the
//     connection.
//   - On a listener without SASL, SaslHandshake and SaslAuthenticate are
//     answered ILLEGAL_SASL_STATE, as Kafka does.

import (
	"context"
	"crypto/tls"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/sasl"
)

const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
	// The served versions: Handshake v1 (tokens in SaslAuthenticate) and
	// v0 (raw tokens); Authenticate v1 adds SessionLifetimeMillis, v2 is
	// flexible.
	saslHandshakeVersionMax    = 1
	saslAuthenticateVersionMax = 2
)

// authState is a connection's authentication, owned by its reader.
type authState struct {
	required      bool // the listener requires SASL
	authenticated bool
	principal     string
	mechanism     string    // of the authenticated session
	expiry        time.Time // the session's end; zero: none
	ex            sasl.Exchange
	raw           bool // Handshake v0: ex's tokens come as raw frames
}

// mayServe reports whether a request other than ApiVersions and the SASL
// ones may be served now, and if not, why the connection closes.
func (a *authState) mayServe(now time.Time) (bool, CloseReason) {
	switch {
	case !a.required:
		return true, ""
	case !a.authenticated:
		return false, ReasonUnauthenticated
	case !a.expiry.IsZero() && !now.Before(a.expiry):
		return false, ReasonSessionExpired
	}
	return true, ""
}

// handshakeTLS runs the TLS handshake and sets the principal of a
// listener without SASL from the client's certificate. It returns false,
// having aborted the connection, when that fails.
func (c *conn) handshakeTLS(tc *tls.Conn) bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.srv.cfg.HandshakeTimeout)
	defer cancel()
	go func() { // Shutdown and Close end a handshake in progress too
		select {
		case <-c.dead:
		case <-c.srv.stopCh:
		case <-ctx.Done():
			return
		}
		cancel()
	}()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.srv.cfg.Logger.Debug("kafka: TLS handshake failed", "conn", c.id, "remote", c.remote, "listener", c.srv.cfg.Listener, "err", err)
		c.abort(ReasonTLSHandshake)
		return false
	}
	if c.auth.required {
		return true
	}
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return true
	}
	principal, err := c.srv.cfg.TLSPrincipal(certs[0])
	if err != nil {
		c.srv.cfg.Logger.Info("kafka: client certificate maps to no principal; closing", "conn", c.id, "remote", c.remote, "listener", c.srv.cfg.Listener, "err", err)
		c.reportAuth("", "TLS", false, "client certificate maps to no principal")
		c.abort(ReasonTLSHandshake)
		return false
	}
	c.setPrincipal(principal)
	c.reportAuth(principal, "TLS", true, "")
	c.srv.cfg.Logger.Debug("kafka: authenticated by client certificate", "conn", c.id, "remote", c.remote,
		"listener", c.srv.cfg.Listener, "principal", principal)
	return true
}

// setPrincipal records the connection's principal in a new ConnInfo
// snapshot.
func (c *conn) setPrincipal(p string) {
	c.auth.principal = p
	if p != c.info.Principal {
		ci := *c.info
		ci.Principal = p
		c.info = &ci
	}
}

// serveHandshake answers SaslHandshake. It returns false when the
// connection must close after the answer.
func (c *conn) serveHandshake(req *kmsg.SASLHandshakeRequest, sl *slot) bool {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	a := &c.auth // a.required: a listener without SASL refuses in handle
	resp.SupportedMechanisms = c.srv.cfg.SASL.Mechanisms()
	switch {
	case a.ex != nil:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		c.logAuth("SaslHandshake during an exchange", req.Mechanism, nil)
		sl.respond(resp)
		return false
	case a.authenticated && req.Mechanism != a.mechanism:
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.logAuth("re-authentication with another mechanism", req.Mechanism, nil)
		sl.respond(resp)
		return false
	}
	ex, err := c.srv.cfg.SASL.Start(req.Mechanism)
	if err != nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.logAuth("unsupported mechanism", "", nil)
		sl.respond(resp)
		return false
	}
	a.ex, a.raw = ex, req.Version == 0
	sl.respond(resp)
	return true
}

// serveAuthenticate answers SaslAuthenticate. It returns false when the
// connection must close after the answer.
func (c *conn) serveAuthenticate(req *kmsg.SASLAuthenticateRequest, sl *slot) bool {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	a := &c.auth
	if !a.required || a.ex == nil || a.raw {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate without a SaslHandshake (v1) before it")
		sl.respond(resp)
		return !a.required // a listener without SASL answers and goes on, as Kafka
	}
	out, ok := c.step(req.SASLAuthBytes)
	if !ok {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(c.failReason)
		sl.respond(resp)
		return false
	}
	resp.SASLAuthBytes = out
	if a.ex == nil && req.Version >= 1 && !a.expiry.IsZero() {
		resp.SessionLifetimeMillis = max(1, time.Until(a.expiry).Milliseconds())
	}
	sl.respond(resp)
	return true
}

// serveRawToken takes one raw SASL token (after Handshake v0) and writes
// the raw answer. A failure closes the connection without an answer, as
// Kafka does: the v0 framing has no way to carry an error.
func (c *conn) serveRawToken(frame []byte, sl *slot) bool {
	out, ok := c.step(frame)
	if !ok {
		sl.respond(nil) // no answer; the connection closes
		return false
	}
	sl.respond(rawToken{b: out})
	return true
}

// step runs one step of the exchange in progress. On success it returns
// the answer's bytes; when the exchange completes it records the session.
// On failure it waits out the failure delay, logs, sets failReason and
// returns false.
func (c *conn) step(msg []byte) ([]byte, bool) {
	a := &c.auth
	now := time.Now()
	out, done, err := a.ex.Step(msg, now)
	mech := a.ex.Mechanism()
	if err == nil && done && a.authenticated && a.ex.Principal() != a.principal {
		err = &sasl.AuthError{Reason: "re-authentication as another principal is not allowed"}
	}
	if err != nil {
		c.fail(mech, err)
		return nil, false
	}
	if !done {
		return out, true
	}
	a.authenticated, a.mechanism, a.raw = true, mech, false
	a.expiry = sessionEnd(now, c.srv.cfg.ReauthMax, a.ex.Expiry())
	c.setPrincipal(a.ex.Principal())
	c.reportAuth(a.principal, mech, true, "")
	a.ex = nil
	if c.srv.cfg.AuthFailures != nil {
		c.srv.cfg.AuthFailures.Succeeded(c.remote)
	}
	c.srv.cfg.Logger.Debug("kafka: authenticated", "conn", c.id, "remote", c.remote, "listener", c.srv.cfg.Listener,
		"mechanism", mech, "principal", c.auth.principal, "session_end", a.expiry)
	return out, true
}

// fail ends the exchange: log (no secret: AuthError texts carry none, and
// other errors are not shown), then hold the answer back.
func (c *conn) fail(mech string, err error) {
	c.auth.ex = nil
	var ae *sasl.AuthError
	reason := "authentication failed"
	if errors.As(err, &ae) {
		reason = ae.Reason
	}
	c.failReason = reason
	c.reportAuth("", mech, false, reason)
	var delay time.Duration
	if c.srv.cfg.AuthFailures != nil {
		delay = c.srv.cfg.AuthFailures.Failed(c.remote, time.Now())
	}
	c.logAuth(reason, mech, &delay)
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.dead:
		case <-c.srv.stopCh:
		}
	}
}

func (c *conn) logAuth(reason, mech string, delay *time.Duration) {
	args := []any{"conn", c.id, "remote", c.remote, "listener", c.srv.cfg.Listener, "reason", reason}
	if mech != "" {
		args = append(args, "mechanism", mech)
	}
	if delay != nil {
		args = append(args, "delay", *delay)
	}
	c.srv.cfg.Logger.Info("kafka: authentication failed; closing", args...)
}

// reportAuth tells Config.OnAuth of an authentication's outcome.
func (c *conn) reportAuth(principal, mech string, ok bool, reason string) {
	if c.srv.cfg.OnAuth != nil {
		c.srv.cfg.OnAuth(c.info, principal, mech, ok, reason)
	}
}

// sessionEnd is when a session authenticated at now ends: reauthMax after
// now, or the credential's expiry if sooner; zero when neither applies.
func sessionEnd(now time.Time, reauthMax time.Duration, credential time.Time) time.Time {
	var end time.Time
	if reauthMax > 0 {
		end = now.Add(reauthMax)
	}
	if !credential.IsZero() && (end.IsZero() || credential.Before(end)) {
		end = credential
	}
	return end
}

// rawToken is the answer to a raw SASL token: written as a size-prefixed
// frame with no response header. It is never encoded through kmsg.
type rawToken struct{ b []byte }

func (rawToken) Key() int16                   { return saslAuthenticateKey }
func (rawToken) MaxVersion() int16            { return -1 }
func (rawToken) SetVersion(int16)             {}
func (rawToken) GetVersion() int16            { return -1 }
func (rawToken) IsFlexible() bool             { return false }
func (t rawToken) AppendTo(dst []byte) []byte { return append(dst, t.b...) }
func (rawToken) ReadFrom([]byte) error        { return nil }
func (rawToken) RequestKind() kmsg.Request    { return nil }
