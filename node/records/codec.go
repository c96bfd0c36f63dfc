package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is a batch's compression codec (attributes bits 0-2).
type Codec int8

const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLz4    Codec = 3
	CodecZstd   Codec = 4
)

// Valid reports whether c is one of the five codecs Kafka defines.
func (c Codec) Valid() bool { return c >= CodecNone && c <= CodecZstd }

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLz4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// xerialMagic opens snappy payloads framed the way the Java client's
// snappy-java SnappyOutputStream frames them: this magic, a version int32
// and a compatible-version int32, then chunks of (int32 length, raw snappy
// block). Other clients (franz-go before 1.20, librdkafka, sarama) may send
// one raw snappy block instead; decoders tell them apart by this prefix.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderBytes = 16
	xerialChunkBytes  = 32 << 10 // what snappy-java writes
)

// xerialFramed tells a xerial-framed snappy payload from a raw block.
func xerialFramed(payload []byte) bool {
	return len(payload) >= xerialHeaderBytes && bytes.HasPrefix(payload, xerialMagic)
}

// zstdWindowBytesMax bounds the zstd window a payload may ask for: the
// reference decoder's default limit (ZSTD_WINDOWLOG_LIMIT_DEFAULT = 27), so
// whatever a Kafka client can read, Floe accepts, and nothing larger is
// allocated for a hostile frame.
const zstdWindowBytesMax = 1 << 27

// errReader remembers the first error other than io.EOF that its reader
// returns, so a truncated record can be told apart from a decoder failure.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

// decompressor turns a compressed records payload into a stream. One is
// pooled per use; decoders are created on first use and reused, since a
// zstd or lz4 decoder costs far more to build than to reset.
type decompressor struct {
	src   bytes.Reader
	gz    *gzip.Reader
	lz    *lz4.Reader
	zs    *zstd.Decoder
	xr    xerialReader
	block []byte // raw snappy output
	out   errReader
}

// open returns a reader over the decompressed payload. decodedBytesMax
// bounds snappy's up-front allocations; the caller bounds the stream.
func (d *decompressor) open(c Codec, payload []byte, decodedBytesMax int) (*errReader, error) {
	d.src.Reset(payload)
	var r io.Reader
	switch c {
	case CodecGzip:
		if d.gz == nil {
			d.gz = new(gzip.Reader)
		}
		if err := d.gz.Reset(&d.src); err != nil {
			return nil, err
		}
		r = d.gz
	case CodecSnappy:
		sr, err := d.snappy(payload, decodedBytesMax)
		if err != nil {
			return nil, err
		}
		r = sr
	case CodecLz4:
		if d.lz == nil {
			d.lz = lz4.NewReader(nil)
		}
		d.lz.Reset(&d.src)
		r = d.lz
	case CodecZstd:
		if d.zs == nil {
			zs, err := zstd.NewReader(nil,
				zstd.WithDecoderConcurrency(1), // synchronous: no goroutines
				zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(zstdWindowBytesMax))
			if err != nil {
				return nil, err
			}
			d.zs = zs
		}
		if err := d.zs.Reset(&d.src); err != nil {
			return nil, err
		}
		r = d.zs
	default:
		return nil, fmt.Errorf("codec %d has no decompressor", c)
	}
	d.out = errReader{r: r}
	return &d.out, nil
}

// snappy opens either snappy framing. Blocks are decoded by the strict
// decoder: the s2 decoder also accepts s2 extensions that Kafka clients'
// snappy decoders reject, and Floe must not store what consumers cannot read.
func (d *decompressor) snappy(payload []byte, decodedBytesMax int) (io.Reader, error) {
	if xerialFramed(payload) {
		d.xr.reset(payload[xerialHeaderBytes:], decodedBytesMax)
		return &d.xr, nil
	}
	n, err := snappy.DecodedLen(payload)
	if err != nil {
		return nil, err
	}
	if n > decodedBytesMax {
		return nil, errBound
	}
	d.block, err = snappy.DecodeStrict(d.block[:0:cap(d.block)], payload)
	if err != nil {
		return nil, err
	}
	d.src.Reset(d.block)
	return &d.src, nil
}

// release drops references to the payload and oversized buffers before the
// decompressor goes back to its pool.
func (d *decompressor) release() {
	d.src.Reset(nil)
	d.out = errReader{}
	d.xr.reset(nil, 0)
	if cap(d.block) > pooledBufferBytesMax {
		d.block = nil
	}
	if cap(d.xr.out) > pooledBufferBytesMax {
		d.xr.out = nil
	}
	if d.zs != nil {
		_ = d.zs.Reset(nil)
	}
}

// errBound reports a payload that claims to decode past the bound.
var errBound = errors.New("decoded size exceeds the bound")

var errXerial = errors.New("malformed xerial snappy framing")

// xerialReader decodes xerial-framed snappy one chunk at a time, so memory
// stays at one chunk whatever the payload's size.
type xerialReader struct {
	src    []byte // framed chunks not yet decoded
	out    []byte // the current decoded chunk
	pos    int    // read position in out
	budget int    // decoded bytes still allowed
}

func (x *xerialReader) reset(chunks []byte, budget int) {
	x.src, x.out, x.pos, x.budget = chunks, x.out[:0], 0, budget
}

func (x *xerialReader) Read(p []byte) (int, error) {
	for x.pos == len(x.out) {
		if len(x.src) == 0 {
			return 0, io.EOF
		}
		if err := x.nextChunk(); err != nil {
			return 0, err
		}
	}
	n := copy(p, x.out[x.pos:])
	x.pos += n
	return n, nil
}

func (x *xerialReader) nextChunk() error {
	if len(x.src) < 4 {
		return errXerial
	}
	size := uint64(binary.BigEndian.Uint32(x.src))
	if size > uint64(len(x.src)-4) {
		return errXerial
	}
	chunk := x.src[4 : 4+size]
	x.src = x.src[4+size:]
	n, err := snappy.DecodedLen(chunk)
	if err != nil {
		return err
	}
	if n > x.budget {
		return errBound
	}
	x.budget -= n
	x.out, err = snappy.DecodeStrict(x.out[:0:cap(x.out)], chunk)
	x.pos = 0
	return err
}

// pooledBufferBytesMax is the largest buffer kept in a pooled object; a
// rare huge batch should not pin its memory forever.
const pooledBufferBytesMax = 1 << 20

// compress appends the compressed form of raw to dst.
func compress(dst []byte, c Codec, raw []byte) []byte {
	switch c {
	case CodecNone:
		return append(dst, raw...)
	case CodecGzip:
		buf := bytes.NewBuffer(dst)
		w := gzipWriters.Get().(*gzip.Writer)
		w.Reset(buf)
		_, _ = w.Write(raw) // a bytes.Buffer never fails
		_ = w.Close()
		gzipWriters.Put(w)
		return buf.Bytes()
	case CodecSnappy:
		return appendXerial(dst, raw)
	case CodecLz4:
		buf := bytes.NewBuffer(dst)
		w := lz4Writers.Get().(*lz4.Writer)
		w.Reset(buf)
		_, _ = w.Write(raw)
		_ = w.Close()
		lz4Writers.Put(w)
		return buf.Bytes()
	case CodecZstd:
		return zstdEncoder().EncodeAll(raw, dst)
	}
	panic(fmt.Sprintf("records: compress with invalid %v", c))
}

// appendXerial frames raw as snappy-java does, which every Kafka client
// decodes (a raw block is not read by some old Java consumers).
func appendXerial(dst, raw []byte) []byte {
	dst = append(dst, xerialMagic...)
	dst = binary.BigEndian.AppendUint32(dst, 1) // version
	dst = binary.BigEndian.AppendUint32(dst, 1) // compatible version
	for len(raw) > 0 {
		n := min(len(raw), xerialChunkBytes)
		at := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		dst = append(dst, snappy.Encode(nil, raw[:n])...)
		binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
		raw = raw[n:]
	}
	return dst
}

var (
	gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}
	lz4Writers  = sync.Pool{New: func() any { return lz4.NewWriter(nil) }}

	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
)

// zstdEncoder is shared: EncodeAll is safe for concurrent use, and with
// concurrency 1 the encoder starts no goroutines.
func zstdEncoder() *zstd.Encoder {
	zstdOnce.Do(func() {
		zstdEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	})
	return zstdEnc
}
