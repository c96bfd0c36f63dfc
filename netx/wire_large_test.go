package netx

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

// TestReadFrameLarge: frames of every size around the chunk boundaries
// and far beyond read back exactly, and a large frame is held in at most
// about twice the bytes received so far (the reader's bound against a
// header that lies about the length).
func TestReadFrameLarge(t *testing.T) {
	for _, n := range []int{frameChunkBytes - 1, frameChunkBytes, frameChunkBytes + 1,
		2*frameChunkBytes - 1, 2 * frameChunkBytes, 3*frameChunkBytes + 5, 24 << 20, 24<<20 + 1} {
		payload := make([]byte, n)
		for i := range payload {
			payload[i] = byte(i * 7 >> 3)
		}
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		writeFrame(w, payload)
		writeFrame(w, []byte("next"))
		w.Flush()
		r := bytes.NewReader(buf.Bytes())
		got, err := readFrame(r, 64<<20)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("%d bytes: read back %d bytes, %v", n, len(got), err)
		}
		if cap(got) > max(2*n, frameChunkBytes) {
			t.Fatalf("%d bytes: held in %d", n, cap(got))
		}
		if next, err := readFrame(r, 64<<20); err != nil || string(next) != "next" {
			t.Fatalf("%d bytes: the frame after read as %q, %v", n, next, err)
		}
		if _, err := readFrame(r, 64<<20); err != io.EOF {
			t.Fatalf("%d bytes: %v at the end", n, err)
		}
	}
}

// BenchmarkReadFrame24MiB: a follower's reader taking one 24 MiB frame
// (a busy leader's pass, consensus BenchmarkHostFlushAppends). B/op is
// what growing the frame 1 MiB at a time allocates.
//
//	go test ./netx -run XXX -bench ReadFrame24MiB -benchmem
func BenchmarkReadFrame24MiB(b *testing.B) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	writeFrame(w, make([]byte, 24<<20))
	w.Flush()
	b.ReportAllocs()
	b.SetBytes(24 << 20)
	for i := 0; i < b.N; i++ {
		if _, err := readFrame(bytes.NewReader(buf.Bytes()), 64<<20); err != nil {
			b.Fatal(err)
		}
	}
}
