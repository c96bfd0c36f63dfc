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
	// timeAt and timeText: the last time appendAt formatted, and its
	// text (an instant's events add several lines at one time).
	timeAt   time.Duration
	timeText []byte
}

func newTracer(keep int) tracer { return tracer{sum: sha256.New(), keep: keep} }

func (t *tracer) add(at time.Duration, format string, args ...any) {
	line := t.appendAt(t.buffer(), at)
	line = append(line, ' ')
	line = fmt.Appendf(line, format, args...)
	t.push(line)
}

// buffer returns an empty buffer for the next line: a dropped line's
// when there is one.
func (t *tracer) buffer() []byte {
	if t.keep > 0 && len(t.lines) >= 2*t.keep {
		// Keep the last keep lines; the dropped lines' buffers go after
		// them, to be written over.
		n := len(t.lines) - t.keep
		tail := slices.Clone(t.lines[:n])
		copy(t.lines, t.lines[n:])
		copy(t.lines[t.keep:], tail)
		t.lines = t.lines[:t.keep]
	}
	if n := len(t.lines); n < cap(t.lines) {
		return t.lines[:n+1][n][:0]
	}
	return nil
}

// push adds a line built in a buffer from buffer.
func (t *tracer) push(line []byte) {
	line = append(line, '\n')
	t.sum.Write(line)
	t.lines = append(t.lines, line[:len(line)-1])
	t.total++
}

// appendAt is appendTime(b, at), reusing the last time's text when at is
// the same.
func (t *tracer) appendAt(b []byte, at time.Duration) []byte {
	if t.timeText == nil || at != t.timeAt {
		t.timeAt, t.timeText = at, appendTime(t.timeText[:0], at)
	}
	return append(b, t.timeText...)
}

// The lines below are added once per event or more: they are built
// without fmt, byte for byte as add would format them (TestTraceFastPaths).

// addEv adds "ev #seq" (add(at, "ev #%d", seq)).
func (t *tracer) addEv(at time.Duration, seq uint64) {
	line := t.appendAt(t.buffer(), at)
	line = append(line, " ev #"...)
	line = strconv.AppendUint(line, seq, 10)
	t.push(line)
}

// addNode adds "n<id>.<inc> <what><suffix>" (add(at, "n%d.%d %s%s", id,
// inc, what, suffix)).
func (t *tracer) addNode(at time.Duration, id, inc uint64, what, suffix string) {
	line := t.appendAt(t.buffer(), at)
	line = append(line, " n"...)
	line = strconv.AppendUint(line, id, 10)
	line = append(line, '.')
	line = strconv.AppendUint(line, inc, 10)
	line = append(line, ' ')
	line = append(line, what...)
	line = append(line, suffix...)
	t.push(line)
}

// addf adds prefix followed by format applied to args (add(at, "%s%s",
// prefix, fmt.Sprintf(format, args...)), without the intermediate string).
func (t *tracer) addf(at time.Duration, prefix []byte, format string, args ...any) {
	line := t.appendAt(t.buffer(), at)
	line = append(line, ' ')
	line = append(line, prefix...)
	line = fmt.Appendf(line, format, args...)
	t.push(line)
}

// recvWhat is fmt.Sprintf("recv n%d len=%d h=%08x", from, size, h).
func recvWhat(from uint64, size int, h uint32) string {
	b := make([]byte, 0, 40)
	b = append(b, "recv n"...)
	b = strconv.AppendUint(b, from, 10)
	b = append(b, " len="...)
	b = strconv.AppendInt(b, int64(size), 10)
	b = append(b, " h="...)
	const hex = "0123456789abcdef"
	for shift := 28; shift >= 0; shift -= 4 {
		b = append(b, hex[h>>uint(shift)&0xf])
	}
	return string(b)
}

// fnv32a is hash/fnv's New32a sum of msg, without allocating the hash.
func fnv32a(msg []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range msg {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
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
	w.trace.addf(w.clock.Monotonic(), []byte("world | "), format, args...)
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
