package netx

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzWireDecode feeds arbitrary bytes to the inbound decoder: it must never
// panic, never return a frame above the cap, and read back exactly what the
// encoder wrote when the input is well formed.
func FuzzWireDecode(f *testing.F) {
	f.Add(appendHandshake(nil, 7, 2), []byte("hello"))
	f.Add([]byte("FLOE"), []byte{})
	f.Add([]byte{0, 0, 0, 22}, bytes.Repeat([]byte{0xff}, 40))
	f.Fuzz(func(t *testing.T, prefix, payload []byte) {
		const capBytes = 256
		// Arbitrary bytes: decode until the first error, without panicking.
		r := bytes.NewReader(append(prefix, payload...))
		if _, err := readHandshake(r, 2); err == nil {
			for {
				msg, err := readFrame(r, capBytes)
				if err != nil {
					break
				}
				if len(msg) > capBytes {
					t.Fatalf("frame of %d bytes passed a %d-byte cap", len(msg), capBytes)
				}
			}
		}
		// Well-formed: what is written is what is read.
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		w.Write(appendHandshake(nil, 9, 2))
		writeFrame(w, prefix)
		writeFrame(w, payload)
		w.Flush()
		r = bytes.NewReader(buf.Bytes())
		from, err := readHandshake(r, 2)
		if err != nil || from != 9 {
			t.Fatalf("handshake read back as %d, %v", from, err)
		}
		for _, want := range [][]byte{prefix, payload} {
			got, err := readFrame(r, 1<<20)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("frame read back as %q, %v; want %q", got, err, want)
			}
		}
		if _, err := readFrame(r, 1<<20); err != io.EOF {
			t.Fatalf("after the last frame: %v, want io.EOF", err)
		}
	})
}

func TestReadFrameTruncated(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	writeFrame(w, bytes.Repeat([]byte{1}, 3*frameChunkBytes))
	w.Flush()
	for _, cut := range []int{2, 100, frameChunkBytes + 7, buf.Len() - 1} {
		_, err := readFrame(bytes.NewReader(buf.Bytes()[:cut]), 4*frameChunkBytes)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("cut at %d: %v, want io.ErrUnexpectedEOF", cut, err)
		}
	}
}
