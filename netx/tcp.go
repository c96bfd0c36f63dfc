package netx

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for TCPConfig's zero fields.
const (
	MaxFrameBytesDefault    = 64 << 20
	QueueMessagesMaxDefault = 4096
	DialTimeoutDefault      = 2 * time.Second
	BackoffMinDefault       = 50 * time.Millisecond
	BackoffMaxDefault       = 2 * time.Second
	WriteTimeoutDefault     = 10 * time.Second
	HandshakeTimeoutDefault = 5 * time.Second
)

// TCPConfig configures a TCP transport. Zero durations and sizes take the
// defaults above.
type TCPConfig struct {
	// Self is this node's id, sent in every handshake. Required, non-zero.
	Self NodeID
	// ListenAddr is where peers connect ("host:port"; port 0 picks one).
	ListenAddr string
	// Peers maps each peer's id to its address. More can be learnt later
	// with SetPeer. An entry for Self is ignored.
	Peers map[NodeID]string
	// MaxFrameBytes caps one message, in both directions: Send drops a
	// larger one, and a peer that sends one is disconnected.
	MaxFrameBytes int
	// QueueMessagesMax bounds each peer's send queue; see Send.
	QueueMessagesMax int
	// DialTimeout bounds one connection attempt.
	DialTimeout time.Duration
	// BackoffMin and BackoffMax bound the wait between connection attempts
	// to a peer: it doubles after each failure and is jittered.
	BackoffMin, BackoffMax time.Duration
	// WriteTimeout bounds one batch write. A peer that stops reading for
	// that long is disconnected, so its queue drains into drops instead of
	// holding a stuck connection forever.
	WriteTimeout time.Duration
	// HandshakeTimeout bounds how long an accepted connection may take to
	// identify itself.
	HandshakeTimeout time.Duration
	// Logger receives connection events. Nil discards them.
	Logger *slog.Logger
	// ServerTLS, when set, makes every accepted connection TLS: the TLS
	// handshake comes before the transport's own, within
	// HandshakeTimeout. Set ClientAuth to RequireAndVerifyClientCert for
	// mutual TLS between brokers.
	ServerTLS *tls.Config
	// ClientTLS, when set, makes every dialled connection TLS with the
	// config it returns for the peer's address; it is called per dial, so
	// reloaded certificates apply to new connections.
	ClientTLS func(addr string) *tls.Config
}

func (c *TCPConfig) fillDefaults() error {
	if c.Self == 0 {
		return errors.New("netx: TCPConfig.Self must be non-zero")
	}
	if c.MaxFrameBytes < 0 || int64(c.MaxFrameBytes) > math.MaxUint32 {
		return fmt.Errorf("netx: MaxFrameBytes %d out of range", c.MaxFrameBytes)
	}
	for id, addr := range c.Peers { //floe:unordered validation only; the first error found is reported
		if id == 0 || addr == "" {
			return fmt.Errorf("netx: bad peer %d at %q", id, addr)
		}
	}
	orDefault(&c.MaxFrameBytes, MaxFrameBytesDefault)
	orDefault(&c.QueueMessagesMax, QueueMessagesMaxDefault)
	orDefault(&c.DialTimeout, DialTimeoutDefault)
	orDefault(&c.BackoffMin, BackoffMinDefault)
	orDefault(&c.BackoffMax, BackoffMaxDefault)
	orDefault(&c.WriteTimeout, WriteTimeoutDefault)
	orDefault(&c.HandshakeTimeout, HandshakeTimeoutDefault)
	c.BackoffMax = max(c.BackoffMax, c.BackoffMin)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

func orDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// TCPStats counts a TCP transport's traffic since it was made. Bytes count
// payload only, not frame headers or handshakes.
type TCPStats struct {
	FramesSent, BytesSent         uint64 // handed to the kernel by a successful flush
	FramesReceived, BytesReceived uint64 // passed to the Handler
	DroppedQueueFull              uint64 // Send found the peer's queue full
	DroppedTooLarge               uint64 // Send got a message above MaxFrameBytes
	DroppedNoPeer                 uint64 // Send to self, an unknown peer, or after Close
	DroppedConnLost               uint64 // in a batch whose write failed
	DialFailures                  uint64 // connection attempts that failed
	Reconnects                    uint64 // connections made to a peer that had one before
	InboundRejected               uint64 // accepted connections closed for a bad handshake or an oversized frame
}

// TCP is the production Transport: one outbound TCP connection per peer, fed
// by a bounded queue and a writer goroutine, and one reader goroutine per
// accepted connection calling the Handler. See wire.go for the format.
//
// TCP is safe for concurrent use. It implements Transport and Resolver.
type TCP struct {
	cfg     TCPConfig
	handler Handler
	log     *slog.Logger
	ln      net.Listener
	// peers is the current peer table, replaced whole (copy on write) under
	// mu so that Send reads it without locking.
	peers atomic.Pointer[map[NodeID]*tcpPeer]

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	// wg counts every goroutine the transport started. Add is called only
	// under mu with closed false, so none starts after Close begins waiting.
	wg sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	inbound map[net.Conn]struct{} // accepted connections, closed by Close

	stats tcpCounters
}

type tcpCounters struct {
	framesSent, bytesSent, framesReceived, bytesReceived atomic.Uint64
	droppedQueueFull, droppedTooLarge, droppedNoPeer     atomic.Uint64
	droppedConnLost, dialFailures, reconnects            atomic.Uint64
	inboundRejected                                      atomic.Uint64
}

// NewTCP validates cfg, starts listening on cfg.ListenAddr and starts
// connecting to cfg.Peers. Inbound messages go to h, called from reader
// goroutines: h must be safe for concurrent use and should return quickly (a
// slow h stalls only the connection it reads, but it does stall it).
func NewTCP(cfg TCPConfig, h Handler) (*TCP, error) {
	if h == nil {
		return nil, errors.New("netx: nil Handler")
	}
	if err := cfg.fillDefaults(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("netx: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &TCP{
		cfg: cfg, handler: h, log: cfg.Logger.With("node", cfg.Self), ln: ln,
		ctx: ctx, cancel: cancel, inbound: make(map[net.Conn]struct{}),
	}
	empty := map[NodeID]*tcpPeer{}
	t.peers.Store(&empty)
	t.mu.Lock()
	t.wg.Add(1)
	go t.acceptLoop()
	for id, addr := range cfg.Peers { //floe:unordered each peer starts independently
		t.setPeerLocked(id, addr)
	}
	t.mu.Unlock()
	return t, nil
}

// Addr returns the address the transport listens on.
func (t *TCP) Addr() string { return t.ln.Addr().String() }

// Send queues msg for peer to and returns at once; see Transport.
//
// When the peer's queue is full, Send drops msg, the newest message, and
// counts it. It cannot block instead: the caller is the reactor, and a
// reactor stalled on one slow peer would stall every Raft group it hosts. It
// does not evict an older message instead, because what is queued then still
// goes out in the order it was sent, and Raft, which retransmits by protocol,
// recovers from a gap at the tail as well as from any other loss.
func (t *TCP) Send(to NodeID, msg []byte) {
	if len(msg) > t.cfg.MaxFrameBytes {
		t.stats.droppedTooLarge.Add(1)
		return
	}
	p := (*t.peers.Load())[to]
	if p == nil {
		t.stats.droppedNoPeer.Add(1)
		return
	}
	select {
	case p.queue <- msg:
	default:
		t.stats.droppedQueueFull.Add(1)
	}
}

// SetPeer learns or updates a peer's address. If the address changed, the
// current connection to the peer is closed and the new address is dialled
// at once; queued messages are kept. Id zero, Self and an empty address are
// ignored, as is any call after Close.
func (t *TCP) SetPeer(id NodeID, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.setPeerLocked(id, addr)
	}
}

func (t *TCP) setPeerLocked(id NodeID, addr string) {
	if id == 0 || id == t.cfg.Self || addr == "" {
		return
	}
	if p := (*t.peers.Load())[id]; p != nil {
		p.setAddr(addr)
		return
	}
	p := newTCPPeer(t.ctx, id, addr, t.cfg.QueueMessagesMax)
	next := maps.Clone(*t.peers.Load())
	next[id] = p
	t.peers.Store(&next)
	t.wg.Add(1)
	go t.runPeer(p)
}

// RemovePeer forgets a peer: its connection is closed and its queued
// messages are dropped (not counted). Unknown ids are ignored.
func (t *TCP) RemovePeer(id NodeID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := (*t.peers.Load())[id]
	if p == nil {
		return
	}
	next := maps.Clone(*t.peers.Load())
	delete(next, id)
	t.peers.Store(&next)
	p.stop()
}

// Close stops listening, closes every connection and waits for every
// goroutine the transport started, including Handler calls in progress, to
// return. Messages still queued are dropped. Calls after the first return
// nil.
func (t *TCP) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	peers := *t.peers.Load()
	empty := map[NodeID]*tcpPeer{}
	t.peers.Store(&empty)
	t.cancel()
	err := t.ln.Close()
	for _, p := range peers { //floe:unordered every peer is stopped alike
		p.stop()
	}
	for c := range t.inbound {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// Stats returns a snapshot of the transport's counters.
func (t *TCP) Stats() TCPStats {
	s := &t.stats
	return TCPStats{
		FramesSent: s.framesSent.Load(), BytesSent: s.bytesSent.Load(),
		FramesReceived: s.framesReceived.Load(), BytesReceived: s.bytesReceived.Load(),
		DroppedQueueFull: s.droppedQueueFull.Load(), DroppedTooLarge: s.droppedTooLarge.Load(),
		DroppedNoPeer: s.droppedNoPeer.Load(), DroppedConnLost: s.droppedConnLost.Load(),
		DialFailures: s.dialFailures.Load(), Reconnects: s.reconnects.Load(),
		InboundRejected: s.inboundRejected.Load(),
	}
}

var (
	_ Transport = (*TCP)(nil)
	_ Resolver  = (*TCP)(nil)
)
