package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Encoder writes events as JSON lines. Not safe for concurrent use (see
// Recorder).
type Encoder struct {
	w   *bufio.Writer
	err error // first write error; sticky
}

// NewEncoder returns an Encoder writing to w. Call Flush when done.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: bufio.NewWriter(w)} }

// Encode writes one event as one line.
func (e *Encoder) Encode(op Op) error {
	if e.err != nil {
		return e.err
	}
	b, err := json.Marshal(op)
	if err != nil {
		e.err = err
		return err
	}
	b = append(b, '\n')
	if _, err := e.w.Write(b); err != nil {
		e.err = err
	}
	return e.err
}

// Flush writes out buffered lines.
func (e *Encoder) Flush() error {
	if e.err != nil {
		return e.err
	}
	e.err = e.w.Flush()
	return e.err
}

// Write encodes a whole history to w.
func Write(w io.Writer, h History) error {
	e := NewEncoder(w)
	for _, op := range h {
		if err := e.Encode(op); err != nil {
			return err
		}
	}
	return e.Flush()
}

// Decode reads a JSON-lines history. Blank lines are skipped; unknown
// fields are rejected, so a typo in a hand-written history is an error,
// not a silently empty field. Lines may be of any length (a final read of a
// long partition is one line). The error names the line.
func Decode(r io.Reader) (History, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var h History
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			op, derr := decodeLine(b)
			if derr != nil {
				return nil, fmt.Errorf("history line %d: %w", line, derr)
			}
			h = append(h, op)
		}
		if errors.Is(err, io.EOF) {
			return h, nil
		}
		if err != nil {
			return nil, fmt.Errorf("history line %d: %w", line, err)
		}
	}
}

func decodeLine(b []byte) (Op, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var op Op
	if err := d.Decode(&op); err != nil {
		return Op{}, err
	}
	if d.More() {
		return Op{}, errors.New("more than one JSON value on the line")
	}
	return op, nil
}
