package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// heldHandler keeps every respond callback until the test releases it.
type heldHandler struct {
	mu       sync.Mutex
	held     []held
	served   int
	maxOpen  int // most requests awaiting a response at once
	answered int
}

type held struct {
	req     kmsg.Request
	respond func(kmsg.Response)
}

func (h *heldHandler) Serve(_ *ConnInfo, req kmsg.Request, respond func(kmsg.Response)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = append(h.held, held{req, respond})
	h.served++
	h.maxOpen = max(h.maxOpen, h.served-h.answered)
}

// take returns the held requests once at least n are held.
func (h *heldHandler) take(t *testing.T, n int) []held {
	t.Helper()
	var out []held
	eventually(t, "requests reach the handler", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.held) < n {
			return false
		}
		out, h.held = h.held, nil
		return true
	})
	return out
}

func (h *heldHandler) answer(x held, resp kmsg.Response) {
	h.mu.Lock()
	h.answered++
	h.mu.Unlock()
	x.respond(resp)
}

func metadataV(v int16) *kmsg.MetadataRequest {
	r := kmsg.NewPtrMetadataRequest()
	r.Version = v
	return r
}

func responseTo(req kmsg.Request) kmsg.Response { return req.ResponseKind() }

// Requests answered in reverse order go out in request order.
func TestResponsesInRequestOrder(t *testing.T) {
	h := new(heldHandler)
	_, addr := startServer(t, Config{Versions: testVersions()}, h)
	c := dialRaw(t, addr)
	const n = 100
	var sent []int32
	var burst []byte
	for i := range n {
		c.corr++
		sent = append(sent, c.corr)
		burst = append(burst, kmsg.NewRequestFormatter().AppendRequest(nil, metadataV(int16(i%13)), c.corr)...)
	}
	c.write(burst) // all at once: pipelined
	reqs := h.take(t, n)
	// Answer in reverse, then (for a second round) in a random order from
	// many goroutines, so the writer wakes while later slots are ready
	// and earlier ones are not.
	for i := len(reqs) - 1; i >= 0; i-- {
		h.answer(reqs[i], responseTo(reqs[i].req))
	}
	for i := range n {
		resp := metadataV(int16(i % 13)).ResponseKind()
		c.readInto(sent[i], resp)
	}

	burst, sent = nil, nil
	for i := range n {
		c.corr++
		sent = append(sent, c.corr)
		burst = append(burst, kmsg.NewRequestFormatter().AppendRequest(nil, metadataV(int16(i%13)), c.corr)...)
	}
	c.write(burst)
	reqs = h.take(t, n)
	r := rand.New(rand.NewPCG(7, 7))
	for _, i := range r.Perm(n) {
		go func(x held, delay time.Duration) {
			time.Sleep(delay)
			h.answer(x, responseTo(x.req))
		}(reqs[i], time.Duration(r.IntN(2000))*time.Microsecond)
	}
	for i := range n {
		c.readInto(sent[i], metadataV(int16(i%13)).ResponseKind())
	}
}

// At MaxInFlightPerConn unanswered requests the server stops reading; as
// responses go out it reads on, and everything is answered in order.
func TestInFlightBackpressure(t *testing.T) {
	const limit, n = 4, 25
	h := new(heldHandler)
	_, addr := startServer(t, Config{Versions: testVersions(), MaxInFlightPerConn: limit}, h)
	c := dialRaw(t, addr)
	var burst []byte
	for i := range n {
		burst = append(burst, kmsg.NewRequestFormatter().AppendRequest(nil, metadataV(1), int32(i+1))...)
	}
	c.write(burst)
	first := h.take(t, limit)
	time.Sleep(50 * time.Millisecond) // room for a wrong server to read more
	h.mu.Lock()
	early := h.served
	h.mu.Unlock()
	if early != limit {
		t.Fatalf("handler saw %d requests with %d unanswered allowed", early, limit)
	}
	pending := first
	for answered := 0; answered < n; {
		// Answer in reverse to also exercise reordering under the cap.
		for i := len(pending) - 1; i >= 0; i-- {
			h.answer(pending[i], responseTo(pending[i].req))
		}
		answered += len(pending)
		if answered < n {
			pending = h.take(t, 1)
		}
	}
	for i := range n {
		c.readInto(int32(i+1), metadataV(1).ResponseKind())
	}
	if h.maxOpen > limit {
		t.Fatalf("%d requests were unanswered at once; the limit is %d", h.maxOpen, limit)
	}
}

func TestApiVersions(t *testing.T) {
	_, addr := startServer(t, Config{Versions: testVersions()}, new(heldHandler))
	c := dialRaw(t, addr)
	for v := int16(0); v <= apiVersionsVersionMax; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = v, "floe-test", "1.0.0-rc.1"
		corr := c.send(req)
		_, body := c.read()
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		// The header never has a tag byte: the body re-encodes to exactly
		// what followed the correlation ID.
		if !bytes.Equal(resp.AppendTo(nil), body) {
			t.Fatalf("v%d: response is not header v0 + body", v)
		}
		if resp.ErrorCode != 0 || len(resp.ApiKeys) != 6 {
			t.Fatalf("v%d (corr %d): error %d, %d keys", v, corr, resp.ErrorCode, len(resp.ApiKeys))
		}
		wantKeys := []int16{0, 3, 17, 18, 22, 36}
		for i, k := range resp.ApiKeys {
			if k.ApiKey != wantKeys[i] {
				t.Fatalf("v%d: keys %+v", v, resp.ApiKeys)
			}
			if k.ApiKey == apiVersionsKey && (k.MinVersion != 0 || k.MaxVersion != apiVersionsVersionMax) {
				t.Fatalf("ApiVersions advertised as %+v", k)
			}
		}
	}

	// Newer than served: a v0 body, UNSUPPORTED_VERSION and only key 18;
	// the connection stays usable.
	for _, v := range []int16{5, 99, 32767} {
		b := frame(apiVersionsKey, v, 77, []byte("anything at all: the body is not read"))
		c.write(b)
		corr, body := c.read()
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		if err := resp.ReadFrom(body); corr != 77 || err != nil {
			t.Fatalf("v%d: corr %d, %v", v, corr, err)
		}
		if k := resp.ApiKeys; resp.ErrorCode != kerr.UnsupportedVersion.Code || len(k) != 1 ||
			k[0].ApiKey != 18 || k[0].MinVersion != 0 || k[0].MaxVersion != apiVersionsVersionMax {
			t.Fatalf("v%d: %+v", v, resp)
		}
	}

	// v3+ software fields must match the KIP-511 pattern.
	for _, sw := range [][2]string{{"", "1"}, {"kgo", ""}, {"-kgo", "1"}, {"kgo", "1.0+build"}, {"k g", "1"}, {"kgo.", "1"}} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 3, sw[0], sw[1]
		corr := c.send(req)
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		c.readInto(corr, resp)
		if resp.ErrorCode != kerr.InvalidRequest.Code || len(resp.ApiKeys) != 0 {
			t.Fatalf("software %q: error %d, %d keys", sw, resp.ErrorCode, len(resp.ApiKeys))
		}
	}
	for _, ok := range []string{"a", "A1", "librdkafka", "1.2.3-SNAPSHOT", "v1.22.3"} {
		if !validSoftwareField(ok) {
			t.Fatalf("%q rejected", ok)
		}
	}
}

// Bad input closes that connection (or, for ApiVersions, is answered);
// the handler never sees it; a well-behaved client keeps working
// throughout.
func TestBadInput(t *testing.T) {
	obs := newCountingObserver()
	f := newFakeBroker(false)
	const maxRequest = 1 << 20
	_, addr := startServer(t, Config{Versions: testVersions(), Observer: obs, MaxRequestBytes: maxRequest}, f)
	f.setAddr(addr)
	ctx, cancel := context.WithCancel(context.Background())
	neighbour := metadataLoop(ctx, t, addr)

	be32 := func(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
	metadata := func(v int16) []byte { return kmsg.NewRequestFormatter().AppendRequest(nil, metadataV(v), 1) }
	truncatedBody := metadata(1)
	truncatedBody = truncatedBody[:len(truncatedBody)-2]
	binary.BigEndian.PutUint32(truncatedBody, uint32(len(truncatedBody)-4))

	cases := []struct {
		name      string
		input     []byte
		halfClose bool // the input alone does not complete a frame
		reason    CloseReason
	}{
		{"negative size", be32(-1), false, ReasonBadFrame},
		{"min int32 size", be32(-1 << 31), false, ReasonBadFrame},
		{"oversized size", be32(maxRequest + 1), false, ReasonBadFrame},
		{"size too small for a header", append(be32(7), 0, 0, 0, 0, 0, 0, 0), false, ReasonBadFrame},
		{"zero size", be32(0), false, ReasonBadFrame},
		{"truncated frame", append(be32(100), make([]byte, 50)...), true, ReasonBadFrame},
		{"truncated size", []byte{0, 0}, true, ReasonBadFrame},
		{"unknown api key", frame(999, 0, 1, nil), false, ReasonUnsupportedAPI},
		{"negative api key", frame(-1, 0, 1, nil), false, ReasonUnsupportedAPI},
		{"key not advertised", frame(8, 2, 1, []byte{0, 0}), false, ReasonUnsupportedAPI},
		{"version too new", metadata(13), false, ReasonUnsupportedVersion},
		{"version negative", frame(3, -1, 1, nil), false, ReasonUnsupportedVersion},
		{"truncated body", truncatedBody, false, ReasonBadRequest},
		{"truncated client id", frame(3, 1, 1, []byte{0, 10, 'a'}), false, ReasonBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := obs.closedWith(tc.reason)
			c := dialRaw(t, addr)
			c.write(tc.input)
			if tc.halfClose {
				c.nc.(*net.TCPConn).CloseWrite()
			}
			c.expectClosed()
			eventually(t, "close counted", func() bool { return obs.closedWith(tc.reason) > before })
		})
	}
	t.Run("random bytes", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for i := range 50 {
			junk := make([]byte, 1+r.IntN(300))
			for j := range junk {
				junk[j] = byte(r.Uint32())
			}
			if i%2 == 0 { // a plausible size prefix, so the junk gets decoded
				binary.BigEndian.PutUint32(junk, uint32(len(junk)-4))
				if len(junk) < 4 {
					continue
				}
			}
			c := dialRaw(t, addr)
			c.write(junk)
			c.nc.(*net.TCPConn).CloseWrite()
			// Junk may happen to be a valid request (say, Metadata):
			// answers are fine, then the server must close.
			_ = c.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
			for {
				if _, err := c.br.Read(make([]byte, 512)); err != nil {
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						t.Fatalf("junk %d: connection left open", i)
					}
					break
				}
			}
		}
	})
	cancel()
	if ok := neighbour(); ok == 0 {
		t.Fatal("the well-behaved client got no answers")
	}
	if obs.failedRequests() == 0 {
		t.Fatal("no failed requests observed")
	}
}

// Requests on other connections are unaffected by a handler panic, which
// closes its own connection and is counted.
func TestHandlerPanicClosesOnlyItsConnection(t *testing.T) {
	obs := newCountingObserver()
	f := newFakeBroker(false)
	h := HandlerFunc(func(c *ConnInfo, req kmsg.Request, respond func(kmsg.Response)) {
		if req.GetVersion() == 7 {
			panic("boom")
		}
		f.Serve(c, req, respond)
	})
	_, addr := startServer(t, Config{Versions: testVersions(), Observer: obs}, h)
	f.setAddr(addr)
	good := dialRaw(t, addr)
	bad := dialRaw(t, addr)
	bad.send(metadataV(7))
	bad.expectClosed()
	corr := good.send(metadataV(1))
	good.readInto(corr, metadataV(1).ResponseKind())
	eventually(t, "panic counted", func() bool { return obs.closedWith(ReasonPanic) == 1 })
}

func TestNoResponseAndCloseConnection(t *testing.T) {
	h := new(heldHandler)
	_, addr := startServer(t, Config{Versions: testVersions()}, h)
	c := dialRaw(t, addr)
	c.send(metadataV(1)) // acks=0 style: no response
	second := c.send(metadataV(2))
	c.send(metadataV(3)) // closes the connection after the second's response
	c.send(metadataV(4)) // read, but its answer is never written
	reqs := h.take(t, 4)
	h.answer(reqs[3], responseTo(reqs[3].req))
	h.answer(reqs[2], CloseConnection)
	h.answer(reqs[0], nil)
	h.answer(reqs[1], responseTo(reqs[1].req))
	reqs[1].respond(responseTo(reqs[1].req)) // twice: ignored
	c.readInto(second, metadataV(2).ResponseKind())
	c.expectClosed()
}

// A response of the wrong kind or version is a handler bug: the connection
// closes rather than sending what the client would misparse.
func TestMismatchedResponseCloses(t *testing.T) {
	for name, wrong := range map[string]func(kmsg.Request) kmsg.Response{
		"kind": func(kmsg.Request) kmsg.Response { return kmsg.NewPtrProduceResponse() },
		"version": func(req kmsg.Request) kmsg.Response {
			r := req.ResponseKind()
			r.SetVersion(req.GetVersion() - 1)
			return r
		},
	} {
		t.Run(name, func(t *testing.T) {
			obs := newCountingObserver()
			h := HandlerFunc(func(_ *ConnInfo, req kmsg.Request, respond func(kmsg.Response)) { respond(wrong(req)) })
			_, addr := startServer(t, Config{Versions: testVersions(), Observer: obs}, h)
			c := dialRaw(t, addr)
			c.send(metadataV(5))
			c.expectClosed()
			eventually(t, "counted", func() bool { return obs.closedWith(ReasonHandlerBug) == 1 })
		})
	}
}

// Shutdown stops accepting and reading, waits for the answers to requests
// already read, writes them, then closes.
func TestShutdownDrains(t *testing.T) {
	h := new(heldHandler)
	s, addr := startServer(t, Config{Versions: testVersions()}, h)
	c := dialRaw(t, addr)
	corr := c.send(metadataV(1))
	reqs := h.take(t, 1)
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	eventually(t, "new connections refused", func() bool {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			nc.Close()
		}
		return err != nil
	})
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a request unanswered", err)
	default:
	}
	h.answer(reqs[0], responseTo(reqs[0].req))
	c.readInto(corr, metadataV(1).ResponseKind())
	c.expectClosed()
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
}

func TestShutdownGivesUpAtDeadline(t *testing.T) {
	obs := newCountingObserver()
	h := new(heldHandler)
	s, addr := startServer(t, Config{Versions: testVersions(), Observer: obs}, h)
	c := dialRaw(t, addr)
	c.send(metadataV(1))
	h.take(t, 1) // never answered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v", err)
	}
	c.expectClosed()
	eventually(t, "unanswered request counted", func() bool { return obs.failedRequests() == 1 })
}

// An idle connection is closed; one waiting for a slow response is not.
func TestIdleTimeout(t *testing.T) {
	obs := newCountingObserver()
	h := new(heldHandler)
	const idle = 100 * time.Millisecond
	_, addr := startServer(t, Config{Versions: testVersions(), Observer: obs, IdleTimeout: idle}, h)
	quiet := dialRaw(t, addr)
	busy := dialRaw(t, addr)
	corr := busy.send(metadataV(1))
	reqs := h.take(t, 1)
	quiet.expectClosed()
	if obs.closedWith(ReasonIdle) == 0 {
		eventually(t, "idle close counted", func() bool { return obs.closedWith(ReasonIdle) == 1 })
	}
	time.Sleep(3 * idle) // the busy connection waits on us, not idle
	h.answer(reqs[0], responseTo(reqs[0].req))
	busy.readInto(corr, metadataV(1).ResponseKind())
}

// A request larger than the read chunk is read in growing chunks and
// decodes intact.
func TestLargeRequest(t *testing.T) {
	var got []byte
	var mu sync.Mutex
	h := HandlerFunc(func(_ *ConnInfo, req kmsg.Request, respond func(kmsg.Response)) {
		p := req.(*kmsg.ProduceRequest)
		mu.Lock()
		got = p.Topics[0].Partitions[0].Records
		mu.Unlock()
		respond(nil)
	})
	_, addr := startServer(t, Config{Versions: testVersions()}, h)
	c := dialRaw(t, addr)
	payload := make([]byte, 3*frameChunkBytes+12345)
	for i := range payload {
		payload[i] = byte(i * 31)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks = 9, 0
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "t"
	part := kmsg.NewProduceRequestTopicPartition()
	part.Records = payload
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	c.send(req)
	eventually(t, "large request served", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got != nil
	})
	if !bytes.Equal(got, payload) {
		t.Fatal("records changed on the way")
	}
}

func TestVersionTable(t *testing.T) {
	tab, problems := newVersionTable([]ApiRange{
		{Key: 3, MinVersion: 0, MaxVersion: 999}, // clamped
		{Key: 1000, MinVersion: 0, MaxVersion: 1},
		{Key: 0, MinVersion: 5, MaxVersion: 3},
		{Key: 2, MinVersion: -1, MaxVersion: 3},
		{Key: 18, MinVersion: 2, MaxVersion: 2}, // the server's own range wins
		{Key: 19, MinVersion: 500, MaxVersion: 600},
	})
	if len(problems) != 5 {
		t.Fatalf("problems: %q", problems)
	}
	if r := tab.lookup(3); !r.advertised || r.max != kmsg.NewPtrMetadataRequest().MaxVersion() {
		t.Fatalf("metadata: %+v", r)
	}
	for _, k := range []int16{0, 2, 19, 1000, -1, 32767} {
		if tab.lookup(k).advertised {
			t.Fatalf("key %d advertised", k)
		}
	}
	if r := tab.lookup(18); r.min != 0 || r.max != apiVersionsVersionMax {
		t.Fatalf("ApiVersions: %+v", r)
	}
	if len(tab.apiKeys) != 4 || tab.apiKeys[0].ApiKey != 3 || tab.apiKeys[1].ApiKey != 17 ||
		tab.apiKeys[2].ApiKey != 18 || tab.apiKeys[3].ApiKey != 36 {
		t.Fatalf("apiKeys %+v", tab.apiKeys)
	}
	if tab.lookup(saslHandshakeKey).max != saslHandshakeVersionMax {
		t.Fatalf("SaslHandshake not the server's own: %+v", tab.lookup(saslHandshakeKey))
	}
	// With nothing from the handler, the table is the server's own APIs.
	own, problems := newVersionTable(nil)
	if len(problems) != 0 || len(own.apiKeys) != len(ServerAPIs()) {
		t.Fatalf("server's own table %+v, problems %q", own.apiKeys, problems)
	}
	for i, r := range ServerAPIs() {
		if k := own.apiKeys[i]; k.ApiKey != r.Key || k.MinVersion != r.MinVersion || k.MaxVersion != r.MaxVersion {
			t.Fatalf("server's own table %+v, ServerAPIs %+v", own.apiKeys, ServerAPIs())
		}
	}
}

// AdmitConn refuses a connection before anything of it is read: the
// server holds it open, unanswered, for the time AdmitConn gave, then
// closes it; a stop closes held connections at once; admitted
// connections are served as usual.
func TestAdmitConnHoldsRefusedConnections(t *testing.T) {
	var asked atomic.Int64
	var hold atomic.Int64
	hold.Store(int64(time.Hour))
	s, addr := startServer(t, Config{Versions: testVersions(), AdmitConn: func(remote net.Addr) time.Duration {
		if _, ok := remote.(*net.TCPAddr); !ok {
			t.Errorf("AdmitConn got %T, want a TCP address", remote)
		}
		if asked.Add(1)%2 == 0 {
			return time.Duration(hold.Load()) // every second connection is refused
		}
		return 0
	}}, new(heldHandler))
	apiVersions := func(c *rawClient) {
		req := kmsg.NewPtrApiVersionsRequest()
		corr := c.send(req)
		c.readInto(corr, req.ResponseKind())
	}
	admitted := dialRaw(t, addr)
	apiVersions(admitted)

	// Refused and held: the request is not answered and the connection
	// stays open until the server stops.
	refused := dialRaw(t, addr)
	refused.send(kmsg.NewPtrApiVersionsRequest())
	_ = refused.nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := refused.br.Read(make([]byte, 1)); err == nil {
		t.Fatalf("a refused connection was answered (%d bytes)", n)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("a refused connection was closed at once (%v), want it held", err)
	}

	// Refused with a short hold: closed when it ends, unanswered.
	hold.Store(int64(50 * time.Millisecond))
	apiVersions(dialRaw(t, addr)) // the third is admitted
	short := dialRaw(t, addr)
	short.send(kmsg.NewPtrApiVersionsRequest())
	short.expectClosed()

	s.Close()
	refused.expectClosed()
	if asked.Load() != 4 {
		t.Fatalf("AdmitConn asked %d times, want 4", asked.Load())
	}
}
