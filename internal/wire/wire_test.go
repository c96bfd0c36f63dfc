package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// A field is one value of one kind; a record is a sequence of fields. The
// round trip property writes a record with Writer and reads it back with
// Reader, field by field.
type kind uint8

const (
	kUvarint kind = iota
	kVarint
	kU8
	kU16
	kU32
	kU64
	kBool
	kBytes
	kNullable
	kString
	kindCount
)

var kindNames = [kindCount]string{"uvarint", "varint", "u8", "u16", "u32", "u64", "bool", "bytes", "nullable", "string"}

func (k kind) String() string { return kindNames[k] }

type field struct {
	k kind
	u uint64
	i int64
	b []byte // nil and empty differ for kNullable
	s string
}

func (f field) String() string {
	switch f.k {
	case kVarint:
		return fmt.Sprintf("varint(%d)", f.i)
	case kBytes, kNullable:
		if f.b == nil {
			return f.k.String() + "(nil)"
		}
		return fmt.Sprintf("%s(%x)", f.k, f.b)
	case kString:
		return fmt.Sprintf("string(%q)", f.s)
	}
	return fmt.Sprintf("%s(%d)", f.k, f.u)
}

func genField() *rapid.Generator[field] {
	return rapid.Custom(func(t *rapid.T) field {
		k := kind(rapid.IntRange(0, int(kindCount)-1).Draw(t, "kind"))
		f := field{k: k}
		switch k {
		case kUvarint:
			f.u = rapid.OneOf(rapid.Uint64Range(0, 300), rapid.Uint64()).Draw(t, "u")
		case kVarint:
			f.i = rapid.OneOf(rapid.Int64Range(-300, 300), rapid.Int64()).Draw(t, "i")
		case kU8:
			f.u = uint64(rapid.Uint8().Draw(t, "u"))
		case kU16:
			f.u = uint64(rapid.Uint16().Draw(t, "u"))
		case kU32:
			f.u = uint64(rapid.Uint32().Draw(t, "u"))
		case kU64:
			f.u = rapid.Uint64().Draw(t, "u")
		case kBool:
			f.u = uint64(rapid.IntRange(0, 1).Draw(t, "u"))
		case kBytes, kNullable:
			if !rapid.Bool().Draw(t, "nil") {
				f.b = rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "b")
				if f.b == nil {
					f.b = []byte{}
				}
			}
		case kString:
			f.s = rapid.String().Draw(t, "s")
		}
		return f
	})
}

func write(w *Writer, f field) {
	switch f.k {
	case kUvarint:
		w.Uvarint(f.u)
	case kVarint:
		w.Varint(f.i)
	case kU8:
		w.U8(uint8(f.u))
	case kU16:
		w.U16(uint16(f.u))
	case kU32:
		w.U32(uint32(f.u))
	case kU64:
		w.U64(f.u)
	case kBool:
		w.Bool(f.u == 1)
	case kBytes:
		w.Bytes(f.b)
	case kNullable:
		w.NullableBytes(f.b)
	case kString:
		w.String(f.s)
	}
}

// read reads a field of kind k.
func read(r *Reader, k kind) field {
	f := field{k: k}
	switch k {
	case kUvarint:
		f.u = r.Uvarint()
	case kVarint:
		f.i = r.Varint()
	case kU8:
		f.u = uint64(r.U8())
	case kU16:
		f.u = uint64(r.U16())
	case kU32:
		f.u = uint64(r.U32())
	case kU64:
		f.u = r.U64()
	case kBool:
		if r.Bool() {
			f.u = 1
		}
	case kBytes:
		f.b = r.Bytes()
	case kNullable:
		f.b = r.NullableBytes()
	case kString:
		f.s = r.String()
	}
	return f
}

// want is what reading back f must give: Bytes does not keep nil apart from
// empty (both read as nil); NullableBytes does.
func want(f field) field {
	if f.k == kBytes && len(f.b) == 0 {
		f.b = nil
	}
	return f
}

func sameField(a, b field) bool {
	if a.k != b.k || a.u != b.u || a.i != b.i || a.s != b.s {
		return false
	}
	return (a.b == nil) == (b.b == nil) && bytes.Equal(a.b, b.b)
}

func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fs := rapid.SliceOfN(genField(), 0, 20).Draw(t, "fields")
		var w Writer
		for _, f := range fs {
			write(&w, f)
		}
		r := Reader{B: w.B}
		for i, f := range fs {
			got := read(&r, f.k)
			if !sameField(got, want(f)) {
				t.Fatalf("field %d: wrote %v, read %v (err %v)", i, f, got, r.Err())
			}
		}
		if err := r.Done(); err != nil {
			t.Fatalf("Done after reading every field: %v", err)
		}
	})
}

// Every field takes at least one byte, so reading a record back from any
// strict prefix of its encoding must fail, and the failure must stick.
func TestTruncatedRecordFails(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fs := rapid.SliceOfN(genField(), 1, 12).Draw(t, "fields")
		var w Writer
		for _, f := range fs {
			write(&w, f)
		}
		cut := rapid.IntRange(0, len(w.B)-1).Draw(t, "cut")
		r := Reader{B: w.B[:cut]}
		for _, f := range fs {
			read(&r, f.k)
		}
		if r.Err() == nil {
			t.Fatalf("read %d fields from %d of %d bytes without error", len(fs), cut, len(w.B))
		}
		if r.Done() == nil {
			t.Fatalf("Done forgot the error")
		}
		if !errors.Is(r.Err(), ErrShort) && !errors.Is(r.Err(), ErrTooLarge) {
			t.Fatalf("truncation gave %v, want ErrShort or ErrTooLarge", r.Err())
		}
	})
}

func TestTrailingBytes(t *testing.T) {
	var w Writer
	w.Uvarint(7)
	w.U8(1)
	r := Reader{B: w.B}
	if got := r.Uvarint(); got != 7 {
		t.Fatalf("Uvarint = %d, want 7", got)
	}
	if r.Err() != nil {
		t.Fatalf("Err = %v before Done", r.Err())
	}
	if r.Done() == nil {
		t.Fatalf("Done with a byte left returned nil")
	}
}

// Malformed inputs that a careless decoder would crash or loop on.
func TestMalformed(t *testing.T) {
	overlong := bytes.Repeat([]byte{0xff}, 11) // a varint past 64 bits
	tests := []struct {
		name string
		in   []byte
		read func(r *Reader)
		want error
	}{
		{"uvarint empty", nil, func(r *Reader) { r.Uvarint() }, ErrShort},
		{"uvarint unterminated", []byte{0x80, 0x80}, func(r *Reader) { r.Uvarint() }, ErrShort},
		{"uvarint overflow", overlong, func(r *Reader) { r.Uvarint() }, ErrShort},
		{"varint overflow", overlong, func(r *Reader) { r.Varint() }, ErrShort},
		{"u16 short", []byte{1}, func(r *Reader) { r.U16() }, ErrShort},
		{"u32 short", []byte{1, 2, 3}, func(r *Reader) { r.U32() }, ErrShort},
		{"u64 short", []byte{1, 2, 3, 4, 5, 6, 7}, func(r *Reader) { r.U64() }, ErrShort},
		{"bytes length past input", []byte{5, 1, 2}, func(r *Reader) { r.Bytes() }, ErrTooLarge},
		{"bytes length huge", binary.AppendUvarint(nil, math.MaxUint64), func(r *Reader) { r.Bytes() }, ErrTooLarge},
		{"string length past input", []byte{3, 'a'}, func(r *Reader) { _ = r.String() }, ErrTooLarge},
		{"nullable length past input", []byte{4, 1, 2}, func(r *Reader) { r.NullableBytes() }, ErrTooLarge},
		{"nullable length huge", binary.AppendUvarint(nil, math.MaxUint64), func(r *Reader) { r.NullableBytes() }, ErrTooLarge},
		{"count past input", []byte{3, 0, 0}, func(r *Reader) { r.Count(1) }, ErrTooLarge},
		{"count past input at 4 bytes each", append([]byte{2}, make([]byte, 7)...), func(r *Reader) { r.Count(4) }, ErrTooLarge},
		{"count huge", binary.AppendUvarint(nil, math.MaxUint64), func(r *Reader) { r.Count(0) }, ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Reader{B: tc.in}
			tc.read(&r)
			if !errors.Is(r.Err(), tc.want) {
				t.Fatalf("err = %v, want %v", r.Err(), tc.want)
			}
			// The error sticks and later reads give zero values.
			if r.U64() != 0 || r.Uvarint() != 0 || r.Varint() != 0 || r.Bytes() != nil || r.Count(1) != 0 {
				t.Fatalf("a read after the error returned a value")
			}
			if !errors.Is(r.Err(), tc.want) {
				t.Fatalf("err changed to %v", r.Err())
			}
		})
	}
}

func TestCountFits(t *testing.T) {
	// Two elements of 4 bytes fit in 8 bytes; three do not.
	in := append([]byte{2}, make([]byte, 8)...)
	r := Reader{B: in}
	if n := r.Count(4); n != 2 || r.Err() != nil {
		t.Fatalf("Count(4) = %d, %v; want 2, nil", n, r.Err())
	}
	in[0] = 3
	r = Reader{B: in}
	if n := r.Count(4); n != 0 || r.Err() == nil {
		t.Fatalf("Count(4) of 3 in 8 bytes = %d, %v; want an error", n, r.Err())
	}
}

// Reader's contract: "After the first error every read returns a zero value
// and Err reports that error." Done's trailing-bytes error is an error too.
func TestReadsAfterDoneErrorAreZero(t *testing.T) {
	r := Reader{B: []byte{1, 5, 6}}
	r.U8()
	if r.Done() == nil {
		t.Fatalf("Done with bytes left returned nil")
	}
	if v := r.Uvarint(); v != 0 {
		t.Errorf("Uvarint after Done's error = %d, want 0", v)
	}
	if v := r.Varint(); v != 0 {
		t.Errorf("Varint after Done's error = %d, want 0", v)
	}
}

// FuzzReader runs an arbitrary sequence of reads (ops) over arbitrary input
// (data). It must never panic, and every read must respect the input: a
// returned slice lies inside what was left, consumption only moves
// forward, a count fits the input, and once an error is recorded it sticks
// and reads return zero values.
func FuzzReader(f *testing.F) {
	var w Writer
	w.U8(1)
	w.Uvarint(300)
	w.Varint(-5)
	w.Bytes([]byte("abc"))
	w.NullableBytes([]byte{})
	w.String("xy")
	w.U64(math.MaxUint64)
	f.Add([]byte{byte(kU8), byte(kUvarint), byte(kVarint), byte(kBytes), byte(kNullable), byte(kString), byte(kU64)}, w.B)
	f.Add([]byte{10, 11, 12}, []byte{3, 1, 2, 3})
	f.Add([]byte{byte(kBytes)}, binary.AppendUvarint(nil, math.MaxUint64))
	f.Fuzz(func(t *testing.T, ops []byte, data []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		r := Reader{B: data}
		trailingErr := false // the error is Done's, whose input was left in place
		for _, op := range ops {
			before := len(r.B)
			hadErr := r.Err() != nil
			k := kind(op % 13)
			var got []byte
			nonzero := false
			switch {
			case k == 10:
				minBytes := int(op % 5)
				n := r.Count(minBytes)
				if n*max(minBytes, 1) > before {
					t.Fatalf("Count(%d) = %d with %d bytes left", minBytes, n, before)
				}
				nonzero = n != 0
			case k == 11:
				nonzero = r.Bool()
			case k == 12:
				if r.Done() != nil && !hadErr {
					trailingErr = len(r.B) > 0
				}
			default:
				fv := read(&r, k)
				got = fv.b
				if fv.k == kString {
					got = []byte(fv.s)
				}
				nonzero = fv.u != 0 || fv.i != 0 || len(got) > 0
			}
			if len(r.B) > before {
				t.Fatalf("%v: remaining input grew from %d to %d", k, before, len(r.B))
			}
			if len(got) > before {
				t.Fatalf("%v: returned %d bytes with %d left", k, len(got), before)
			}
			knownBug := trailingErr && (k == kUvarint || k == kVarint) // TestReadsAfterDoneErrorAreZero
			if hadErr && nonzero && !knownBug {
				t.Fatalf("%v: a read after an error returned a value", k)
			}
			if hadErr && r.Err() == nil {
				t.Fatalf("error forgotten")
			}
		}
	})
}
