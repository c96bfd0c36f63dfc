package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Kafka record batch codecs (attributes bits 0-2). The log stores batches as
// the client compressed them; only compaction and timestamp lookups inside a
// batch decompress. Decompression is capped (decompressedBytesMax) so a
// hostile batch cannot balloon memory.

const (
	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecLZ4    = 3
	codecZstd   = 4
)

var errCodec = errors.New("logstore: bad compressed records")

var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// zstd encoders and decoders are costly to build and safe for concurrent
// EncodeAll/DecodeAll: share one of each. Concurrency 1 keeps them from
// starting goroutines.
var zstdCodec = sync.OnceValues(func() (*zstd.Encoder, *zstd.Decoder) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(err) // only bad options fail, and these are constants
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(decompressedBytesMax))
	if err != nil {
		panic(err)
	}
	return enc, dec
})

// decompressedBytesMax caps what one batch may decompress to.
const decompressedBytesMax = 256 << 20

// decompress returns the decompressed records of codec.
func decompress(codec int, src []byte) ([]byte, error) {
	switch codec {
	case codecNone:
		return src, nil
	case codecGzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", errCodec, err)
		}
		return readCapped(zr)
	case codecSnappy:
		if !bytes.HasPrefix(src, xerialMagic) {
			if n, err := s2.DecodedLen(src); err != nil || n > decompressedBytesMax {
				return nil, fmt.Errorf("%w: snappy length", errCodec)
			}
		}
		out, err := xerial.Decode(src)
		if err != nil || len(out) > decompressedBytesMax {
			return nil, fmt.Errorf("%w: snappy: %v", errCodec, err)
		}
		return out, nil
	case codecLZ4:
		return readCapped(lz4.NewReader(bytes.NewReader(src)))
	case codecZstd:
		_, dec := zstdCodec()
		out, err := dec.DecodeAll(src, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", errCodec, err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: unknown codec %d", errCodec, codec)
}

func readCapped(r io.Reader) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, decompressedBytesMax+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errCodec, err)
	}
	if len(out) > decompressedBytesMax {
		return nil, fmt.Errorf("%w: decompresses past %d bytes", errCodec, decompressedBytesMax)
	}
	return out, nil
}

// compress compresses records with codec. For snappy, framed says whether
// to use the xerial framing (what the Java client writes) or a raw block
// (what franz-go writes): the cleaner keeps what the producer chose.
func compress(codec int, src []byte, framed bool) ([]byte, error) {
	switch codec {
	case codecNone:
		return src, nil
	case codecGzip:
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(src); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case codecSnappy:
		if framed {
			return xerial.Encode(nil, src), nil
		}
		return s2.EncodeSnappy(nil, src), nil
	case codecLZ4:
		var buf bytes.Buffer
		zw := lz4.NewWriter(&buf)
		if _, err := zw.Write(src); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case codecZstd:
		enc, _ := zstdCodec()
		return enc.EncodeAll(src, nil), nil
	}
	return nil, fmt.Errorf("%w: unknown codec %d", errCodec, codec)
}
