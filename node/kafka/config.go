package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/floe-broker/floe/node/sasl"
)

// Config configures a Server. The zero value of every field means its
// default.
type Config struct {
	// Addr is the TCP address to listen on; default DefaultAddr. Use
	// "127.0.0.1:0" for a free port and read Server.Addr.
	Addr string
	// MaxRequestBytes caps a request's size prefix (Kafka's
	// socket.request.max.bytes); a larger, negative or too-small prefix
	// closes the connection before anything is allocated for it. Default
	// 100 MiB.
	MaxRequestBytes int32
	// MaxInFlightPerConn is how many requests of one connection may await
	// their response; at the limit the server stops reading from that
	// connection (backpressure through TCP). Default 128.
	MaxInFlightPerConn int
	// Versions lists the APIs the handler implements, at the versions it
	// serves; nil: none. The server advertises them and its own
	// (ServerAPIs), and checks every request against that table before
	// decoding it.
	Versions []ApiRange
	// IdleTimeout closes a connection that sends nothing and awaits no
	// response for this long (Kafka's connections.max.idle.ms), and one
	// whose client stops reading responses for this long. Default 10
	// minutes; negative disables it.
	IdleTimeout time.Duration
	// Logger receives protocol errors (debug), clients speaking another
	// protocol or asking for SASL (info, once per client host: probe.go),
	// handler contract violations (warn) and recovered panics (error).
	// Default: discard.
	Logger *slog.Logger
	// Observer receives metrics events; default none.
	Observer Observer
	// AdmitConn, when set, is asked about every accepted connection before
	// anything is read from it (KIP-612's connection_creation_rate). A
	// positive answer refuses the connection: the server holds it, unread,
	// for that long and then closes it, as Kafka delays closing a
	// throttled connection so that its client does not reconnect at once.
	// It is called on the accept goroutine and must answer promptly.
	AdmitConn func(remote net.Addr) time.Duration

	// OnAuth, when set, is told of every authentication on the listener,
	// successful or not (SASL exchanges, and client certificates on SSL
	// listeners, mechanism "TLS"), for the audit log. It is called from
	// connection goroutines and must not block; reason never holds a
	// secret.
	OnAuth func(c *ConnInfo, principal, mechanism string, ok bool, reason string)

	// Listener is the listener's name (PLAINTEXT, SASL_SSL, or any name
	// mapped to a protocol); it is ConnInfo.Listener.
	Listener string
	// TLS, when set, makes every connection TLS (the SSL and SASL_SSL
	// protocols): the handshake comes first, within HandshakeTimeout. Its
	// ClientAuth says whether client certificates are asked for (mTLS).
	TLS *tls.Config
	// TLSPrincipal maps a verified client certificate to the principal of
	// a connection that does not authenticate with SASL (the SSL
	// protocol); an error closes the connection. Default: "User:" and the
	// subject's distinguished name.
	TLSPrincipal func(*x509.Certificate) (string, error)
	// SASL, when set, requires authentication (SASL_PLAINTEXT,
	// SASL_SSL): before it, only ApiVersions, SaslHandshake and
	// SaslAuthenticate are served, and any other request closes the
	// connection; so does a request after the session expired.
	SASL *sasl.Server
	// ReauthMax is Kafka's connections.max.reauth.ms: an authenticated
	// session lasts at most this long, then the client must
	// re-authenticate (KIP-368) or its connection closes. 0: sessions end
	// only when their credential does (an OAuth token's exp).
	ReauthMax time.Duration
	// AuthFailures delays the answer to a failed authentication, more for
	// each recent failure from the same address; share one between
	// listeners. Nil: no delay.
	AuthFailures *FailureDelay
	// UnauthenticatedMaxBytes caps a request's size before the connection
	// authenticated (Kafka's sasl.server.max.receive.size). Default 512
	// KiB.
	UnauthenticatedMaxBytes int32
	// HandshakeTimeout bounds the TLS handshake. Default 10 s.
	HandshakeTimeout time.Duration
	// ConnIDs, when set, numbers connections; share one between the
	// servers of one broker so ConnInfo.ID is unique across listeners.
	ConnIDs *atomic.Uint64
}

// Defaults.
const (
	DefaultAddr               = "127.0.0.1:9092"
	DefaultMaxRequestBytes    = 100 << 20
	DefaultMaxInFlightPerConn = 128
	DefaultIdleTimeout        = 10 * time.Minute
	DefaultUnauthenticatedMax = 512 << 10
	DefaultHandshakeTimeout   = 10 * time.Second
)

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxInFlightPerConn <= 0 {
		c.MaxInFlightPerConn = DefaultMaxInFlightPerConn
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.UnauthenticatedMaxBytes <= 0 {
		c.UnauthenticatedMaxBytes = DefaultUnauthenticatedMax
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.TLSPrincipal == nil {
		c.TLSPrincipal = func(cert *x509.Certificate) (string, error) {
			return sasl.UserPrincipal(sasl.DistinguishedName(cert)), nil
		}
	}
	if c.ConnIDs == nil {
		c.ConnIDs = new(atomic.Uint64)
	}
	return c
}

// Observer receives the server's metrics events. Methods are called from
// connection goroutines, concurrently: implementations must be safe for
// that and fast (update counters, nothing more).
type Observer interface {
	// ObserveRequest is called once per request read in full. apiKey and
	// version are -1 when the request was not understood (an unknown key
	// or unsupported version: such values are unbounded, keep them out of
	// metric labels). bytesIn counts the size prefix; bytesOut is 0 when
	// nothing was written. latency runs from the request read to its
	// response handed to the socket. err is true when the request got no
	// proper answer: it did not decode, or its connection closed first.
	ObserveRequest(apiKey, version int16, bytesIn, bytesOut int, latency time.Duration, err bool)
	// ObserveConnOpen is called when a connection is accepted.
	ObserveConnOpen()
	// ObserveConnClose is called once per opened connection, when it is
	// closed, with why.
	ObserveConnClose(reason CloseReason)
}

// CloseReason says why a connection closed; values are fit for a metric
// label.
type CloseReason string

const (
	ReasonClientClosed       CloseReason = "client_closed"       // EOF or reset at a frame boundary
	ReasonIdle               CloseReason = "idle"                // IdleTimeout passed
	ReasonShutdown           CloseReason = "shutdown"            // Shutdown: drained, then closed
	ReasonServerClosed       CloseReason = "server_closed"       // Close
	ReasonBadFrame           CloseReason = "bad_frame"           // size prefix out of range, or frame cut short
	ReasonBadRequest         CloseReason = "bad_request"         // header or body did not decode
	ReasonUnsupportedAPI     CloseReason = "unsupported_api"     // key unknown or not advertised
	ReasonUnsupportedVersion CloseReason = "unsupported_version" // version outside the advertised range
	ReasonForeignProtocol    CloseReason = "foreign_protocol"    // the first bytes are another protocol's (TLS, HTTP, ...)
	ReasonUnsupportedSASL    CloseReason = "unsupported_sasl"    // SaslHandshake on a listener without SASL, answered
	ReasonHandler            CloseReason = "handler"             // the handler responded CloseConnection
	ReasonHandlerBug         CloseReason = "handler_bug"         // response of the wrong kind or version
	ReasonWriteError         CloseReason = "write_error"         // writing failed or timed out
	ReasonPanic              CloseReason = "panic"               // recovered panic in the connection
	ReasonTLSHandshake       CloseReason = "tls_handshake"       // the TLS handshake failed or timed out
	ReasonUnauthenticated    CloseReason = "unauthenticated"     // a request other than ApiVersions and SASL before authentication
	ReasonSessionExpired     CloseReason = "session_expired"     // a request after the authenticated session expired
	ReasonAuthFailed         CloseReason = "auth_failed"         // SASL authentication failed, or a SASL request out of sequence
)

type nopObserver struct{}

func (nopObserver) ObserveRequest(int16, int16, int, int, time.Duration, bool) {}
func (nopObserver) ObserveConnOpen()                                           {}
func (nopObserver) ObserveConnClose(CloseReason)                               {}
