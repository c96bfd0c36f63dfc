package itest

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
)

// dropProxy is a TCP proxy between Kafka clients and one broker that can
// lose produce responses: it forwards every request, and for every
// dropEvery-th Produce it forwards (while drops remain) it throws the
// broker's response away and resets the client's connection. The broker
// did the write; the client never hears of it and must retry — which is
// exactly when a producer without working idempotence writes a duplicate.
//
// It pairs responses with requests by order (Kafka answers in request
// order on a connection), so it assumes every request gets a response:
// true for acks=1 and acks=all, not for acks=0.
type dropProxy struct {
	ln       net.Listener
	upstream string

	mu sync.Mutex
	// dropEvery > 0 drops the response of produce requests number
	// dropEvery, 2*dropEvery, ... (counted over every connection), at most
	// dropsLeft more times.
	dropEvery, dropsLeft int
	produces             int // produce requests forwarded to the broker
	answered             int // produce responses forwarded to clients
	drops                int // produce responses dropped
	conns                map[net.Conn]bool
	closed               bool
}

// listenProxy listens on a free local port; serve starts forwarding.
func listenProxy(t testing.TB) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln, conns: map[net.Conn]bool{}}
	t.Cleanup(p.close)
	return p
}

func (p *dropProxy) addr() string { return p.ln.Addr().String() }

// serve forwards every accepted connection to upstream.
func (p *dropProxy) serve(upstream string) {
	p.upstream = upstream
	go func() {
		for {
			c, err := p.ln.Accept()
			if err != nil {
				return
			}
			go p.handle(c)
		}
	}()
}

// setDrops drops the response of every every-th produce, max times more.
func (p *dropProxy) setDrops(every, max int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropEvery, p.dropsLeft = every, max
}

// counts returns produce requests forwarded, responses forwarded, and
// responses dropped.
func (p *dropProxy) counts() (produces, answered, drops int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.produces, p.answered, p.drops
}

func (p *dropProxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = map[net.Conn]bool{}
	p.mu.Unlock()
	p.ln.Close()
	for c := range conns {
		c.Close()
	}
}

func (p *dropProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = true
	}
	return !p.closed
}

func (p *dropProxy) handle(client net.Conn) {
	server, err := net.Dial("tcp", p.upstream)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(client, server) {
		client.Close()
		server.Close()
		return
	}
	keys := make(chan int16, 1024) // API keys of requests awaiting responses
	reset := func() {
		if tc, ok := client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // RST, as a crashed network path would
		}
		client.Close()
		server.Close()
	}
	go func() { // client -> broker
		defer reset()
		for {
			frame, err := readFrame(client)
			if err != nil || len(frame) < 6 {
				return
			}
			key := int16(binary.BigEndian.Uint16(frame[4:6]))
			keys <- key
			if key == 0 {
				p.mu.Lock()
				p.produces++
				p.mu.Unlock()
			}
			if _, err := server.Write(frame); err != nil {
				return
			}
		}
	}()
	go func() { // broker -> client
		defer reset()
		for {
			frame, err := readFrame(server)
			if err != nil {
				return
			}
			if key := <-keys; key == 0 && p.dropProduceResponse() {
				return
			}
			if _, err := client.Write(frame); err != nil {
				return
			}
		}
	}()
}

// dropProduceResponse counts one produce response and says whether to
// drop it.
func (p *dropProxy) dropProduceResponse() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.answered + p.drops + 1
	if p.dropEvery > 0 && p.dropsLeft > 0 && n%p.dropEvery == 0 {
		p.dropsLeft--
		p.drops++
		return true
	}
	p.answered++
	return false
}

// readFrame reads one size-prefixed Kafka frame, prefix included.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > 200<<20 {
		return nil, io.ErrUnexpectedEOF
	}
	frame := make([]byte, 4+int(n))
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}
