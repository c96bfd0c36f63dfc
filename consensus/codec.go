package consensus

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// Wire format of a Message, version 1. Numbers are unsigned varints (u),
// byte strings are a u length then the bytes (b):
//
//	+---------+------+-------+----+------+------+---------+-------+--------+------------+---------+
//	| version | type | flags | To | From | Term | LogTerm | Index | Commit | RejectHint | Context |
//	|  byte   | byte | byte  | u  |  u   |  u   |   u     |   u   |   u    |     u      |    b    |
//	+---------+------+-------+----+------+------+---------+-------+--------+------------+---------+
//	| u entry count | per entry: Term u, Index u, Type byte, Data b |
//	| if flags&flagSnapshot: Index u, Term u, u voters + u each, u learners + u each, Data b |
//
// flags: bit 0 Reject, bit 1 a snapshot follows. Nothing may trail.
//
// A ConfChange is: version byte, type byte, NodeID u, Context b.

const (
	codecVersion  = 1
	flagReject    = 1 << 0
	flagSnapshot  = 1 << 1
	flagsKnownAll = flagReject | flagSnapshot
)

// ErrCodec reports bytes that are not a valid encoding.
var ErrCodec = errors.New("consensus: malformed encoding")

// Marshal encodes m.
func (m *Message) Marshal() []byte {
	return appendMessage(make([]byte, 0, messageSize(m)), m)
}

// messageSize is the exact length of m's encoding (appendMessage), so
// that a frame can write a message's length prefix before the message
// instead of moving the encoded message behind it (host.go encodeFrame).
func messageSize(m *Message) int {
	n := 3 // version, type, flags
	for _, v := range [...]uint64{m.To, m.From, m.Term, m.LogTerm, m.Index, m.Commit, m.RejectHint} {
		n += uvarintSize(v)
	}
	n += bytesSize(len(m.Context))
	n += uvarintSize(uint64(len(m.Entries)))
	for i := range m.Entries {
		e := &m.Entries[i]
		n += uvarintSize(e.Term) + uvarintSize(e.Index) + 1 + bytesSize(len(e.Data))
	}
	if s := m.Snapshot; s != nil {
		n += uvarintSize(s.Meta.Index) + uvarintSize(s.Meta.Term)
		n += idsSize(s.Meta.ConfState.Voters) + idsSize(s.Meta.ConfState.Learners)
		n += bytesSize(len(s.Data))
	}
	return n
}

// uvarintSize is the length of binary.AppendUvarint's encoding of v.
func uvarintSize(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// bytesSize is the length of appendBytes' encoding of n bytes.
func bytesSize(n int) int { return uvarintSize(uint64(n)) + n }

func idsSize(ids []uint64) int {
	n := uvarintSize(uint64(len(ids)))
	for _, id := range ids {
		n += uvarintSize(id)
	}
	return n
}

func appendMessage(b []byte, m *Message) []byte {
	var flags byte
	if m.Reject {
		flags |= flagReject
	}
	if m.Snapshot != nil {
		flags |= flagSnapshot
	}
	b = append(b, codecVersion, byte(m.Type), flags)
	for _, v := range [...]uint64{m.To, m.From, m.Term, m.LogTerm, m.Index, m.Commit, m.RejectHint} {
		b = binary.AppendUvarint(b, v)
	}
	b = appendBytes(b, m.Context)
	b = binary.AppendUvarint(b, uint64(len(m.Entries)))
	for i := range m.Entries {
		e := &m.Entries[i]
		b = binary.AppendUvarint(b, e.Term)
		b = binary.AppendUvarint(b, e.Index)
		b = append(b, byte(e.Type))
		b = appendBytes(b, e.Data)
	}
	if s := m.Snapshot; s != nil {
		b = binary.AppendUvarint(b, s.Meta.Index)
		b = binary.AppendUvarint(b, s.Meta.Term)
		b = appendIDs(b, s.Meta.ConfState.Voters)
		b = appendIDs(b, s.Meta.ConfState.Learners)
		b = appendBytes(b, s.Data)
	}
	return b
}

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

func appendIDs(b []byte, ids []uint64) []byte {
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = binary.AppendUvarint(b, id)
	}
	return b
}

// UnmarshalMessage decodes a Message encoded by Marshal. It rejects
// malformed input with an error wrapping ErrCodec and never panics. The
// result's byte slices alias b.
func UnmarshalMessage(b []byte) (Message, error) {
	d := decoder{b: b}
	m := d.message()
	if d.err == nil && d.off != len(d.b) {
		d.fail()
	}
	if d.err != nil {
		return Message{}, d.err
	}
	return m, nil
}

func (d *decoder) message() Message {
	var m Message
	if d.byte() != codecVersion {
		d.fail()
		return m
	}
	m.Type = MessageType(d.byte())
	flags := d.byte()
	if flags&^flagsKnownAll != 0 {
		d.fail()
	}
	m.Reject = flags&flagReject != 0
	m.To, m.From, m.Term = d.uvarint(), d.uvarint(), d.uvarint()
	m.LogTerm, m.Index, m.Commit, m.RejectHint = d.uvarint(), d.uvarint(), d.uvarint(), d.uvarint()
	m.Context = d.bytes()
	m.Entries = d.entries()
	if flags&flagSnapshot != 0 {
		m.Snapshot = d.snapshot()
	}
	return m
}

func (d *decoder) entries() []Entry {
	// Each entry takes at least 4 bytes: bound the count before allocating.
	n := d.count(4)
	if n == 0 {
		return nil
	}
	ents := make([]Entry, n)
	for i := range ents {
		ents[i].Term = d.uvarint()
		ents[i].Index = d.uvarint()
		ents[i].Type = EntryType(d.byte())
		ents[i].Data = d.bytes()
	}
	return ents
}

func (d *decoder) snapshot() *Snapshot {
	s := &Snapshot{}
	s.Meta.Index = d.uvarint()
	s.Meta.Term = d.uvarint()
	s.Meta.ConfState.Voters = d.ids()
	s.Meta.ConfState.Learners = d.ids()
	s.Data = d.bytes()
	return s
}

func (d *decoder) ids() []uint64 {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = d.uvarint()
	}
	return ids
}

// Marshal encodes cc.
func (cc ConfChange) Marshal() []byte {
	b := make([]byte, 0, 3+binary.MaxVarintLen64*2+len(cc.Context))
	b = append(b, codecVersion, byte(cc.Type))
	b = binary.AppendUvarint(b, cc.NodeID)
	return appendBytes(b, cc.Context)
}

// UnmarshalConfChange decodes a ConfChange encoded by Marshal; Context
// aliases b.
func UnmarshalConfChange(b []byte) (ConfChange, error) {
	d := decoder{b: b}
	var cc ConfChange
	if d.byte() != codecVersion {
		d.fail()
	}
	cc.Type = ConfChangeType(d.byte())
	cc.NodeID = d.uvarint()
	cc.Context = d.bytes()
	if d.err == nil && d.off != len(b) {
		d.fail()
	}
	if d.err != nil {
		return ConfChange{}, d.err
	}
	return cc, nil
}

// decoder reads from b; after the first error every read returns zero and
// the error sticks, so callers check once at the end.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = ErrCodec
	}
	d.off = len(d.b)
}

func (d *decoder) byte() byte {
	if d.err != nil || d.off >= len(d.b) {
		d.fail()
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail()
		return 0
	}
	d.off += n
	return v
}

// bytes reads a length-prefixed byte string (nil when empty).
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail()
		return nil
	}
	if n == 0 {
		return nil
	}
	p := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return p
}

// count reads an element count, failing if the remaining input could not
// hold that many elements of at least minBytes each.
func (d *decoder) count(minBytes int) int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > uint64((len(d.b)-d.off)/minBytes) {
		d.fail()
		return 0
	}
	return int(n)
}
