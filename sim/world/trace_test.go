package world

import (
	"fmt"
	"hash/fnv"
	"math"
	"testing"
	"time"
)

// TestTraceFastPaths checks that the tracer's fmt-free lines (addEv,
// addNode, addf, recvWhat, fnv32a) are byte for byte what add with the
// format they replace writes, so traces and their hashes are unchanged.
func TestTraceFastPaths(t *testing.T) {
	fast, slow := newTracer(3), newTracer(3) // small keep: buffers get reused
	ats := []time.Duration{0, 1, 999_999_999, time.Second, 73*time.Second + 5, -time.Millisecond}
	u64s := []uint64{0, 1, 9, 10, 12345, math.MaxUint32, math.MaxUint64}
	for _, at := range ats {
		for _, u := range u64s {
			fast.addEv(at, u)
			slow.add(at, "ev #%d", u)
			for _, suffix := range []string{"", ": gone", ": held"} {
				fast.addNode(at, u, u/3, "timer", suffix)
				slow.add(at, "n%d.%d %s%s", u, u/3, "timer", suffix)
			}
			fast.addf(at, []byte("world | "), "fault crash n%d: %v %s", u, at, "x")
			slow.add(at, "world | %s", fmt.Sprintf("fault crash n%d: %v %s", u, at, "x"))
			fast.addf(at, fmt.Appendf(nil, "n%d.%d | ", u, u+1), "%d%%", u)
			slow.add(at, "n%d.%d | %s", u, u+1, fmt.Sprintf("%d%%", u))
			if got, want := fast.lines[len(fast.lines)-1], slow.lines[len(slow.lines)-1]; string(got) != string(want) {
				t.Fatalf("line %q, add wrote %q", got, want)
			}
		}
	}
	if fast.total != slow.total || string(fast.sum.Sum(nil)) != string(slow.sum.Sum(nil)) {
		t.Fatalf("fast and fmt tracers differ: %d and %d lines, hashes %x and %x", fast.total, slow.total, fast.sum.Sum(nil), slow.sum.Sum(nil))
	}
	for _, msg := range [][]byte{nil, {0}, []byte("hello"), make([]byte, 1000)} {
		h := fnv.New32a()
		h.Write(msg)
		if got, want := fnv32a(msg), h.Sum32(); got != want {
			t.Fatalf("fnv32a(%q) = %08x, hash/fnv says %08x", msg, got, want)
		}
		for _, from := range u64s {
			for _, sum := range []uint32{0, 1, 0xabc, 0xdeadbeef, math.MaxUint32} {
				if got, want := recvWhat(from, len(msg), sum), fmt.Sprintf("recv n%d len=%d h=%08x", from, len(msg), sum); got != want {
					t.Fatalf("recvWhat = %q, want %q", got, want)
				}
			}
		}
	}
}
