package netx

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

const (
	// writeBufferBytes is the bufio buffer a writer batches frames into.
	writeBufferBytes = 64 << 10
	// batchBytesMax ends a batch and flushes even if the queue is not empty,
	// so one busy peer's bytes reach the wire steadily.
	batchBytesMax = 1 << 20
)

// tcpPeer is one peer's outbound side: a queue and the writer goroutine
// (runPeer) that drains it into a connection.
type tcpPeer struct {
	id NodeID
	// queue holds messages Send accepted and the writer has not taken. It
	// is never closed, so a Send racing with RemovePeer cannot panic; the
	// messages of a removed peer are garbage collected with it.
	queue  chan []byte
	ctx    context.Context // cancelled when the peer is removed or the transport closes
	cancel context.CancelFunc
	// redial wakes the writer from its backoff when the address changes.
	redial chan struct{}

	mu   sync.Mutex
	addr string
	conn net.Conn // the current connection, nil between connections
}

func newTCPPeer(parent context.Context, id NodeID, addr string, queueMax int) *tcpPeer {
	ctx, cancel := context.WithCancel(parent)
	return &tcpPeer{
		id: id, addr: addr, ctx: ctx, cancel: cancel,
		queue: make(chan []byte, queueMax), redial: make(chan struct{}, 1),
	}
}

// setAddr changes the address and drops the connection to the old one.
func (p *tcpPeer) setAddr(addr string) {
	p.mu.Lock()
	if addr == p.addr {
		p.mu.Unlock()
		return
	}
	p.addr = addr
	if p.conn != nil {
		p.conn.Close()
	}
	p.mu.Unlock()
	select {
	case p.redial <- struct{}{}:
	default:
	}
}

// stop ends the peer's writer. It cancels first, then closes the connection
// under mu; attach checks the context under mu, so a connection made
// concurrently is closed by one side or the other.
func (p *tcpPeer) stop() {
	p.cancel()
	p.mu.Lock()
	if p.conn != nil {
		p.conn.Close()
	}
	p.mu.Unlock()
}

// attach records conn as current, unless the peer is stopping.
func (p *tcpPeer) attach(conn net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx.Err() != nil {
		return false
	}
	p.conn = conn
	return true
}

func (p *tcpPeer) detach() {
	p.mu.Lock()
	p.conn = nil
	p.mu.Unlock()
}

func (p *tcpPeer) currentAddr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

// runPeer is the peer's writer goroutine: connect, pump the queue until the
// connection fails, back off, repeat, until the peer is stopped.
func (t *TCP) runPeer(p *tcpPeer) {
	defer t.wg.Done()
	// Jitter only spreads reconnection storms; it need not be reproducible.
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(p.id)))
	backoff := t.cfg.BackoffMin
	connectedBefore := false
	for p.ctx.Err() == nil {
		conn, err := t.dial(p)
		if err != nil {
			if p.ctx.Err() == nil {
				t.stats.dialFailures.Add(1)
				t.log.Debug("netx: dial failed", "peer", p.id, "err", err)
			}
		} else {
			if connectedBefore {
				t.stats.reconnects.Add(1)
			}
			connectedBefore = true
			t.log.Debug("netx: connected", "peer", p.id, "addr", conn.RemoteAddr())
			if t.pump(p, conn) {
				backoff = t.cfg.BackoffMin
			}
		}
		if !p.sleep(jitter(rng, backoff)) {
			return
		}
		backoff = min(2*backoff, t.cfg.BackoffMax)
	}
}

// jitter returns a duration uniform in [d/2, d]: "equal jitter", so peers
// that lost a connection together do not redial together.
func jitter(rng *rand.Rand, d time.Duration) time.Duration {
	half := d / 2
	return half + time.Duration(rng.Int64N(int64(d-half)+1))
}

// sleep waits d, or less if the address changes; false if the peer stopped.
func (p *tcpPeer) sleep(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-p.redial:
	case <-p.ctx.Done():
		return false
	}
	return p.ctx.Err() == nil
}

// dial connects to the peer, sends the handshake and attaches the connection.
func (t *TCP) dial(p *tcpPeer) (net.Conn, error) {
	d := net.Dialer{Timeout: t.cfg.DialTimeout}
	addr := p.currentAddr()
	conn, err := d.DialContext(p.ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if t.cfg.ClientTLS != nil {
		tc := tls.Client(conn, t.cfg.ClientTLS(addr))
		ctx, cancel := context.WithTimeout(p.ctx, t.cfg.DialTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			conn.Close()
			return nil, err
		}
		conn = tc
	}
	conn.SetWriteDeadline(time.Now().Add(t.cfg.WriteTimeout))
	if _, err := conn.Write(appendHandshake(nil, t.cfg.Self, p.id)); err != nil {
		conn.Close()
		return nil, err
	}
	if !p.attach(conn) {
		conn.Close()
		return nil, context.Canceled
	}
	return conn, nil
}

// pump writes the peer's queue to conn until the connection fails, the peer
// closes it, or the peer is stopped; it closes conn before returning. It
// reports whether the connection proved healthy (a batch went out, or it
// lasted BackoffMax), which resets the backoff.
func (t *TCP) pump(p *tcpPeer, conn net.Conn) (healthy bool) {
	// The acceptor never writes, so a read returns only when the connection
	// ends: this is how an idle writer learns its peer went away.
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		io.Copy(io.Discard, conn)
	}()
	defer func() {
		conn.Close()
		<-gone
		p.detach()
	}()
	start := time.Now()
	w := bufio.NewWriterSize(conn, writeBufferBytes)
	for {
		select {
		case <-p.ctx.Done():
			return false
		case <-gone:
			return healthy || time.Since(start) >= t.cfg.BackoffMax
		case msg := <-p.queue:
			if err := t.writeBatch(p, conn, w, msg); err != nil {
				t.log.Info("netx: connection lost", "peer", p.id, "err", err)
				return healthy || time.Since(start) >= t.cfg.BackoffMax
			}
			healthy = true
		}
	}
}

// writeBatch writes msg and then whatever else is queued, up to
// batchBytesMax, and flushes: many frames per write system call under load,
// no added latency when idle. If the write fails, every frame of the batch
// counts as lost: some may have reached the peer, but none can be known to.
func (t *TCP) writeBatch(p *tcpPeer, conn net.Conn, w *bufio.Writer, msg []byte) error {
	conn.SetWriteDeadline(time.Now().Add(t.cfg.WriteTimeout))
	frames, bytes := uint64(0), 0
	for {
		if err := writeFrame(w, msg); err != nil {
			t.stats.droppedConnLost.Add(frames + 1)
			return err
		}
		frames++
		bytes += len(msg)
		if bytes >= batchBytesMax {
			break
		}
		var ok bool
		select {
		case msg, ok = <-p.queue:
		default:
		}
		if !ok {
			break
		}
	}
	if err := w.Flush(); err != nil {
		t.stats.droppedConnLost.Add(frames)
		return err
	}
	t.stats.framesSent.Add(frames)
	t.stats.bytesSent.Add(uint64(bytes))
	return nil
}
