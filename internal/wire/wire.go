package wire

import (
	"encoding/binary"
	"errors"
	"math"
)

// ErrShort is returned when input ends before a field does.
var ErrShort = errors.New("wire: input too short")

// ErrTooLarge is returned when a length prefix exceeds the input.
var ErrTooLarge = errors.New("wire: length exceeds input")

// Writer appends fields to a byte slice.
type Writer struct{ B []byte }

func (w *Writer) Uvarint(v uint64) { w.B = binary.AppendUvarint(w.B, v) }
func (w *Writer) Varint(v int64)   { w.B = binary.AppendVarint(w.B, v) }
func (w *Writer) U8(v uint8)       { w.B = append(w.B, v) }
func (w *Writer) U16(v uint16)     { w.B = binary.BigEndian.AppendUint16(w.B, v) }
func (w *Writer) U32(v uint32)     { w.B = binary.BigEndian.AppendUint32(w.B, v) }
func (w *Writer) U64(v uint64)     { w.B = binary.BigEndian.AppendUint64(w.B, v) }
func (w *Writer) Bool(v bool) {
	if v {
		w.U8(1)
	} else {
		w.U8(0)
	}
}

// Bytes writes a length-prefixed byte slice; nil and empty both read back
// as nil unless NullableBytes is used.
func (w *Writer) Bytes(b []byte) { w.Uvarint(uint64(len(b))); w.B = append(w.B, b...) }

// NullableBytes writes b keeping the difference between nil and empty.
func (w *Writer) NullableBytes(b []byte) {
	if b == nil {
		w.Uvarint(0)
		return
	}
	w.Uvarint(uint64(len(b)) + 1)
	w.B = append(w.B, b...)
}

// String writes a length-prefixed string.
func (w *Writer) String(s string) { w.Uvarint(uint64(len(s))); w.B = append(w.B, s...) }

// Reader reads fields written by Writer. After the first error every read
// returns a zero value and Err reports that error.
type Reader struct {
	B   []byte
	err error
}

// Err returns the first error met.
func (r *Reader) Err() error { return r.err }

// Done returns the first error, or an error if input remains.
func (r *Reader) Done() error {
	if r.err == nil && len(r.B) != 0 {
		r.err = errors.New("wire: trailing bytes")
	}
	return r.err
}

func (r *Reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.B = nil
}

func (r *Reader) Uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.B)
	if n <= 0 {
		r.fail(ErrShort)
		return 0
	}
	r.B = r.B[n:]
	return v
}

func (r *Reader) Varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.B)
	if n <= 0 {
		r.fail(ErrShort)
		return 0
	}
	r.B = r.B[n:]
	return v
}

func (r *Reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.B) {
		r.fail(ErrShort)
		return nil
	}
	b := r.B[:n:n]
	r.B = r.B[n:]
	return b
}

func (r *Reader) U8() uint8 {
	b := r.take(1)
	if b == nil {
		return 0
	}
	return b[0]
}

func (r *Reader) U16() uint16 {
	b := r.take(2)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint16(b)
}

func (r *Reader) U32() uint32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint32(b)
}

func (r *Reader) U64() uint64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func (r *Reader) Bool() bool { return r.U8() != 0 }

// length reads a length prefix and checks it against the remaining input.
func (r *Reader) length() int {
	n := r.Uvarint()
	if r.err != nil {
		return 0
	}
	if n > uint64(len(r.B)) || n > math.MaxInt32 {
		r.fail(ErrTooLarge)
		return 0
	}
	return int(n)
}

// Bytes reads a length-prefixed slice (aliasing the input); empty reads as nil.
func (r *Reader) Bytes() []byte {
	n := r.length()
	if n == 0 {
		return nil
	}
	return r.take(n)
}

// NullableBytes reads what NullableBytes wrote.
func (r *Reader) NullableBytes() []byte {
	n := r.Uvarint()
	if r.err != nil || n == 0 {
		return nil
	}
	n--
	if n > uint64(len(r.B)) {
		r.fail(ErrTooLarge)
		return nil
	}
	if n == 0 {
		return []byte{}
	}
	return r.take(int(n))
}

// String reads a length-prefixed string.
func (r *Reader) String() string { return string(r.Bytes()) }

// Count reads a length prefix used as an element count, refusing counts
// that could not fit in the remaining input at minBytes per element.
func (r *Reader) Count(minBytes int) int {
	n := r.Uvarint()
	if r.err != nil {
		return 0
	}
	if minBytes < 1 {
		minBytes = 1
	}
	if n > uint64(len(r.B)/minBytes) {
		r.fail(ErrTooLarge)
		return 0
	}
	return int(n)
}
