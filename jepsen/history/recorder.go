package history

import (
	"io"
	"sync"
)

// Recorder appends events to a history as they happen, stamping Index and
// Time, and streams them to a JSON-lines writer. Safe for concurrent use:
// the Docker suite's client goroutines share one. The simulator may use it
// with a simulated clock.
type Recorder struct {
	mu   sync.Mutex
	now  func() int64 // nanoseconds
	enc  *Encoder     // nil: memory only
	hist History
	err  error // first encode error; sticky, see Err
}

// NewRecorder returns a Recorder timing events with now and writing each
// to w (nil: keep them in memory only).
func NewRecorder(w io.Writer, now func() int64) *Recorder {
	r := &Recorder{now: now}
	if w != nil {
		r.enc = NewEncoder(w)
	}
	return r
}

// Add appends op, stamped with the next index and the current time, and
// returns it stamped. Under the lock, so indexes and times agree.
func (r *Recorder) Add(op Op) Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.Index = int64(len(r.hist))
	op.Time = r.now()
	if n := len(r.hist); n > 0 && op.Time < r.hist[n-1].Time {
		op.Time = r.hist[n-1].Time // a clock that steps back must not break the order
	}
	r.hist = append(r.hist, op)
	if r.enc != nil && r.err == nil {
		r.err = r.enc.Encode(op)
	}
	return op
}

// Now is the time an event recorded now would be stamped with (for a
// time carried inside an operation's payload, as Txn's CommitAt).
func (r *Recorder) Now() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.now()
	if n := len(r.hist); n > 0 && t < r.hist[n-1].Time {
		t = r.hist[n-1].Time
	}
	return t
}

// Invoke records the start of op by its process and returns the stamped
// invoke; pass it to Complete.
func (r *Recorder) Invoke(op Op) Op {
	op.Type = Invoke
	return r.Add(op)
}

// Complete records how the operation started by inv ended. result carries
// the completion's payload; its Process, F and Type are set here.
func (r *Recorder) Complete(inv Op, typ Type, result Op) Op {
	result.Process, result.F, result.Type = inv.Process, inv.F, typ
	return r.Add(result)
}

// History returns a copy of the events so far.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(History(nil), r.hist...)
}

// Flush writes out buffered lines and returns the first write error.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.enc != nil && r.err == nil {
		r.err = r.enc.Flush()
	}
	return r.err
}

// Err returns the first write error, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
