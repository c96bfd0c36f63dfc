package kafka

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("kafka: server closed")

// Server is a Kafka protocol server: it accepts connections, reads framed
// requests, checks their versions, decodes them, hands them to a Handler,
// and writes the responses back in request order.
type Server struct {
	cfg   Config
	h     Handler
	table *versionTable

	stopping atomic.Bool   // set by Shutdown and Close: read no new requests
	stopCh   chan struct{} // closed when stopping is set
	conns    sync.WaitGroup

	mu sync.Mutex
	// ln is set by Listen. Invariant: once stopping is set, no connection is
	// added to live.
	ln       net.Listener
	live     map[*conn]struct{}
	held     map[net.Conn]*time.Timer // refused by AdmitConn, closed when their timer fires or the server stops
	stopOnce sync.Once

	mistakes mistakeLog // protocol mistakes already logged (probe.go)
}

// NewServer makes a server for h. Ranges in cfg.Versions that cannot be
// served are dropped or clamped, with a warning logged for each.
func NewServer(cfg Config, h Handler) *Server {
	cfg = cfg.withDefaults()
	t, problems := newVersionTable(cfg.Versions)
	for _, p := range problems {
		cfg.Logger.Warn("kafka: advertised versions", "problem", p)
	}
	return &Server{cfg: cfg, h: h, table: t, stopCh: make(chan struct{}), live: map[*conn]struct{}{},
		held: map[net.Conn]*time.Timer{}}
}

// Listen binds cfg.Addr. Serve calls it if it was not called.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil || s.stopping.Load() {
		ln.Close()
		return errors.New("kafka: Listen called twice, or after Shutdown")
	}
	s.ln = ln
	return nil
}

// Addr is the bound address, or nil before Listen.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Serve accepts connections until Shutdown or Close, then returns
// ErrServerClosed; any other error is the listener's.
func (s *Server) Serve() error {
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if s.stopping.Load() {
		return ErrServerClosed
	}
	if ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
		return s.Serve()
	}
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.stopping.Load() {
				return ErrServerClosed
			}
			if !temporary(err) {
				return err
			}
			// Out of file descriptors and the like: wait, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.cfg.Logger.Warn("kafka: accept", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if s.cfg.AdmitConn != nil {
			if d := s.cfg.AdmitConn(nc.RemoteAddr()); d > 0 {
				s.hold(nc, d)
				continue
			}
		}
		s.startConn(nc)
	}
}

// hold keeps a refused connection open, unread, for d, then closes it;
// the server's stop closes it at once.
func (s *Server) hold(nc net.Conn, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping.Load() {
		nc.Close()
		return
	}
	s.held[nc] = time.AfterFunc(d, func() {
		s.mu.Lock()
		delete(s.held, nc)
		s.mu.Unlock()
		nc.Close()
	})
}

func temporary(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ENOBUFS)
}

func (s *Server) startConn(nc net.Conn) {
	c := newConn(s, nc, s.cfg.ConnIDs.Add(1))
	s.mu.Lock()
	if s.stopping.Load() {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.live[c] = struct{}{}
	s.conns.Add(1)
	s.mu.Unlock()
	s.cfg.Observer.ObserveConnOpen()
	c.start()
}

// connDone is called once per started connection, after both its
// goroutines have exited.
func (s *Server) connDone(c *conn) {
	s.mu.Lock()
	delete(s.live, c)
	s.mu.Unlock()
	s.conns.Done()
}

// stop sets stopping, closes the listener and returns the live
// connections. After it, no connection is added.
func (s *Server) stop() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopping.Store(true)
	s.stopOnce.Do(func() { close(s.stopCh) })
	if s.ln != nil {
		s.ln.Close()
	}
	for nc, t := range s.held { //floe:unordered every held connection is closed
		t.Stop()
		nc.Close()
		delete(s.held, nc)
	}
	out := make([]*conn, 0, len(s.live))
	for c := range s.live { //floe:unordered every connection gets the same treatment
		out = append(out, c)
	}
	return out
}

// Shutdown stops accepting connections and reading requests, waits until
// every request already read is answered and written, then closes the
// connections. A request whose frame was partly read is dropped. If ctx
// ends first, the remaining connections are closed at once and ctx's error
// is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	for _, c := range s.stop() {
		c.wakeReader()
	}
	done := make(chan struct{})
	go func() {
		s.conns.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.Close()
		return ctx.Err()
	}
}

// Close closes the listener and every connection at once; unanswered
// requests are dropped. Handlers may still call respond: it does nothing.
func (s *Server) Close() error {
	for _, c := range s.stop() {
		c.abort(ReasonServerClosed)
	}
	return nil
}
