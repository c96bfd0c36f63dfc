package kafka

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkRoundTrip measures small requests (Metadata v9, no topics)
// that the handler answers at once, over loopback: one at a time, and
// pipelined with a window of requests in flight. It reports requests per
// second.
func BenchmarkRoundTrip(b *testing.B) {
	req := metadataV(9)
	resp := req.ResponseKind() // shared: the server only reads it
	h := HandlerFunc(func(_ *ConnInfo, _ kmsg.Request, respond func(kmsg.Response)) { respond(resp) })
	_, addr := startServer(b, Config{Versions: testVersions()}, h)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)
	for _, window := range []int{1, 16, 128} {
		b.Run("inflight="+strconv.Itoa(window), func(b *testing.B) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			bw, br := bufio.NewWriter(nc), bufio.NewReader(nc)
			slots := make(chan struct{}, window)
			done := make(chan error, 1)
			go func() {
				var size [4]byte
				for range b.N {
					if _, err := io.ReadFull(br, size[:]); err != nil {
						done <- err
						return
					}
					if _, err := br.Discard(int(binary.BigEndian.Uint32(size[:]))); err != nil {
						done <- err
						return
					}
					<-slots
				}
				done <- nil
			}()
			b.ResetTimer()
			for range b.N {
				select {
				case slots <- struct{}{}:
				default: // window full: send what is buffered, then wait
					if err := bw.Flush(); err != nil {
						b.Fatal(err)
					}
					slots <- struct{}{}
				}
				if _, err := bw.Write(frame); err != nil {
					b.Fatal(err)
				}
			}
			if err := bw.Flush(); err != nil {
				b.Fatal(err)
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}
