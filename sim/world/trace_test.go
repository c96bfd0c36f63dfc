package world

import (
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"math"
	"testing"
	"time"
)

// TestTraceFastPaths checks that the tracer's lines, and those it builds
// without fmt (addEv, addNode, addf, recvWhat, fnv32a, the time text
// reused within an instant), are byte for byte what fmt writes for the
// formats they replace, and that the trace hash covers exactly those
// lines, so traces and their hashes are unchanged.
func TestTraceFastPaths(t *testing.T) {
	tr := newTracer(3) // a small keep: line buffers get reused
	var want []string
	check := func(line string) {
		t.Helper()
		want = append(want, line)
		if got := string(tr.lines[len(tr.lines)-1]); got != line {
			t.Fatalf("line %q, want %q", got, line)
		}
	}
	ats := []time.Duration{0, 1, 0, 999_999_999, time.Second, time.Second, 73*time.Second + 5, -time.Millisecond, 1}
	u64s := []uint64{0, 1, 9, 10, 12345, math.MaxUint32, math.MaxUint64}
	for _, at := range ats {
		ts := fmt.Sprintf("%d.%09d ", at/time.Second, at%time.Second)
		for _, u := range u64s {
			tr.addEv(at, u)
			check(ts + fmt.Sprintf("ev #%d", u))
			for _, suffix := range []string{"", ": gone", ": held"} {
				tr.addNode(at, u, u/3, "timer", suffix)
				check(ts + fmt.Sprintf("n%d.%d %s%s", u, u/3, "timer", suffix))
			}
			tr.addf(at, []byte("world | "), "fault crash n%d: %v %s", u, at, "x")
			check(ts + "world | " + fmt.Sprintf("fault crash n%d: %v %s", u, at, "x"))
			tr.addf(at, fmt.Appendf(nil, "n%d.%d | ", u, u+1), "%d%%", u)
			check(ts + fmt.Sprintf("n%d.%d | %s", u, u+1, fmt.Sprintf("%d%%", u)))
			tr.add(at, "n%d %s: down", u, "call")
			check(ts + fmt.Sprintf("n%d %s: down", u, "call"))
		}
	}
	sum := sha256.New()
	for _, l := range want {
		sum.Write([]byte(l + "\n"))
	}
	if tr.total != len(want) || string(tr.sum.Sum(nil)) != string(sum.Sum(nil)) {
		t.Fatalf("tracer: %d lines, hash %x; want %d lines, hash %x", tr.total, tr.sum.Sum(nil), len(want), sum.Sum(nil))
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
