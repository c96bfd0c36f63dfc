package netx

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The TCP wire format. A connection carries messages one way, from the node
// that dialled it to the node that accepted it (each direction between two
// nodes has its own connection). Every integer is big-endian.
//
//	connection := handshake frame*
//
//	handshake  := length:uint32 (= 22) | magic "FLOE" | version:uint16 (= 1)
//	              | from:uint64 | to:uint64
//	frame      := length:uint32 | payload:length bytes
//
// from is the dialler's NodeID, so the acceptor knows who sent what follows;
// to is the NodeID the dialler meant to reach, so a connection that lands on
// the wrong node (a stale address) is refused instead of misdelivered.
// A frame longer than the acceptor's MaxFrameBytes ends the connection.
const (
	wireMagic        = "FLOE"
	wireVersion      = 1
	handshakeBytes   = 4 + 2 + 8 + 8 // the handshake's payload
	frameHeaderBytes = 4
	// frameChunkBytes bounds what a reader allocates ahead of the bytes
	// actually received, so a header that lies about a large length costs
	// the liar bandwidth, not the receiver memory.
	frameChunkBytes = 1 << 20
)

var (
	errFrameTooLarge = errors.New("netx: frame exceeds MaxFrameBytes")
	errBadHandshake  = errors.New("netx: bad handshake")
)

// appendHandshake appends the handshake frame from -> to.
func appendHandshake(b []byte, from, to NodeID) []byte {
	b = binary.BigEndian.AppendUint32(b, handshakeBytes)
	b = append(b, wireMagic...)
	b = binary.BigEndian.AppendUint16(b, wireVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(from))
	return binary.BigEndian.AppendUint64(b, uint64(to))
}

// readHandshake reads and checks a handshake addressed to self, returning the
// sender. It refuses a wrong length, magic or version, a zero sender, a
// sender claiming to be self, and a handshake meant for another node.
//
// One sender claiming to be self is let in: one that addressed Anyone. It
// reached this node by address alone, so it is another process started
// with this node's id (a duplicate, or this node dialling itself), and
// its frames are delivered as from Anyone, never as from self, so that
// the node can tell it so (node/dupid.go) and trusts nothing else of it.
func readHandshake(r io.Reader, self NodeID) (NodeID, error) {
	var b [frameHeaderBytes + handshakeBytes]byte
	if _, err := io.ReadFull(r, b[:frameHeaderBytes]); err != nil {
		return 0, err
	}
	if n := binary.BigEndian.Uint32(b[:]); n != handshakeBytes {
		return 0, fmt.Errorf("%w: length %d", errBadHandshake, n)
	}
	if _, err := io.ReadFull(r, b[frameHeaderBytes:]); err != nil {
		return 0, err
	}
	p := b[frameHeaderBytes:]
	if string(p[:4]) != wireMagic {
		return 0, fmt.Errorf("%w: magic %q", errBadHandshake, p[:4])
	}
	if v := binary.BigEndian.Uint16(p[4:]); v != wireVersion {
		return 0, fmt.Errorf("%w: version %d", errBadHandshake, v)
	}
	from := NodeID(binary.BigEndian.Uint64(p[6:]))
	to := NodeID(binary.BigEndian.Uint64(p[14:]))
	switch {
	case from == 0 || from == Anyone || (from == self && to != Anyone):
		return 0, fmt.Errorf("%w: sender %d", errBadHandshake, from)
	case to != self && to != Anyone:
		return 0, fmt.Errorf("%w: meant for node %d, this is %d", errBadHandshake, to, self)
	case from == self:
		return Anyone, nil
	}
	return from, nil
}

// writeFrame writes one frame to w.
func writeFrame(w *bufio.Writer, msg []byte) error {
	var h [frameHeaderBytes]byte
	binary.BigEndian.PutUint32(h[:], uint32(len(msg)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(msg)
	return err
}

// readFrame reads one frame of at most maxBytes payload bytes. The payload is
// a fresh slice the caller owns. A clean end of stream before a header is
// io.EOF; inside a frame it is io.ErrUnexpectedEOF.
func readFrame(r io.Reader, maxBytes int) ([]byte, error) {
	var h [frameHeaderBytes]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(h[:]))
	if n > maxBytes {
		return nil, fmt.Errorf("%w: %d > %d bytes", errFrameTooLarge, n, maxBytes)
	}
	if n <= frameChunkBytes {
		msg := make([]byte, n)
		if _, err := io.ReadFull(r, msg); err != nil {
			return nil, noEOF(err)
		}
		return msg, nil
	}
	// Room doubles with the bytes received, never past n: memory stays
	// within twice what arrived, and a frame is copied about once in all
	// (growing by a chunk at a time, append's 1.25x growth copied and
	// zeroed a 24 MiB frame's bytes five times over).
	msg := make([]byte, 0, frameChunkBytes)
	for len(msg) < n {
		if len(msg) == cap(msg) {
			grown := make([]byte, len(msg), min(n, 2*cap(msg)))
			copy(grown, msg)
			msg = grown
		}
		chunk := cap(msg) - len(msg) // cap(msg) <= n
		if _, err := io.ReadFull(r, msg[len(msg):len(msg)+chunk]); err != nil {
			return nil, noEOF(err)
		}
		msg = msg[:len(msg)+chunk]
	}
	return msg, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
