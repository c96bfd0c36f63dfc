package kafka

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Handler implements the Kafka APIs behind the server (the node, which
// posts each request to its reactor). The server answers ApiVersions
// itself and calls Serve for every other request that passed the version
// check and decoded.
//
// Contract:
//   - Serve is called from the connection's reader goroutine, one request at
//     a time, in arrival order. It must not block for long: the next request
//     on that connection waits for it to return.
//   - Serve, or anything it hands the request to, must call respond exactly
//     once, from any goroutine, at any later time. A second call is ignored
//     and logged.
//   - respond(nil) means the request gets no response (Produce with
//     acks=0); later responses on the connection still go out in order.
//   - respond(CloseConnection) writes every earlier response, then closes
//     the connection (Kafka does this when an acks=0 produce fails, so the
//     client refreshes its metadata).
//   - Otherwise the response must be of the request's kind and version:
//     req.ResponseKind() returns one. A mismatch is a handler bug: the
//     server logs it and closes the connection. The server only reads the
//     response (it may be shared between connections), after respond
//     returns: do not modify it afterwards.
//   - Responses are written in request order per connection, whatever the
//     order of respond calls. At most Config.MaxInFlightPerConn requests of
//     a connection are unanswered at once: the server stops reading from it
//     until responses are written.
//   - The request's []byte fields (Produce records) alias the frame read
//     from the socket; the server never reuses that memory, so the handler
//     may keep them.
//   - c is read-only and never changes after the call; a later request on
//     the same connection may carry a different *ConnInfo.
type Handler interface {
	Serve(c *ConnInfo, req kmsg.Request, respond func(kmsg.Response))
}

// ReadTimedHandler is a Handler that also wants to know when a request's
// bytes began to arrive: readAt is the moment its 4-byte size prefix was
// read (the rest of the frame is read and decoded after it). The server
// calls ServeRead instead of Serve when the handler implements it; the
// contract is Serve's. The runtime uses it for the produce stage
// histograms (the socket read stage).
type ReadTimedHandler interface {
	Handler
	ServeRead(c *ConnInfo, req kmsg.Request, respond func(kmsg.Response), readAt time.Time)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(c *ConnInfo, req kmsg.Request, respond func(kmsg.Response))

// Serve calls f.
func (f HandlerFunc) Serve(c *ConnInfo, req kmsg.Request, respond func(kmsg.Response)) {
	f(c, req, respond)
}

// ConnInfo describes the connection a request came on. It is immutable:
// when the client ID or software changes, the server makes a new one.
type ConnInfo struct {
	ID       uint64 // unique per server, from 1; stable for the connection
	Remote   string // the client's address
	Local    string // the server's address the client connected to
	ClientID string // from the request header; "" when null
	// ClientSoftwareName and ClientSoftwareVersion come from ApiVersions
	// v3+ (KIP-511), once the client sent valid ones; "" before.
	ClientSoftwareName    string
	ClientSoftwareVersion string
	// Listener is the name of the listener the connection came in on.
	Listener string
	// Principal is who the connection authenticated as ("User:alice"):
	// through SASL, or a TLS client certificate on a listener without
	// SASL; "User:ANONYMOUS" when neither.
	Principal string
}

// WrittenNotifier is a response that wants to hear when it left. The
// server calls Written once, from the connection's writer goroutine: with
// nil after the bytes were flushed to the socket, or with the error that
// closed the connection before they were. A handler that does not care
// passes plain responses; the runtime's tracer wraps them (to time the
// response write). The server encodes the wrapped response through the
// interface's methods, so a wrapper must delegate them.
type WrittenNotifier interface {
	kmsg.Response
	Written(err error)
}

// ErrConnClosed is what WrittenNotifier.Written hears when the connection
// closed before the response was written.
var ErrConnClosed = errors.New("kafka: connection closed before the response was written")

// CloseConnection, passed to respond, closes the connection after every
// earlier response is written. No response is written for the request.
var CloseConnection kmsg.Response = closeConnection{}

// closeConnection is a marker; the server never encodes it.
type closeConnection struct{}

func (closeConnection) Key() int16                 { return -1 }
func (closeConnection) MaxVersion() int16          { return -1 }
func (closeConnection) SetVersion(int16)           {}
func (closeConnection) GetVersion() int16          { return -1 }
func (closeConnection) IsFlexible() bool           { return false }
func (closeConnection) AppendTo(dst []byte) []byte { return dst }
func (closeConnection) ReadFrom([]byte) error      { return nil }
func (closeConnection) RequestKind() kmsg.Request  { return nil }
