package world

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"time"
)

// tracer records the run as lines of text. Each line starts with the
// simulated time in seconds (fixed width, nanosecond precision), so traces
// of two runs diff line by line.
//
// Line shapes:
//
//	0.010000000 ev #12                      a scheduler event runs (time, seq)
//	0.010000000 n2.1 timer                  it is incarnation 1 of node 2's timer
//	0.010000000 n2.1 recv n1 len=9 h=1a2b3c4d   a delivery (sender, size, FNV-32a)
//	0.010000000 n2.1 ...: held | gone       paused node / dead incarnation
//	0.010000000 n2.1 | text                 the node's own Tracef
//	0.010000000 world | fault crash n2.1    a fault, or a world-level line
type tracer struct {
	// lines are the last lines added: all of them, or at least keep when
	// keep > 0 (older ones are dropped in bulk, and their buffers reused:
	// a run adds a line per event, so the tracer allocates nothing once
	// it has 2*keep lines).
	lines [][]byte
	keep  int
	total int
	// sum hashes every line followed by "\n", as it is added.
	sum hash.Hash
}

func newTracer(keep int) tracer { return tracer{sum: sha256.New(), keep: keep} }

func (t *tracer) add(at time.Duration, format string, args ...any) {
	if t.keep > 0 && len(t.lines) >= 2*t.keep {
		// Keep the last keep lines; the dropped lines' buffers go after
		// them, to be written over.
		n := len(t.lines) - t.keep
		tail := slices.Clone(t.lines[:n])
		copy(t.lines, t.lines[n:])
		copy(t.lines[t.keep:], tail)
		t.lines = t.lines[:t.keep]
	}
	var line []byte
	if n := len(t.lines); n < cap(t.lines) {
		line = t.lines[:n+1][n][:0] // a dropped line's buffer
	}
	line = appendTime(line, at)
	line = append(line, ' ')
	line = fmt.Appendf(line, format, args...)
	t.lines = append(t.lines, line)
	t.total++
	t.sum.Write(line)
	t.sum.Write([]byte{'\n'})
}

// appendTime appends a simulated time as seconds.nanoseconds, fixed
// width after the point ("%d.%09d", without fmt's cost per line).
func appendTime(b []byte, d time.Duration) []byte {
	if d < 0 {
		return fmt.Appendf(b, "%d.%09d", d/time.Second, d%time.Second)
	}
	b = strconv.AppendInt(b, int64(d/time.Second), 10)
	b = append(b, '.')
	ns := int64(d % time.Second)
	for div := int64(100_000_000); div > 0; div /= 10 {
		b = append(b, byte('0'+ns/div%10))
	}
	return b
}

// Tracef adds a world-level line to the trace: test drivers use it to mark
// phases and the choices their seed made.
func (w *World) Tracef(format string, args ...any) {
	w.trace.add(w.clock.Monotonic(), "world | %s", fmt.Sprintf(format, args...))
}

// Trace returns a copy of the trace lines kept so far (all of them unless
// Config.TraceKeep bounds them).
func (w *World) Trace() []string {
	out := make([]string, len(w.trace.lines))
	for i, l := range w.trace.lines {
		out[i] = string(l)
	}
	return out
}

// TraceHash returns the SHA-256 of the trace so far, in hex.
func (w *World) TraceHash() string { return hex.EncodeToString(w.trace.sum.Sum(nil)) }

// TraceLen returns the number of trace lines so far, kept or not.
func (w *World) TraceLen() int { return w.trace.total }

// FirstDiff describes the first line where two traces differ, for a test
// that ran a seed twice.
func FirstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("line %d:\n\t%s\n\t%s", i+1, a[i], b[i])
		}
	}
	return fmt.Sprintf("one trace is a prefix of the other (%d vs %d lines)", len(a), len(b))
}
