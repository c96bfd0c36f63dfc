package netx

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"time"
)

// readBufferBytes is the bufio buffer each reader decodes frames from.
const readBufferBytes = 64 << 10

// acceptLoop accepts inbound connections until the listener closes.
func (t *TCP) acceptLoop() {
	defer t.wg.Done()
	for {
		conn, err := t.ln.Accept()
		if err != nil {
			if t.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: pause rather than spin.
			t.log.Warn("netx: accept failed", "err", err)
			select {
			case <-time.After(t.cfg.BackoffMin):
			case <-t.ctx.Done():
				return
			}
			continue
		}
		if !t.track(conn) {
			conn.Close()
			return
		}
		go t.serveInbound(conn)
	}
}

// track registers an accepted connection and counts its reader in wg, unless
// the transport is closing.
func (t *TCP) track(conn net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.inbound[conn] = struct{}{}
	t.wg.Add(1)
	return true
}

func (t *TCP) untrack(conn net.Conn) {
	t.mu.Lock()
	delete(t.inbound, conn)
	t.mu.Unlock()
	conn.Close()
}

// serveInbound reads one accepted connection: the handshake, then frames,
// each passed to the Handler. Anything malformed closes this connection
// only; it is logged and counted, and the transport keeps serving the rest.
func (t *TCP) serveInbound(conn net.Conn) {
	defer t.wg.Done()
	defer t.untrack(conn)
	var rd io.Reader = conn
	conn.SetReadDeadline(time.Now().Add(t.cfg.HandshakeTimeout))
	if t.cfg.ServerTLS != nil {
		tc := tls.Server(conn, t.cfg.ServerTLS)
		conn.SetWriteDeadline(time.Now().Add(t.cfg.HandshakeTimeout))
		if err := tc.Handshake(); err != nil {
			t.stats.inboundRejected.Add(1)
			t.log.Warn("netx: refused connection: TLS handshake", "remote", conn.RemoteAddr(), "err", err)
			return
		}
		conn.SetWriteDeadline(time.Time{})
		rd = tc
	}
	r := bufio.NewReaderSize(rd, readBufferBytes)
	from, err := readHandshake(r, t.cfg.Self)
	if err != nil {
		t.stats.inboundRejected.Add(1)
		t.log.Warn("netx: refused connection", "remote", conn.RemoteAddr(), "err", err)
		return
	}
	conn.SetReadDeadline(time.Time{})
	for {
		msg, err := readFrame(r, t.cfg.MaxFrameBytes)
		if err != nil {
			t.endInbound(conn, from, err)
			return
		}
		t.stats.framesReceived.Add(1)
		t.stats.bytesReceived.Add(uint64(len(msg)))
		t.handler(from, msg)
	}
}

func (t *TCP) endInbound(conn net.Conn, from NodeID, err error) {
	switch {
	case errors.Is(err, errFrameTooLarge):
		t.stats.inboundRejected.Add(1)
		t.log.Warn("netx: closing connection", "peer", from, "remote", conn.RemoteAddr(), "err", err)
	case err == io.EOF || errors.Is(err, net.ErrClosed) || t.ctx.Err() != nil:
		t.log.Debug("netx: connection closed", "peer", from)
	default:
		t.log.Info("netx: connection lost", "peer", from, "err", err)
	}
}
