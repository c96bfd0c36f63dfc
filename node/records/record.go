package records

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Record is one record of a batch. Key and Value are nil for a null key or
// value, and non-nil (possibly empty) otherwise.
type Record struct {
	Attributes     int8 // unused by Kafka; kept so records round-trip
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	Headers        []RecordHeader
}

// RecordHeader is one record header. Kafka header keys are never null.
type RecordHeader struct {
	Key   string
	Value []byte // nil = null
}

// recordBodyBytesMin is the smallest record body: attributes, then one-byte
// varints for timestampDelta, offsetDelta, keyLength, valueLength and
// headerCount.
const recordBodyBytesMin = 6

// DefaultDecompressedBytesMax bounds how far one batch's records may
// decompress (see ValidateOptions). Streaming keeps memory at one record, so
// the bound limits CPU spent on a decompression bomb; 256 MiB is far above
// what a client's batch of at most max.message.bytes holds in practice.
const DefaultDecompressedBytesMax = 256 << 20

// Records calls fn for each record of batch in order, decompressing as
// needed, and stops at the first error fn returns. The Record and every
// slice in it are valid only during the call: copy what you keep. batch
// must be one whole batch; its CRC is not checked (Verify or Validate do).
func Records(batch []byte, fn func(r Record) error) error {
	h, err := ParseBatch(batch)
	if err != nil {
		return err
	}
	w := walker{decodedBytesMax: DefaultDecompressedBytesMax, wantHeaders: true}
	return w.walk(batch, h, func(_ int, r *Record) error { return fn(*r) })
}

// walker visits the records of a batch: in place for uncompressed batches,
// through a pooled streaming decompressor otherwise.
type walker struct {
	decodedBytesMax int
	wantHeaders     bool // collect headers (Records) or only check them (Validate)
	decodedBytes    int  // set by walk: total size of the uncompressed records
}

// walk calls visit for each of the h.RecordCount records, then checks that
// nothing follows the last one.
func (w *walker) walk(b []byte, h Header, visit func(i int, r *Record) error) (err error) {
	if !h.Codec().Valid() {
		return corrupt(ErrCodec, h.Codec().String())
	}
	if h.Codec() == CodecNone {
		return w.walkSlice(b[HeaderBytes:], int(h.RecordCount), visit)
	}
	s := streams.Get().(*stream)
	defer func() {
		// Third-party decoders have panicked on hostile input before;
		// such a panic is a corrupt payload, not a crash. A panic from
		// visit (the caller's code) is not ours to hide.
		if r := recover(); r != nil {
			if s.visiting {
				panic(r)
			}
			err = corrupt(ErrDecompress, fmt.Sprintf("%v decoder panicked: %v", h.Codec(), r))
			return // the stream may be broken: not pooled
		}
		s.release()
	}()
	return s.walk(w, h.Codec(), b[HeaderBytes:], int(h.RecordCount), visit)
}

func (w *walker) walkSlice(recs []byte, count int, visit func(i int, r *Record) error) error {
	w.decodedBytes = len(recs)
	var r Record
	var hdrs []RecordHeader
	for i := 0; i < count; i++ {
		length, n := varint32(recs)
		if n <= 0 || length < recordBodyBytesMin || int(length) > len(recs)-n {
			return invalid(ErrRecords, i, fmt.Sprintf("record length %d with %d bytes left", length, len(recs)))
		}
		body := recs[n : n+int(length)]
		recs = recs[n+int(length):]
		var err error
		if hdrs, err = parseBody(body, &r, hdrs[:0], w.wantHeaders); err != nil {
			return invalid(ErrRecords, i, err.Error())
		}
		if err := visit(i, &r); err != nil {
			return err
		}
	}
	if len(recs) != 0 {
		return invalid(ErrRecords, -1, fmt.Sprintf("%d bytes follow the last of %d records", len(recs), count))
	}
	return nil
}

// stream reads records from a decompressed payload. Records are copied
// into scratch one at a time, so memory is one record, not one batch.
type stream struct {
	dec      decompressor
	limit    io.LimitedReader
	br       *bufio.Reader
	scratch  []byte
	hdrs     []RecordHeader
	bound    int  // decoded bytes allowed for this batch
	visiting bool // inside the caller's visit function
}

var streams = sync.Pool{New: func() any {
	return &stream{br: bufio.NewReaderSize(nil, 32<<10)}
}}

func (s *stream) release() {
	s.dec.release()
	s.limit = io.LimitedReader{}
	s.br.Reset(nil)
	if cap(s.scratch) > pooledBufferBytesMax {
		s.scratch = nil
	}
	clear(s.hdrs[:cap(s.hdrs)])
	s.hdrs = s.hdrs[:0]
	streams.Put(s)
}

func (s *stream) walk(w *walker, c Codec, payload []byte, count int, visit func(i int, r *Record) error) error {
	src, err := s.dec.open(c, payload, w.decodedBytesMax)
	if err != nil {
		return s.openErr(c, err)
	}
	// One byte past the bound is let through so that reaching it is seen.
	s.bound = w.decodedBytesMax
	s.limit = io.LimitedReader{R: src, N: int64(w.decodedBytesMax) + 1}
	s.br.Reset(&s.limit)
	var r Record
	for i := 0; i < count; i++ {
		body, err := s.next()
		if err != nil {
			return s.readErr(c, i, err)
		}
		if s.hdrs, err = parseBody(body, &r, s.hdrs[:0], w.wantHeaders); err != nil {
			return invalid(ErrRecords, i, err.Error())
		}
		s.visiting = true
		err = visit(i, &r)
		s.visiting = false
		if err != nil {
			return err
		}
	}
	if _, err := s.br.ReadByte(); err != io.EOF {
		if err != nil {
			return s.readErr(c, count, err)
		}
		return invalid(ErrRecords, -1, fmt.Sprintf("data follows the last of %d records", count))
	}
	if s.dec.out.err != nil { // a decoder may fail at its trailer, after the data
		return corrupt(ErrDecompress, fmt.Sprintf("%v: %v", c, s.dec.out.err))
	}
	w.decodedBytes = w.decodedBytesMax + 1 - int(s.limit.N)
	return nil
}

// next reads one record's body into scratch.
func (s *stream) next() ([]byte, error) {
	length, err := readVarint32(s.br)
	if err != nil {
		return nil, err
	}
	if length < recordBodyBytesMin {
		return nil, fmt.Errorf("record length %d", length)
	}
	if int64(length) > s.limit.N+int64(s.br.Buffered()) {
		return nil, errBound // the record cannot fit in what the bound leaves
	}
	return readGrowing(s.br, s.scratch[:0], int(length), &s.scratch)
}

// readGrowing reads n bytes into buf, growing it only as data arrives, so a
// record that lies about its length costs no more memory than its data.
func readGrowing(r io.Reader, buf []byte, n int, keep *[]byte) ([]byte, error) {
	for len(buf) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(n, max(2*cap(buf), 4<<10)))
			copy(grown, buf)
			buf = grown
			*keep = buf
		}
		m, err := io.ReadFull(r, buf[len(buf):min(n, cap(buf))])
		buf = buf[:len(buf)+m]
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

func (s *stream) openErr(c Codec, err error) error {
	if err == errBound {
		return &Error{Kind: KindTooLarge, Err: ErrDecompressedTooLarge, Record: -1, Detail: c.String()}
	}
	return corrupt(ErrDecompress, fmt.Sprintf("%v: %v", c, err))
}

// readErr classifies a failure to read record i: the decoder failed
// (corrupt), the bound was reached (too large), or the records ran out or
// lied about their lengths (invalid).
func (s *stream) readErr(c Codec, i int, err error) error {
	switch {
	case err == errBound || s.dec.out.err == errBound || s.limit.N <= 0:
		return &Error{Kind: KindTooLarge, Err: ErrDecompressedTooLarge, Record: -1,
			Detail: fmt.Sprintf("%v records pass %d bytes", c, s.bound)}
	case s.dec.out.err != nil:
		return corrupt(ErrDecompress, fmt.Sprintf("%v: %v", c, s.dec.out.err))
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return invalid(ErrRecords, i, "records end early")
	}
	return invalid(ErrRecords, i, err.Error())
}

// parseBody decodes a record body (everything after its length) into r.
// It must consume body exactly. Headers are appended to hdrs when want is
// set, and only checked otherwise; the grown slice is returned for reuse.
// It is the hot loop of Validate, so it reads by index with inlined
// one- and two-byte varint fast paths.
func parseBody(body []byte, r *Record, hdrs []RecordHeader, want bool) ([]RecordHeader, error) {
	if len(body) < recordBodyBytesMin {
		return hdrs, errShortRecord
	}
	r.Attributes = int8(body[0])
	pos := 1
	// The common one-byte varints are decoded inline here.
	if c := int64(body[1]); c < 0x80 {
		r.TimestampDelta, pos = c>>1^-(c&1), 2
	} else {
		r.TimestampDelta, pos = varlongAtSlow(body, pos)
	}
	if uint(pos) < uint(len(body)) && body[pos] < 0x80 {
		c := int32(body[pos])
		r.OffsetDelta, pos = c>>1^-(c&1), pos+1
	} else {
		r.OffsetDelta, pos = varintAtSlow(body, pos)
	}
	r.Key, pos = nullableAt(body, pos)
	r.Value, pos = nullableAt(body, pos)
	var n int32
	if uint(pos) < uint(len(body)) && body[pos] < 0x80 {
		c := int32(body[pos])
		n, pos = c>>1^-(c&1), pos+1
	} else {
		n, pos = varintAtSlow(body, pos)
	}
	if pos < 0 {
		return hdrs, errShortRecord
	}
	if n < 0 || int(n) > (len(body)-pos)/2 { // a header takes at least two bytes
		return hdrs, fmt.Errorf("header count %d", n)
	}
	for j := int32(0); j < n; j++ {
		var kl int32
		kl, pos = varintAt(body, pos)
		if pos < 0 || kl < 0 || int(kl) > len(body)-pos {
			return hdrs, fmt.Errorf("header %d: bad key", j)
		}
		k := body[pos : pos+int(kl)]
		var v []byte
		v, pos = nullableAt(body, pos+int(kl))
		if pos < 0 {
			return hdrs, fmt.Errorf("header %d: bad value", j)
		}
		if want {
			hdrs = append(hdrs, RecordHeader{Key: string(k), Value: v})
		}
	}
	if pos != len(body) {
		if pos < 0 {
			return hdrs, errShortRecord
		}
		return hdrs, fmt.Errorf("%d bytes follow the record's headers", len(body)-pos)
	}
	r.Headers = nil
	if want && n > 0 {
		r.Headers = hdrs
	}
	return hdrs, nil
}

var errShortRecord = errors.New("record body ends inside a field, or a field is malformed")

// varintAt decodes the zigzag varint at b[pos:] and returns it with the
// position after it; pos < 0 on entry or return means failure, which then
// propagates through later calls. The one-byte case is inlined.
func varintAt(b []byte, pos int) (int32, int) {
	if uint(pos) < uint(len(b)) && b[pos] < 0x80 {
		c := int32(b[pos])
		return c>>1 ^ -(c & 1), pos + 1
	}
	return varintAtSlow(b, pos)
}

func varintAtSlow(b []byte, pos int) (int32, int) {
	if pos < 0 || pos >= len(b) {
		return 0, -1
	}
	v, n := varint32(b[pos:])
	if n <= 0 {
		return 0, -1
	}
	return v, pos + n
}

func varlongAtSlow(b []byte, pos int) (int64, int) {
	if pos < 0 || pos >= len(b) {
		return 0, -1
	}
	u, n := binary.Uvarint(b[pos:])
	if n <= 0 {
		return 0, -1
	}
	return int64(u>>1) ^ -int64(u&1), pos + n
}

// nullableAt reads a varint length (-1 = null) and that many bytes. The
// returned slice's capacity ends with it.
func nullableAt(b []byte, pos int) ([]byte, int) {
	n, pos := varintAt(b, pos)
	if pos < 0 || n < -1 || int(n) > len(b)-pos {
		return nil, -1
	}
	if n == -1 {
		return nil, pos
	}
	end := pos + int(n)
	return b[pos:end:end], end
}

// varint32 decodes a zigzag varint of at most 5 bytes whose value fits 32
// bits, as Kafka's readVarint requires. n <= 0 means malformed or short.
func varint32(b []byte) (int32, int) {
	if len(b) > 0 && b[0] < 0x80 { // fast path: one byte
		u := uint32(b[0])
		return int32(u>>1) ^ -int32(u&1), 1
	}
	u, n := binary.Uvarint(b)
	if n <= 0 || n > 5 || u > 0xFFFFFFFF {
		return 0, -1
	}
	return int32(uint32(u)>>1) ^ -int32(u&1), n
}

// readVarint32 is varint32 over a stream.
func readVarint32(r io.ByteReader) (int32, error) {
	var u uint64
	for i := 0; i < 5; i++ {
		c, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if u > 0xFFFFFFFF {
				break
			}
			return int32(uint32(u)>>1) ^ -int32(u&1), nil
		}
	}
	return 0, fmt.Errorf("bad varint")
}
