package kafka

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/node/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testVersions is what fakeBroker answers.
func testVersions() []ApiRange {
	return []ApiRange{
		{Key: 0, MinVersion: 0, MaxVersion: 11}, // Produce
		{Key: 3, MinVersion: 0, MaxVersion: 12}, // Metadata
		{Key: 22, MinVersion: 0, MaxVersion: 4}, // InitProducerId
	}
}

// fakeBroker is a small Handler: Metadata names the server itself as the
// only broker and leader; Produce validates every batch with
// node/records and assigns offsets in arrival order; InitProducerId hands
// out producer 1. With jitter set, Produce responses are sent from other
// goroutines after random delays, so they complete out of order.
type fakeBroker struct {
	jitter bool

	mu      sync.Mutex
	addr    string                // host:port of the server, set once it listens
	next    map[string]int64      // "topic/partition" -> next offset
	records int                   // records accepted
	codecs  map[records.Codec]int // batches accepted, by codec
	conns   map[uint64]ConnInfo
}

func newFakeBroker(jitter bool) *fakeBroker {
	return &fakeBroker{jitter: jitter, next: map[string]int64{}, conns: map[uint64]ConnInfo{}, codecs: map[records.Codec]int{}}
}

func (f *fakeBroker) Serve(c *ConnInfo, req kmsg.Request, respond func(kmsg.Response)) {
	f.mu.Lock()
	f.conns[c.ID] = *c
	f.mu.Unlock()
	switch r := req.(type) {
	case *kmsg.MetadataRequest:
		respond(f.metadata(r))
	case *kmsg.InitProducerIDRequest:
		resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = 1, 0
		respond(resp)
	case *kmsg.ProduceRequest:
		resp := f.produce(r)
		if r.Acks == 0 {
			resp = nil
		}
		if !f.jitter {
			respond(resp)
			return
		}
		go func() {
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			respond(resp)
		}()
	default:
		panic("fakeBroker: unexpected " + kmsg.NameForKey(req.Key()))
	}
}

func (f *fakeBroker) metadata(r *kmsg.MetadataRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	f.mu.Lock()
	host, portStr, _ := net.SplitHostPort(f.addr)
	f.mu.Unlock()
	port, _ := strconv.Atoi(portStr)
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = 0, host, int32(port)
	resp.Brokers = []kmsg.MetadataResponseBroker{b}
	resp.ControllerID = 0
	resp.ClusterID = kmsg.StringPtr("floe-test")
	names := []string{"t"}
	if r.Topics != nil {
		names = names[:0]
		for _, t := range r.Topics {
			if t.Topic != nil {
				names = append(names, *t.Topic)
			}
		}
	}
	for _, name := range names {
		t := kmsg.NewMetadataResponseTopic()
		t.Topic = kmsg.StringPtr(name)
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Partition, p.Leader, p.Replicas, p.ISR = 0, 0, []int32{0}, []int32{0}
		t.Partitions = []kmsg.MetadataResponseTopicPartition{p}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

func (f *fakeBroker) produce(r *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range r.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.ErrorCode = f.append(r.Version, t.Topic+"/"+strconv.Itoa(int(p.Partition)), p.Records)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// append validates a partition's batches and assigns their offsets.
func (f *fakeBroker) append(version int16, tp string, recs []byte) (int64, int16) {
	if version < 3 { // message format v0/v1: refused, as Kafka 4 does
		return -1, kerr.UnsupportedVersion.Code
	}
	batches, err := records.Split(recs)
	if err != nil {
		return -1, records.ErrorCode(err)
	}
	for _, b := range batches {
		if _, err := records.Validate(b, 1<<20); err != nil {
			return -1, records.ErrorCode(err)
		}
	}
	base := f.next[tp]
	for _, b := range batches {
		h, _ := records.ParseHeader(b)
		f.next[tp] += int64(h.RecordCount)
		f.records += int(h.RecordCount)
		f.codecs[h.Codec()]++
	}
	return base, 0
}

func (f *fakeBroker) setAddr(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addr = addr
}

func (f *fakeBroker) accepted() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.records
}

// sawOnly checks every batch accepted so far used codec c, or, when
// alsoNone, was left uncompressed (librdkafka sends a batch uncompressed
// when compressing does not make it smaller).
func (f *fakeBroker) sawOnly(t testing.TB, c records.Codec, alsoNone bool) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	others := len(f.codecs) - 1
	if alsoNone && c != records.CodecNone && f.codecs[records.CodecNone] > 0 {
		others--
	}
	if others != 0 || f.codecs[c] == 0 {
		t.Fatalf("batches by codec %v, want only %v", f.codecs, c)
	}
	clear(f.codecs)
}

func (f *fakeBroker) connInfos() []ConnInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ConnInfo
	for _, c := range f.conns {
		out = append(out, c)
	}
	return out
}

// startServer starts a server on a free loopback port.
func startServer(t testing.TB, cfg Config, h Handler) (*Server, string) {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	s := NewServer(cfg, h)
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		s.Close()
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	})
	return s, s.Addr().String()
}

// countingObserver records every Observer event.
type countingObserver struct {
	mu       sync.Mutex
	opened   int
	closed   map[CloseReason]int
	requests map[int16]int
	errors   int
}

func newCountingObserver() *countingObserver {
	return &countingObserver{closed: map[CloseReason]int{}, requests: map[int16]int{}}
}

func (o *countingObserver) ObserveRequest(key, _ int16, bytesIn, _ int, _ time.Duration, err bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests[key]++
	if err {
		o.errors++
	}
}

func (o *countingObserver) ObserveConnOpen() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.opened++
}

func (o *countingObserver) ObserveConnClose(r CloseReason) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed[r]++
}

func (o *countingObserver) requestsFor(key int16) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.requests[key]
}

func (o *countingObserver) failedRequests() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.errors
}

func (o *countingObserver) closedWith(r CloseReason) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed[r]
}

// eventually polls cond until it holds; the deadline only guards against
// a hang, it asserts nothing about speed.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// rawClient speaks the wire protocol by hand, to send what real clients
// never would.
type rawClient struct {
	t    testing.TB
	nc   net.Conn
	br   *bufio.Reader
	corr int32
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// send writes req at its version and returns its correlation ID.
func (c *rawClient) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	c.write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, c.corr))
	return c.corr
}

func (c *rawClient) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// frame builds a frame with a given header and body.
func frame(key, version int16, corr int32, rest []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = append(b, rest...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// read reads one response frame: its correlation ID and the rest.
func (c *rawClient) read() (int32, []byte) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(20 * time.Second)) // hang guard
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		c.t.Fatalf("reading a response: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.br, b); err != nil {
		c.t.Fatalf("reading a response: %v", err)
	}
	return int32(binary.BigEndian.Uint32(b)), b[4:]
}

// readInto reads one response, checks its correlation ID and decodes it
// into resp (whose version must be set); flexible responses other than
// ApiVersions skip the header's tag byte.
func (c *rawClient) readInto(corr int32, resp kmsg.Response) {
	c.t.Helper()
	got, body := c.read()
	if got != corr {
		c.t.Fatalf("correlation ID %d, want %d", got, corr)
	}
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		if len(body) == 0 || body[0] != 0 {
			c.t.Fatalf("flexible response without an empty tag section")
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decoding %s v%d: %v", kmsg.NameForKey(resp.Key()), resp.GetVersion(), err)
	}
}

// expectClosed reads until the server closes the connection, failing if a
// response arrives instead.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(20 * time.Second)) // hang guard
	n, err := c.br.Read(make([]byte, 1))
	if err == nil {
		c.t.Fatalf("read %d bytes, want the connection closed", n)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatal("connection still open")
	}
}
