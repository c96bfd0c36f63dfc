package kafka

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/sasl"
)

// conn is one client connection, served by two goroutines:
//
//   - the reader reads a frame, decodes it, appends a slot to the queue and
//     calls the handler, in a loop. Before reading a frame it takes an
//     in-flight token, so with MaxInFlightPerConn responses pending it
//     stops reading (backpressure).
//   - the writer waits until the slot at the head of the queue has its
//     response, writes every consecutive ready slot into a bufio.Writer,
//     returns their tokens, and flushes when no ready slot is left.
//
// A protocol error, write error, idle timeout or Close aborts: the socket
// closes at once. A client EOF or Shutdown stops the reader only: the
// writer drains the queue, then closes.
type conn struct {
	srv    *Server
	nc     net.Conn
	id     uint64
	remote string
	br     *bufio.Reader
	bw     *bufio.Writer
	idle   time.Duration // <= 0: no idle timeout

	// Reader-owned.
	info       *ConnInfo // the current snapshot, replaced on change
	sizeBuf    [4]byte
	sawFrame   bool             // a frame was read: the first one is checked for other protocols (probe.go)
	readAt     time.Time        // when the current frame's size prefix was read (timed only)
	timed      ReadTimedHandler // srv.h when it wants read times, else nil
	auth       authState        // auth.go
	failReason string           // why the last SASL step failed (safe to show)

	// Writer-owned.
	wbuf []byte
	// written holds the responses buffered but not yet flushed that want
	// to hear when they leave (WrittenNotifier); writer goroutine only.
	written []WrittenNotifier
	ready   []*slot

	inflight chan struct{} // one token per request read and not yet written
	// mutedUntil is when the reader may read again (unix nanoseconds):
	// a response throttled after it is sent (KIP-219) mutes the
	// connection for its throttle time (throttle.go).
	mutedUntil atomic.Int64
	pending    atomic.Int32  // requests read and not yet written
	wake       chan struct{} // capacity 1: the head slot may be ready, or the reader stopped
	dead       chan struct{} // closed by abort
	abortMu    sync.Once
	exits      atomic.Int32

	mu sync.Mutex
	// order holds, in arrival order, the requests read whose responses
	// are not yet written, and releases them only as the answered prefix
	// (inorder.go). Its Max is MaxInFlightPerConn; each slot holds an
	// in-flight token, so Reserve never refuses.
	order       *InOrder[*slot]
	readerDone  bool        // the reader stopped without aborting
	readerWhy   CloseReason // why, when readerDone
	closeReason CloseReason // set once, by abort
}

// slot is one request awaiting its response.
type slot struct {
	c            *conn
	key, version int16 // for metrics; -1 when not meaningful
	respVersion  int16 // the version the response must have
	corr         int32
	ticket       uint64 // in c.order
	bytesIn      int
	start        time.Time
	answered     atomic.Bool

	// Guarded by c.mu. resp is set once, before the slot is filled in
	// c.order; after the writer sees it ready it reads resp without the
	// lock.
	resp kmsg.Response
}

const (
	readBufferBytes  = 64 << 10
	writeBufferBytes = 64 << 10
	// frameChunkBytes: frames larger than this are read in growing
	// chunks, so a size prefix that lies costs only the bytes really sent.
	frameChunkBytes = 1 << 20
	// encodeBufferBytesMax is the largest encode buffer kept between
	// responses.
	encodeBufferBytesMax = 1 << 20
)

func newConn(s *Server, nc net.Conn, id uint64) *conn {
	remote, local := nc.RemoteAddr().String(), nc.LocalAddr().String()
	if s.cfg.TLS != nil {
		nc = tls.Server(nc, s.cfg.TLS)
	}
	c := &conn{
		srv:      s,
		nc:       nc,
		id:       id,
		br:       bufio.NewReaderSize(nc, readBufferBytes),
		bw:       bufio.NewWriterSize(nc, writeBufferBytes),
		idle:     s.cfg.IdleTimeout,
		inflight: make(chan struct{}, s.cfg.MaxInFlightPerConn),
		wake:     make(chan struct{}, 1),
		dead:     make(chan struct{}),
		order:    NewInOrder[*slot](s.cfg.MaxInFlightPerConn),
		remote:   remote,
	}
	c.auth = authState{required: s.cfg.SASL != nil, principal: sasl.Anonymous}
	c.timed, _ = s.h.(ReadTimedHandler)
	c.info = &ConnInfo{ID: id, Remote: remote, Local: local, Listener: s.cfg.Listener, Principal: sasl.Anonymous}
	return c
}

func (c *conn) start() {
	go c.readLoop()
	go c.writeLoop()
}

// Errors that end the reader.
var (
	errStopped      = errors.New("server stopping")
	errIdle         = errors.New("idle")
	errClientClosed = errors.New("client closed")
	errTruncated    = errors.New("frame cut short")
)

func (c *conn) readLoop() {
	defer c.exit()
	defer c.recoverPanic("reader")
	if tc, ok := c.nc.(*tls.Conn); ok && !c.handshakeTLS(tc) {
		return
	}
	for {
		if !c.acquire() {
			c.stopReading(ReasonShutdown)
			return
		}
		if !c.waitMuted() {
			<-c.inflight
			c.stopReading(ReasonShutdown)
			return
		}
		frame, err := c.readFrame()
		if err != nil {
			<-c.inflight
			c.readFailed(err)
			return
		}
		c.sawFrame = true
		if !c.handle(frame) {
			return
		}
	}
}

// acquire takes an in-flight token, waiting while MaxInFlightPerConn
// responses are pending. It fails when the server stops or the connection
// is aborted.
func (c *conn) acquire() bool {
	select {
	case c.inflight <- struct{}{}:
	case <-c.srv.stopCh:
		return false
	case <-c.dead:
		return false
	}
	if c.srv.stopping.Load() {
		<-c.inflight
		return false
	}
	return true
}

func (c *conn) readFailed(err error) {
	select {
	case <-c.dead:
		return // our own close made the read fail
	default:
	}
	var pe *protocolError
	switch {
	case err == errStopped:
		c.stopReading(ReasonShutdown)
	case err == errClientClosed:
		c.stopReading(ReasonClientClosed)
	case err == errIdle:
		c.abort(ReasonIdle)
	case err == errTruncated:
		c.srv.cfg.Logger.Debug("kafka: frame cut short", "conn", c.id, "remote", c.remote)
		c.abort(ReasonBadFrame)
	case errors.As(err, &pe):
		c.srv.cfg.Logger.Debug("kafka: bad frame", "conn", c.id, "remote", c.remote, "err", err)
		c.abort(pe.reason)
	default:
		c.abort(ReasonClientClosed) // reset mid-frame: the client went away
	}
}

// stopReading ends reading without aborting: the writer drains the queue,
// then closes the connection with reason.
func (c *conn) stopReading(reason CloseReason) {
	c.mu.Lock()
	c.readerDone, c.readerWhy = true, reason
	c.mu.Unlock()
	c.wakeWriter()
}

// readFrame reads one size-prefixed frame and returns it without the
// prefix.
func (c *conn) readFrame() ([]byte, error) {
	c.armReadDeadline()
	if c.srv.stopping.Load() {
		return nil, errStopped
	}
	if err := c.fill(c.sizeBuf[:], true); err != nil {
		return nil, err
	}
	if c.timed != nil {
		c.readAt = time.Now()
	}
	if !c.sawFrame {
		if err := c.checkFirstFrame(); err != nil {
			return nil, err
		}
	}
	size := int32(binary.BigEndian.Uint32(c.sizeBuf[:]))
	lo, hi := int32(requestHeaderBytesMin), c.srv.cfg.MaxRequestBytes
	if c.auth.raw {
		lo = 0 // a raw SASL token has no request header
	}
	if c.auth.required && !c.auth.authenticated {
		hi = min(hi, c.srv.cfg.UnauthenticatedMaxBytes)
	}
	if size < lo || size > hi {
		return nil, &protocolError{ReasonBadFrame, -1, -1,
			fmt.Sprintf("size prefix %d outside [%d, %d]", size, lo, hi)}
	}
	n := int(size)
	if n <= frameChunkBytes {
		frame := make([]byte, n)
		return frame, c.fill(frame, false)
	}
	frame := make([]byte, 0, frameChunkBytes)
	for len(frame) < n {
		if len(frame) == cap(frame) {
			grown := make([]byte, len(frame), min(n, 2*cap(frame)))
			copy(grown, frame)
			frame = grown
		}
		end := min(n, cap(frame))
		if err := c.fill(frame[len(frame):end], false); err != nil {
			return nil, err
		}
		frame = frame[:end]
	}
	return frame, nil
}

// fill reads exactly len(p) bytes. A read deadline (the idle timeout, or
// Shutdown's wake-up) that passes while the connection is busy (bytes
// arrived, or responses are pending) is extended; when it is idle, fill
// fails with errIdle, and when the server is stopping, with errStopped.
func (c *conn) fill(p []byte, atBoundary bool) error {
	progressed := false
	for n := 0; n < len(p); {
		m, err := c.br.Read(p[n:])
		n += m
		if m > 0 {
			progressed, atBoundary = true, false
		}
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			if c.srv.stopping.Load() {
				return errStopped
			}
			if !progressed && c.pending.Load() == 0 {
				return errIdle
			}
			progressed = false
			c.armReadDeadline()
			if c.srv.stopping.Load() { // Shutdown may have raced the re-arm
				return errStopped
			}
			continue
		}
		if atBoundary {
			return errClientClosed
		}
		if err == io.EOF {
			return errTruncated
		}
		return err
	}
	return nil
}

func (c *conn) armReadDeadline() {
	if c.idle > 0 {
		_ = c.nc.SetReadDeadline(time.Now().Add(c.idle))
	}
}

// wakeReader makes a reader blocked in Read return, so it sees the server
// is stopping.
func (c *conn) wakeReader() { _ = c.nc.SetReadDeadline(time.Now()) }

// handle decodes one frame, queues its slot and dispatches it. It
// returns false when the reader must stop: the connection is closing.
func (c *conn) handle(frame []byte) bool {
	start := time.Now()
	if c.auth.raw {
		sl := c.enqueue(&slot{c: c, key: saslAuthenticateKey, version: -1, respVersion: -1, bytesIn: len(frame) + 4, start: start})
		return c.closeUnless(c.serveRawToken(frame, sl), ReasonAuthFailed)
	}
	req, err := decodeRequest(frame, c.srv.table)
	if err != nil {
		pe := err.(*protocolError)
		c.srv.cfg.Logger.Debug("kafka: bad request", "conn", c.id, "remote", c.remote, "err", err)
		c.srv.cfg.Observer.ObserveRequest(pe.key, pe.version, len(frame)+4, 0, time.Since(start), true)
		<-c.inflight
		c.abort(pe.reason)
		return false
	}
	switch req.key {
	case apiVersionsKey, saslHandshakeKey, saslAuthenticateKey:
	default:
		if ok, why := c.auth.mayServe(start); !ok {
			c.srv.cfg.Logger.Debug("kafka: request before authentication; closing", "conn", c.id, "remote", c.remote,
				"listener", c.srv.cfg.Listener, "api", kmsg.NameForKey(req.key), "reason", why)
			c.srv.cfg.Observer.ObserveRequest(req.key, req.version, len(frame)+4, 0, time.Since(start), true)
			<-c.inflight
			c.stopReading(why)
			return false
		}
	}
	sl := c.enqueue(&slot{c: c, key: req.key, version: req.version, respVersion: req.version,
		corr: req.corr, bytesIn: len(frame) + 4, start: start})
	switch req.key {
	case apiVersionsKey:
		c.serveApiVersions(req, sl)
		return true
	case saslHandshakeKey:
		c.noteClientID(req.clientID)
		if !c.auth.required {
			// A listener without SASL: refuse every mechanism, let the
			// client read the answer, then close (probe.go).
			c.refuseSASL(req, sl)
			c.lingerForClose()
			return c.closeUnless(false, ReasonUnsupportedSASL)
		}
		return c.closeUnless(c.serveHandshake(req.kreq.(*kmsg.SASLHandshakeRequest), sl), ReasonAuthFailed)
	case saslAuthenticateKey:
		c.noteClientID(req.clientID)
		return c.closeUnless(c.serveAuthenticate(req.kreq.(*kmsg.SASLAuthenticateRequest), sl), ReasonAuthFailed)
	}
	c.noteClientID(req.clientID)
	if c.timed != nil {
		c.timed.ServeRead(c.info, req.kreq, sl.respond, c.readAt)
		return true
	}
	c.srv.h.Serve(c.info, req.kreq, sl.respond)
	return true
}

// enqueue appends sl to the queue of requests awaiting their answer.
func (c *conn) enqueue(sl *slot) *slot {
	c.mu.Lock()
	ticket, ok := c.order.Reserve(sl)
	sl.ticket = ticket
	c.mu.Unlock()
	if !ok { // the in-flight tokens make this impossible
		panic("kafka: more requests pending than MaxInFlightPerConn")
	}
	c.pending.Add(1)
	return sl
}

// closeUnless stops reading with reason unless keep: the writer sends the
// answers already queued, then closes.
func (c *conn) closeUnless(keep bool, reason CloseReason) bool {
	if !keep {
		c.stopReading(reason)
	}
	return keep
}

func (c *conn) serveApiVersions(req request, sl *slot) {
	resp, name, version := answerApiVersions(req, c.srv.table)
	if req.kreq == nil {
		sl.version = -1 // unbounded: keep it out of metrics
	} else {
		c.noteClientID(req.clientID)
	}
	if name != "" && (name != c.info.ClientSoftwareName || version != c.info.ClientSoftwareVersion) {
		ci := *c.info
		ci.ClientSoftwareName, ci.ClientSoftwareVersion = name, version
		c.info = &ci
	}
	sl.respVersion = resp.Version
	sl.respond(resp)
}

// noteClientID replaces the ConnInfo snapshot when the client ID changes;
// snapshots already handed out stay as they were.
func (c *conn) noteClientID(id *string) {
	s := ""
	if id != nil {
		s = *id
	}
	if s != c.info.ClientID {
		ci := *c.info
		ci.ClientID = s
		c.info = &ci
	}
}

// respond is the callback handed to the handler with each request.
func (sl *slot) respond(resp kmsg.Response) {
	c := sl.c
	if !sl.answered.CompareAndSwap(false, true) {
		c.srv.cfg.Logger.Warn("kafka: handler responded twice; ignored", "conn", c.id, "api", kmsg.NameForKey(sl.key), "correlation_id", sl.corr)
		return
	}
	c.muteFor(resp)
	c.mu.Lock()
	sl.resp = resp
	head, _ := c.order.Fill(sl.ticket)
	c.mu.Unlock()
	if head { // otherwise the writer waits for an earlier slot anyway
		c.wakeWriter()
	}
}

func (c *conn) wakeWriter() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *conn) writeLoop() {
	defer c.exit()
	defer c.notifyWritten(ErrConnClosed) // whatever is left was never flushed
	defer c.recoverPanic("writer")
	for {
		ready, drained := c.readyHead()
		if len(ready) == 0 {
			if c.bw.Buffered() > 0 {
				c.armWriteDeadline()
				if err := c.bw.Flush(); err != nil {
					c.notifyWritten(err)
					c.abort(ReasonWriteError)
					return
				}
			}
			c.notifyWritten(nil)
			if drained {
				c.abort(c.readerReason())
				return
			}
			select {
			case <-c.wake:
			case <-c.dead:
				return
			}
			continue
		}
		written, reason := c.writeSlots(ready)
		c.pop(written)
		if reason != "" {
			var err error = ErrConnClosed
			if reason == ReasonHandler {
				c.armWriteDeadline()
				if err = c.bw.Flush(); err != nil {
					err = ErrConnClosed
				}
			}
			c.notifyWritten(err)
			c.abort(reason)
			return
		}
	}
}

// readyHead returns the consecutive ready slots at the head of the queue
// (without removing them), and whether the queue is empty with the reader
// stopped: nothing more will ever be written.
func (c *conn) readyHead() (ready []*slot, drained bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ready = c.order.ReadyHead(c.ready[:0])
	c.ready = ready
	return ready, c.order.Len() == 0 && c.readerDone
}

// pop removes the first n slots, written, and returns their tokens.
func (c *conn) pop(n int) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	c.order.Release(n)
	c.mu.Unlock()
	c.pending.Add(-int32(n))
	for range n {
		<-c.inflight
	}
}

// writeSlots writes the ready slots into the buffered writer and returns
// how many it consumed, and a close reason if the connection must close
// after them.
func (c *conn) writeSlots(ready []*slot) (int, CloseReason) {
	c.armWriteDeadline()
	for i, sl := range ready {
		switch resp := sl.resp; {
		case resp == nil: // acks=0 produce: no response
			c.srv.cfg.Observer.ObserveRequest(sl.key, sl.version, sl.bytesIn, 0, time.Since(sl.start), false)
		case resp == CloseConnection:
			c.srv.cfg.Observer.ObserveRequest(sl.key, sl.version, sl.bytesIn, 0, time.Since(sl.start), false)
			return i + 1, ReasonHandler
		case resp.Key() != sl.key || resp.GetVersion() != sl.respVersion:
			c.srv.cfg.Logger.Warn("kafka: handler response does not match its request; closing",
				"conn", c.id, "request", kmsg.NameForKey(sl.key), "version", sl.respVersion,
				"response", kmsg.NameForKey(resp.Key()), "response_version", resp.GetVersion())
			return i, ReasonHandlerBug
		default:
			buf := c.encode(sl)
			if _, err := c.bw.Write(buf); err != nil {
				return i, ReasonWriteError
			}
			if wn, ok := resp.(WrittenNotifier); ok {
				c.written = append(c.written, wn)
			}
			c.srv.cfg.Observer.ObserveRequest(sl.key, sl.version, sl.bytesIn, len(buf), time.Since(sl.start), false)
		}
	}
	return len(ready), ""
}

// encode frames sl's response: size, correlation ID, the header's empty
// tag section when the response is flexible (never for ApiVersions, whose
// response header is always v0), then the body.
func (c *conn) encode(sl *slot) []byte {
	buf := append(c.wbuf[:0], 0, 0, 0, 0)
	if raw, ok := sl.resp.(rawToken); ok { // no header: see auth.go
		buf = append(buf, raw.b...)
		binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
		c.wbuf = buf[:0]
		return buf
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(sl.corr))
	if sl.resp.IsFlexible() && sl.key != apiVersionsKey {
		buf = append(buf, 0)
	}
	buf = sl.resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	if cap(buf) <= encodeBufferBytesMax {
		c.wbuf = buf
	} else {
		c.wbuf = nil
	}
	return buf
}

func (c *conn) armWriteDeadline() {
	if c.idle > 0 {
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.idle))
	}
}

func (c *conn) readerReason() CloseReason {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readerWhy
}

// abort closes the connection at once; the first reason sticks.
func (c *conn) abort(reason CloseReason) {
	c.abortMu.Do(func() {
		c.mu.Lock()
		c.closeReason = reason
		c.mu.Unlock()
		close(c.dead)
		_ = c.nc.Close()
	})
}

func (c *conn) recoverPanic(where string) {
	if r := recover(); r != nil {
		c.srv.cfg.Logger.Error("kafka: panic in connection; closing it", "where", where, "conn", c.id,
			"remote", c.remote, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		c.abort(ReasonPanic)
	}
}

// notifyWritten tells the flushed (err nil) or lost responses that wanted
// to know.
func (c *conn) notifyWritten(err error) {
	for i, wn := range c.written {
		wn.Written(err)
		c.written[i] = nil
	}
	c.written = c.written[:0]
}

// exit runs as each goroutine ends; the second one finishes the connection.
func (c *conn) exit() {
	if c.exits.Add(1) < 2 {
		return
	}
	c.abort(ReasonServerClosed) // no-op: whoever stopped first aborted
	c.mu.Lock()
	reason, unanswered := c.closeReason, c.order.TakeAll(nil)
	c.mu.Unlock()
	for _, sl := range unanswered {
		c.srv.cfg.Observer.ObserveRequest(sl.key, sl.version, sl.bytesIn, 0, time.Since(sl.start), true)
		c.mu.Lock()
		resp := sl.resp
		c.mu.Unlock()
		if wn, ok := resp.(WrittenNotifier); ok {
			wn.Written(ErrConnClosed)
		}
	}
	c.srv.cfg.Observer.ObserveConnClose(reason)
	c.srv.connDone(c)
}
