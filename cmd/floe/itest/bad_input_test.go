package itest

// Bad input on raw TCP connections: random bytes, random bodies behind
// valid headers, truncated frames, size prefixes out of range, unknown API
// keys, unsupported versions, and produce batches that lie (bad CRC, wrong
// length, wrong counts, a control bit, a second corrupt batch behind a
// good one). Each must get the right error code on a connection that then
// keeps working, or a closed connection — never a crash, a hang or a
// write. Meanwhile a franz-go client keeps producing and consuming on
// another topic and must see every acknowledged record; and the topic the
// bad produces aimed at must read back byte for byte as before (raw
// batches and high watermark).

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const victimTopic = "victim"

func TestBadInput(t *testing.T) {
	t.Parallel()
	b := start(t)
	makeTopic(t, b.KafkaAddr, victimTopic, 1, nil)
	makeTopic(t, b.KafkaAddr, "live", 1, nil)
	seed := kgoClient(t, b.KafkaAddr)
	for i := range 50 {
		if err := seed.ProduceSync(ctxFor(t, opWaitMax), &kgo.Record{Topic: victimTopic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "before-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	before := storedBatches(t, seed, victimTopic, 0)
	live := startLiveClient(t, b.KafkaAddr)

	for _, c := range []struct {
		name string
		run  func(*testing.T, *Broker)
	}{
		{"random-bytes", badRandomBytes},
		{"random-bodies", badRandomBodies},
		{"truncated-frames", badTruncated},
		{"size-prefix", badSizePrefix},
		{"unknown-api-key", badAPIKey},
		{"unsupported-versions", badVersions},
		{"bad-batches", badBatches},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, b)
			live.progress(t, c.name)
		})
	}

	if !b.Running() {
		t.Fatalf("the broker died: %v", b.Exits())
	}
	resp, err := http.Get("http://" + b.AdminAddr + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz after bad input: %v %v", resp, err)
	}
	resp.Body.Close()
	live.finish(t)
	after := storedBatches(t, seed, victimTopic, 0)
	if len(after) != len(before) {
		t.Fatalf("%s: %d batches before the bad input, %d after", victimTopic, len(before), len(after))
	}
	for i := range before {
		if !bytes.Equal(before[i].Raw, after[i].Raw) {
			t.Fatalf("%s: batch %d (offset %d) changed", victimTopic, i, before[i].BaseOffset)
		}
	}
	if end := endOffsets(t, b.KafkaAddr, victimTopic)[0]; end != 50 {
		t.Fatalf("%s: high watermark %d after bad input, want 50", victimTopic, end)
	}
}

// liveClient produces to "live" and consumes it at the same time.
type liveClient struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	acked    []string
	consumed []string
	errs     []error
}

func startLiveClient(t *testing.T, addr string) *liveClient {
	ctx, cancel := context.WithCancel(context.Background())
	l := &liveClient{cancel: cancel}
	prod := kgoClient(t, addr)
	cons := kgoClient(t, addr, kgo.ConsumeTopics("live"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))
	l.wg.Add(2)
	go func() {
		defer l.wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			v := fmt.Sprintf("live-%d", i)
			err := prod.ProduceSync(ctx, &kgo.Record{Topic: "live", Value: []byte(v)}).FirstErr()
			l.mu.Lock()
			if err == nil {
				l.acked = append(l.acked, v)
			} else if ctx.Err() == nil {
				l.errs = append(l.errs, err)
			}
			l.mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	go func() {
		defer l.wg.Done()
		for ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			l.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { l.consumed = append(l.consumed, string(r.Value)) })
			l.mu.Unlock()
		}
	}()
	return l
}

// progress waits (bounded) for three more acknowledgements: the broker
// still serves the concurrent client after the bad input just sent.
func (l *liveClient) progress(t *testing.T, after string) {
	t.Helper()
	l.mu.Lock()
	from := len(l.acked)
	l.mu.Unlock()
	deadline := time.Now().Add(opWaitMax)
	for {
		l.mu.Lock()
		n, errs := len(l.acked), len(l.errs)
		l.mu.Unlock()
		if errs > 0 {
			t.Fatalf("after %s: the concurrent client's produce failed: %v", after, l.errs[0])
		}
		if n >= from+3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: the concurrent client got no acknowledgement for %v", after, opWaitMax)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// finish waits (bounded) until the consumer has seen every acknowledged
// value, then stops both.
func (l *liveClient) finish(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(opWaitMax)
	l.mu.Lock()
	acked := append([]string(nil), l.acked...)
	l.mu.Unlock()
	for {
		l.mu.Lock()
		n := len(l.consumed)
		l.mu.Unlock()
		if n >= len(acked) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	l.cancel()
	l.wg.Wait()
	if len(l.errs) > 0 {
		t.Fatalf("the concurrent client's produce failed %d times; first: %v", len(l.errs), l.errs[0])
	}
	if len(acked) < 10 {
		t.Fatalf("the concurrent client got only %d records acknowledged during the bad input", len(acked))
	}
	for i, v := range acked {
		if i >= len(l.consumed) || l.consumed[i] != v {
			t.Fatalf("the concurrent consumer's record %d is not %s (it consumed %d of %d)", i, v, len(l.consumed), len(acked))
		}
	}
	t.Logf("concurrent client: %d records produced and consumed during the bad input", len(acked))
}

// expectClosed fails unless the broker closes rc without answering.
func expectClosed(t *testing.T, rc *rawConn, what string) {
	t.Helper()
	closed, got := rc.closedByBroker()
	if !closed {
		t.Fatalf("%s: connection still open after %v", what, opWaitMax)
	}
	if got != 0 {
		t.Fatalf("%s: the broker sent %d bytes before closing, want none", what, got)
	}
}

// halfClose ends our side of the stream so a frame cut short is seen as
// such instead of waited for.
func halfClose(rc *rawConn) { rc.c.(*net.TCPConn).CloseWrite() }

func badRandomBytes(t *testing.T, b *Broker) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 100 {
		rc := dialRaw(t, b.KafkaAddr)
		blob := randomBytes(rng, 1+rng.IntN(3000))
		if err := rc.send(blob); err != nil {
			continue // the broker may close before taking it all
		}
		halfClose(rc)
		if closed, _ := rc.closedByBroker(); !closed {
			t.Fatalf("random blob %d (%d bytes): connection still open after %v", i, len(blob), opWaitMax)
		}
	}
}

// badRandomBodies sends a valid header for every advertised API at every
// version, followed by random bytes. The broker may answer (kmsg decodes
// some garbage as a request) or close, but must not die or hang.
func badRandomBodies(t *testing.T, b *Broker) {
	rng := rand.New(rand.NewPCG(3, 4))
	sent, answered := 0, 0
	for _, k := range apiVersions(t, b) {
		if k.ApiKey == 0 || k.ApiKey == 21 || k.ApiKey == 20 {
			continue // writes and deletions have their own tests; random ones could hit the victim only by name
		}
		for v := k.MinVersion; v <= k.MaxVersion; v++ {
			rc := dialRaw(t, b.KafkaAddr)
			var frame []byte
			frame = binary.BigEndian.AppendUint16(frame, uint16(k.ApiKey))
			frame = binary.BigEndian.AppendUint16(frame, uint16(v))
			frame = binary.BigEndian.AppendUint32(frame, 7)
			frame = binary.BigEndian.AppendUint16(frame, 0xffff) // null client id
			frame = append(frame, randomBytes(rng, rng.IntN(200))...)
			if err := rc.send(binary.BigEndian.AppendUint32(nil, uint32(len(frame)))); err != nil {
				t.Fatal(err)
			}
			_ = rc.send(frame)
			halfClose(rc)
			closed, got := rc.closedByBroker()
			if !closed {
				t.Fatalf("%s v%d with a random body: connection still open after %v", kmsg.NameForKey(k.ApiKey), v, opWaitMax)
			}
			sent++
			if got > 0 {
				answered++
			}
		}
	}
	t.Logf("%d random bodies behind valid headers: %d answered, the rest closed", sent, answered)
	if !b.Running() {
		t.Fatalf("the broker died on random bodies: %v", b.Exits())
	}
}

// apiVersions asks the broker for its advertised table.
func apiVersions(t *testing.T, b *Broker) []kmsg.ApiVersionsResponseApiKey {
	t.Helper()
	rc := dialRaw(t, b.KafkaAddr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "floe-itest", "1"
	resp, err := rc.roundTrip(req)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if av.ErrorCode != 0 || len(av.ApiKeys) == 0 {
		t.Fatalf("ApiVersions: error %d, %d keys", av.ErrorCode, len(av.ApiKeys))
	}
	return av.ApiKeys
}

// victimProduce is a well-formed Produce v7 of one batch to the victim.
func victimProduce(batch []byte) []byte {
	req := produceRequest(7, -1, victimTopic, 0, batch)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("floe-itest-raw")).AppendRequest(nil, req, 1)
}

func badTruncated(t *testing.T, b *Broker) {
	frame := victimProduce(plainBatch("never-1", "never-2"))
	for _, cut := range []int{1, 3, 4, 6, 10, 14, 30, len(frame) / 2, len(frame) - 1} {
		rc := dialRaw(t, b.KafkaAddr)
		if err := rc.send(frame[:cut]); err != nil {
			t.Fatal(err)
		}
		halfClose(rc)
		expectClosed(t, rc, fmt.Sprintf("produce frame cut to %d of %d bytes", cut, len(frame)))
	}
	// A size prefix that claims more than the frame holds, then silence:
	// the client is gone mid-frame.
	long := binary.BigEndian.AppendUint32(nil, uint32(len(frame)-4+100))
	rc := dialRaw(t, b.KafkaAddr)
	if err := rc.send(append(long, frame[4:]...)); err != nil {
		t.Fatal(err)
	}
	halfClose(rc)
	expectClosed(t, rc, "size prefix 100 bytes longer than the frame")
}

func badSizePrefix(t *testing.T, b *Broker) {
	for _, size := range []int32{-1, -1 << 31, 0, 3, 7, 100<<20 + 1, 1<<31 - 1} {
		rc := dialRaw(t, b.KafkaAddr)
		if err := rc.send(binary.BigEndian.AppendUint32(nil, uint32(size))); err != nil {
			t.Fatal(err)
		}
		if size >= 0 && size < 8 {
			// Too short to hold a header: send what it claims, then the
			// broker must refuse it without waiting for more.
			_ = rc.send(make([]byte, size))
		}
		// No half-close: the broker must close on the prefix alone rather
		// than wait for (or allocate) the body.
		expectClosed(t, rc, fmt.Sprintf("size prefix %d", size))
	}
}

// rawFrame builds a frame with the given header and body.
func rawFrame(key, version int16, body []byte) []byte {
	var f []byte
	f = binary.BigEndian.AppendUint16(f, uint16(key))
	f = binary.BigEndian.AppendUint16(f, uint16(version))
	f = binary.BigEndian.AppendUint32(f, 1)
	f = binary.BigEndian.AppendUint16(f, 0xffff)
	f = append(f, body...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(f))), f...)
}

func badAPIKey(t *testing.T, b *Broker) {
	advertised := map[int16]bool{}
	for _, k := range apiVersions(t, b) {
		advertised[k.ApiKey] = true
	}
	keys := []int16{-1, 999, 32767, kmsg.MaxKey + 1}
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		if !advertised[k] && len(keys) < 10 {
			keys = append(keys, k) // known to kmsg, not served
		}
	}
	for _, key := range keys {
		rc := dialRaw(t, b.KafkaAddr)
		if err := rc.send(rawFrame(key, 0, make([]byte, 16))); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, rc, fmt.Sprintf("api key %d", key))
	}
}

func badVersions(t *testing.T, b *Broker) {
	byKey := map[int16]kmsg.ApiVersionsResponseApiKey{}
	for _, k := range apiVersions(t, b) {
		byKey[k.ApiKey] = k
	}
	// Above and below each served range: closed.
	for _, key := range []int16{0, 1, 2, 3, 19, 22} {
		r := byKey[key]
		for _, v := range []int16{r.MaxVersion + 1, r.MinVersion - 1, 999} {
			if v < 0 {
				continue
			}
			rc := dialRaw(t, b.KafkaAddr)
			req := kmsg.RequestForKey(key)
			req.SetVersion(min(v, req.MaxVersion()))
			body := req.AppendTo(nil)
			if err := rc.send(rawFrame(key, v, body)); err != nil {
				t.Fatal(err)
			}
			expectClosed(t, rc, fmt.Sprintf("%s v%d (served v%d-v%d)", kmsg.NameForKey(key), v, r.MinVersion, r.MaxVersion))
		}
	}

	// ApiVersions newer than served: a v0 answer with UNSUPPORTED_VERSION
	// and ApiVersions' own range, then the connection keeps working.
	rc := dialRaw(t, b.KafkaAddr)
	if err := rc.send(rawFrame(18, 99, []byte{1, 2, 3})); err != nil {
		t.Fatal(err)
	}
	body, err := rc.readResponse(1)
	if err != nil {
		t.Fatalf("ApiVersions v99: %v", err)
	}
	v0 := kmsg.NewPtrApiVersionsResponse()
	if err := v0.ReadFrom(body); err != nil {
		t.Fatalf("ApiVersions v99: answer is not a v0 response: %v", err)
	}
	has18 := false
	for _, k := range v0.ApiKeys {
		has18 = has18 || k.ApiKey == 18
	}
	if v0.ErrorCode != kerr.UnsupportedVersion.Code || !has18 {
		t.Fatalf("ApiVersions v99: error %d, ApiVersions listed %v; want UNSUPPORTED_VERSION and key 18", v0.ErrorCode, has18)
	}
	rc.corr = 1
	expectUsable(t, rc, "after ApiVersions v99")

	// Produce v0-2 are advertised (librdkafka needs it to compress) but
	// predate the v2 batch format: UNSUPPORTED_VERSION per partition.
	if byKey[0].MinVersion <= 2 {
		rc := dialRaw(t, b.KafkaAddr)
		code, _ := rc.produceRaw(2, victimTopic, 0, plainBatch("never-v2"))
		if code != kerr.UnsupportedVersion.Code {
			t.Fatalf("Produce v2: %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(code))
		}
		expectUsable(t, rc, "after Produce v2")
	}
}

// expectUsable checks that rc still serves a request (ApiVersions v3).
func expectUsable(t *testing.T, rc *rawConn, when string) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "floe-itest", "1"
	resp, err := rc.roundTrip(req)
	if err != nil {
		t.Fatalf("%s: the connection no longer serves: %v", when, err)
	}
	if code := resp.(*kmsg.ApiVersionsResponse).ErrorCode; code != 0 {
		t.Fatalf("%s: ApiVersions v3 answered %v", when, kerr.ErrorForCode(code))
	}
}

// badBatches produces batches that lie. CRC damage is CORRUPT_MESSAGE;
// a CRC that matches over contents that lie is INVALID_RECORD. A length
// that does not match the bytes is refused with either: Kafka itself
// answers CORRUPT_MESSAGE or INVALID_RECORD depending on how the length
// lies (no batch found, or more than one).
func badBatches(t *testing.T, b *Broker) {
	good := plainBatch("never-a", "never-b", "never-c")
	corrupt, invalid := []int16{kerr.CorruptMessage.Code}, []int16{kerr.InvalidRecord.Code}
	either := []int16{kerr.CorruptMessage.Code, kerr.InvalidRecord.Code}
	edit := func(f func(b []byte) []byte, refixCRC bool) []byte {
		out := f(append([]byte(nil), good...))
		if refixCRC && len(out) >= 61 {
			fixCRC(out)
		}
		return out
	}
	put32 := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint32(b[off:], v); return b }
	}
	cases := []struct {
		what  string
		batch []byte
		codes []int16
	}{
		{"flipped payload byte", edit(func(b []byte) []byte { b[len(b)-3] ^= 0x40; return b }, false), corrupt},
		{"wrong crc field", edit(func(b []byte) []byte { b[17] ^= 1; return b }, false), corrupt},
		{"flipped header byte under the crc", edit(func(b []byte) []byte { b[30] ^= 1; return b }, false), corrupt},
		{"batch length +1", edit(put32(8, uint32(len(good)-12+1)), false), either},
		{"batch length -1", edit(put32(8, uint32(len(good)-12-1)), false), either},
		{"batch length huge", edit(put32(8, 1<<30), false), either},
		{"last byte cut", good[:len(good)-1], either},
		{"header only", good[:40], either},
		{"bad magic", edit(func(b []byte) []byte { b[16] = 7; return b }, true), either},
		{"unknown codec 6", edit(func(b []byte) []byte { b[22] |= 6; return b }, true), corrupt},
		{"record count lies", edit(put32(57, 5), true), invalid},
		{"last offset delta lies", edit(put32(23, 9), true), invalid},
		{"control bit", edit(func(b []byte) []byte { b[22] |= 0x20; return b }, true), invalid},
		{"good batch then a corrupt one", append(append([]byte(nil), good...), edit(func(b []byte) []byte { b[70] ^= 1; return b }, false)...), either},
		{"good batch twice", append(append([]byte(nil), good...), good...), either},
		{"empty records", nil, either},
	}
	for _, c := range cases {
		rc := dialRaw(t, b.KafkaAddr)
		code, _ := rc.produceRaw(7, victimTopic, 0, c.batch)
		ok := false
		for _, want := range c.codes {
			ok = ok || code == want
		}
		if !ok {
			t.Errorf("%s: answered %v, want one of %v", c.what, kerr.ErrorForCode(code), c.codes)
			continue
		}
		t.Logf("%s: %s", c.what, kerr.ErrorForCode(code).(*kerr.Error).Message)
		expectUsable(t, rc, c.what)
	}
}
