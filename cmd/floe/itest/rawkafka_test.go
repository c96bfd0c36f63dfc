package itest

// Raw Kafka: hand-built record batches and requests sent over a plain TCP
// connection, for the tests that must send what no client would.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// batchSpec describes one v2 record batch to build.
type batchSpec struct {
	values     [][]byte
	producerID int64 // -1: not idempotent
	epoch      int16
	baseSeq    int32
	timeMs     int64
}

// plainBatch is an uncompressed, non-idempotent batch of values.
func plainBatch(values ...string) []byte {
	s := batchSpec{producerID: -1, epoch: -1, baseSeq: -1, timeMs: time.Now().UnixMilli()}
	for _, v := range values {
		s.values = append(s.values, []byte(v))
	}
	return s.build()
}

// build encodes the batch with a correct length and CRC-32C (layout in
// node/records/batch.go; docs/kafka-notes.md).
func (s batchSpec) build() []byte {
	var recs []byte
	for i, v := range s.values {
		var body []byte
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = binary.AppendVarint(body, -1)       // null key
		body = binary.AppendVarint(body, int64(len(v)))
		body = append(body, v...)
		body = binary.AppendVarint(body, 0) // no headers
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	b := make([]byte, 61, 61+len(recs))
	be := binary.BigEndian
	be.PutUint64(b[0:], 0)                        // base offset
	be.PutUint32(b[8:], uint32(49+len(recs)))     // batch length
	be.PutUint32(b[12:], 0xffffffff)              // partition leader epoch -1
	b[16] = 2                                     // magic
	be.PutUint16(b[21:], 0)                       // attributes
	be.PutUint32(b[23:], uint32(len(s.values)-1)) // last offset delta
	be.PutUint64(b[27:], uint64(s.timeMs))
	be.PutUint64(b[35:], uint64(s.timeMs))
	be.PutUint64(b[43:], uint64(s.producerID))
	be.PutUint16(b[51:], uint16(s.epoch))
	be.PutUint32(b[53:], uint32(s.baseSeq))
	be.PutUint32(b[57:], uint32(len(s.values)))
	b = append(b, recs...)
	fixCRC(b)
	return b
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fixCRC recomputes a batch's CRC over bytes 21..end.
func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
}

// rawConn is one plain TCP connection speaking Kafka frames.
type rawConn struct {
	t    testing.TB
	c    net.Conn
	corr int32
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, opWaitMax)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c}
}

// send writes bytes as they are.
func (r *rawConn) send(b []byte) error {
	r.c.SetWriteDeadline(time.Now().Add(opWaitMax))
	_, err := r.c.Write(b)
	return err
}

// sendRequest encodes req (at its set version) with the next correlation
// ID and writes it.
func (r *rawConn) sendRequest(req kmsg.Request) int32 {
	r.t.Helper()
	r.corr++
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("floe-itest-raw")).AppendRequest(nil, req, r.corr)
	if err := r.send(frame); err != nil {
		r.t.Fatalf("send %s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return r.corr
}

// roundTrip sends req and decodes its response.
func (r *rawConn) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	corr := r.sendRequest(req)
	resp := req.ResponseKind()
	body, err := r.readResponse(corr)
	if err != nil {
		return nil, err
	}
	if resp.IsFlexible() && req.Key() != 18 { // ApiVersions' header never has tags
		if len(body) == 0 {
			return nil, errors.New("response header cut short")
		}
		body = body[1:] // empty tag section
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// readResponse reads one response frame and checks its correlation ID; it
// returns the body after the correlation ID.
func (r *rawConn) readResponse(corr int32) ([]byte, error) {
	r.c.SetReadDeadline(time.Now().Add(opWaitMax))
	frame, err := readFrame(r.c)
	if err != nil {
		return nil, err
	}
	if len(frame) < 8 {
		return nil, fmt.Errorf("response frame of %d bytes", len(frame))
	}
	if got := int32(binary.BigEndian.Uint32(frame[4:8])); got != corr {
		return nil, fmt.Errorf("response has correlation ID %d, want %d", got, corr)
	}
	return frame[8:], nil
}

// closedByBroker waits (bounded) for the broker to close the connection,
// reading and discarding anything it sends first. It reports whether the
// connection ended (EOF or reset) rather than the wait running out, and
// how many bytes arrived before that.
func (r *rawConn) closedByBroker() (closed bool, got int) {
	r.c.SetReadDeadline(time.Now().Add(opWaitMax))
	buf := make([]byte, 4096)
	for {
		n, err := r.c.Read(buf)
		got += n
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return false, got
			}
			return true, got // EOF or reset: the broker closed it
		}
	}
}

// produceRequest is a Produce of one partition's records at version v.
func produceRequest(v int16, acks int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = v
	req.Acks = acks
	req.TimeoutMillis = 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produceRaw sends one produce and returns the partition's error code and
// base offset; a transport error fails the test.
func (r *rawConn) produceRaw(v int16, topic string, partition int32, records []byte) (code int16, base int64) {
	r.t.Helper()
	resp, err := r.roundTrip(produceRequest(v, -1, topic, partition, records))
	if err != nil {
		r.t.Fatalf("produce v%d: %v", v, err)
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		r.t.Fatalf("produce v%d: response has %d topics", v, len(pr.Topics))
	}
	p := pr.Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset
}
