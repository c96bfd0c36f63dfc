package kafka

import (
	"bytes"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Clients that speak the wrong protocol, or ask for something this
// listener does not offer, are told so, loudly and once, instead of being
// left to retry forever against a socket that just closes:
//
//   - SaslHandshake, when the handler does not serve it (a client
//     configured for SASL_PLAINTEXT): the server advertises v0-1 and
//     answers UNSUPPORTED_SASL_MECHANISM with an empty mechanism list,
//     then closes the connection once the client has closed it or after
//     saslLinger, as Kafka does for a mechanism it does not enable. Clients report a SASL error (librdkafka: "SASL handshake
//     failed: Broker: Unsupported SASL mechanism"; franz-go:
//     UNSUPPORTED_SASL_MECHANISM; kafka-python logs
//     UnsupportedSaslMechanismError at info level, then raises
//     NoBrokersAvailable). Without the advertisement, franz-go and
//     librdkafka would skip the handshake or give up before it.
//   - a first frame whose bytes are another protocol's opening (a TLS
//     ClientHello, an HTTP request, ...): the connection closes, as for
//     any bad frame.
//
// Either way the server logs, at info level, "client is speaking <what>
// on a plaintext listener" (or a sentence of that shape) with the client's
// address: once per client host and kind of mistake, so a client retrying
// in a loop does not flood the log.

// foreignProtocol names the protocol a connection's first bytes belong
// to, as the sentence to log, or "" when they may be Kafka. head holds the
// first 4 bytes (the would-be size prefix) and whatever else had arrived.
// Every pattern here starts with a size prefix no Kafka client sends as
// its first request (hundreds of megabytes, or negative), except the
// PostgreSQL one, which is a whole 8-byte message no Kafka request header
// matches.
func foreignProtocol(head []byte) string {
	if len(head) < 4 {
		return ""
	}
	b0, b1, b2, b3 := head[0], head[1], head[2], head[3]
	switch {
	case b0 == 0x16 && b1 == 0x03 && b2 <= 0x04:
		return "client is speaking TLS on a plaintext listener" // a TLS record: handshake, SSL 3.0 to TLS 1.3
	case b0&0x80 != 0 && b2 == 0x01 && (b3 == 0x00 || b3 == 0x03):
		return "client is speaking TLS on a plaintext listener" // an SSLv2-format ClientHello
	case startsWithAny(head, "GET ", "POST", "PUT ", "HEAD", "DELE", "OPTI", "PATC", "CONN", "TRAC"):
		return "client is speaking HTTP on a Kafka listener"
	case bytes.HasPrefix(head, []byte("PRI ")):
		return "client is speaking HTTP/2 on a Kafka listener"
	case bytes.HasPrefix(head, []byte("PROX")), bytes.HasPrefix(head, []byte("\r\n\r\n")):
		return "client is sending a PROXY protocol header, which this listener does not accept"
	case bytes.HasPrefix(head, []byte("SSH-")):
		return "client is speaking SSH on a Kafka listener"
	case bytes.HasPrefix(head, []byte("AMQP")):
		return "client is speaking AMQP on a Kafka listener"
	case b0 == 0x10 && (bytes.HasPrefix(head[2:], []byte("\x00\x04MQTT")) || bytes.HasPrefix(head[3:], []byte("\x00\x04MQTT"))):
		return "client is speaking MQTT on a Kafka listener"
	case b0 == '*' && b1 >= '0' && b1 <= '9':
		return "client is speaking Redis (RESP) on a Kafka listener"
	case len(head) >= 8 && bytes.Equal(head[:4], []byte{0, 0, 0, 8}) && bytes.HasPrefix(head[4:], []byte{0x04, 0xd2, 0x16}) &&
		(head[7] == 0x2f || head[7] == 0x30): // SSLRequest, GSSENCRequest
		return "client is speaking PostgreSQL on a Kafka listener"
	}
	return ""
}

func startsWithAny(b []byte, prefixes ...string) bool {
	for _, p := range prefixes {
		if bytes.HasPrefix(b, []byte(p)) {
			return true
		}
	}
	return false
}

// checkFirstFrame looks at the first frame's size prefix (and whatever
// arrived with it, without waiting for more) for another protocol.
func (c *conn) checkFirstFrame() error {
	head := c.sizeBuf[:]
	if n := c.br.Buffered(); n > 0 {
		more, _ := c.br.Peek(min(n, 12))
		head = append(append(make([]byte, 0, 16), head...), more...)
	}
	what := foreignProtocol(head)
	if what == "" {
		return nil
	}
	c.srv.noteMistake(c.remote, what)
	return &protocolError{ReasonForeignProtocol, -1, -1, what}
}

// refuseSASL answers a SaslHandshake the handler does not serve.
func (c *conn) refuseSASL(req request, sl *slot) {
	mech := ""
	if hr, ok := req.kreq.(*kmsg.SASLHandshakeRequest); ok {
		mech = hr.Mechanism
	}
	c.srv.noteMistake(c.remote, "client asked for SASL authentication ("+mech+") on a listener without SASL")
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.Version = req.version
	resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
	resp.SupportedMechanisms = []string{}
	sl.respond(resp)
}

// saslLinger is how long a connection whose SaslHandshake was refused
// stays open for the client to read the answer and close first: a client
// may drop an answer that arrives together with the end of the connection
// (kafka-python does). Kafka delays such closes too
// (connection.failed.authentication.delay.ms).
const saslLinger = time.Second

// lingerForClose discards what the client still sends until it closes the
// connection, saslLinger passes, or the server stops; the writer sends
// the pending answer meanwhile.
func (c *conn) lingerForClose() {
	_ = c.nc.SetReadDeadline(time.Now().Add(saslLinger))
	_, _ = io.Copy(io.Discard, c.br)
}

// mistakeLog remembers which (kind, client host) mistakes were logged.
// Invariant: len(seen) <= mistakesRemembered.
type mistakeLog struct {
	mu   sync.Mutex
	seen map[[2]string]bool
}

// mistakesRemembered bounds the memory of logged mistakes; when it is full
// it starts over (a host may then be logged once more).
const mistakesRemembered = 4096

// noteMistake logs a client's protocol mistake at info level the first
// time this host makes it.
func (s *Server) noteMistake(remote, what string) {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	key := [2]string{what, host}
	s.mistakes.mu.Lock()
	if s.mistakes.seen == nil || len(s.mistakes.seen) >= mistakesRemembered {
		s.mistakes.seen = map[[2]string]bool{}
	}
	first := !s.mistakes.seen[key]
	s.mistakes.seen[key] = true
	s.mistakes.mu.Unlock()
	if first {
		s.cfg.Logger.Info(what, "remote", remote)
	}
}
