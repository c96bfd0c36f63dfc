package bench

import (
	"encoding/binary"
	"math/rand/v2"
)

// stampBytes is the size of the send-time stamp: unix nanoseconds,
// big-endian, in the first bytes of a message value. Values shorter than
// that carry the stamp in a header named stampHeader instead.
const (
	stampBytes  = 8
	stampHeader = "floe-bench-ts"
)

// newPayload returns a value of size bytes filled with pseudo-random bytes,
// so compression codecs are measured on data that does not shrink to
// nothing. Each pooled message gets its own payload; only the stamp changes
// when it is reused.
func newPayload(size int) []byte {
	b := make([]byte, size)
	for i := 0; i < size; i += 8 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], rand.Uint64())
		copy(b[i:], w[:])
	}
	return b
}

// putStamp writes the send time into value when it is long enough and
// reports whether it did (else the caller uses a header).
func putStamp(value []byte, unixNanos int64) bool {
	if len(value) < stampBytes {
		return false
	}
	binary.BigEndian.PutUint64(value, uint64(unixNanos))
	return true
}

// stampOf reads the send time back from a value or, failing that, from the
// header value hv (nil when absent). ok is false when neither holds a stamp:
// a message this tool did not write.
func stampOf(value, hv []byte) (unixNanos int64, ok bool) {
	if len(value) >= stampBytes {
		return int64(binary.BigEndian.Uint64(value)), true
	}
	if len(hv) == stampBytes {
		return int64(binary.BigEndian.Uint64(hv)), true
	}
	return 0, false
}

// stampHeaderValue encodes a stamp for the header form.
func stampHeaderValue(unixNanos int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, stampBytes), uint64(unixNanos))
}

// sendStampBytes is where, after the stamp, a value of at least
// stampBytes+sendStampBytes bytes carries the time the producer actually
// handed it to the client (the open loop's stamp is the scheduled time):
// the client stage from_send (client_stages.go); 0 for a message not
// timed. Shorter values go without.
const sendStampBytes = 8

func putSendStamp(value []byte, unixNanos int64) {
	if len(value) >= stampBytes+sendStampBytes {
		binary.BigEndian.PutUint64(value[stampBytes:], uint64(unixNanos))
	}
}

func sendStampOf(value []byte) (int64, bool) {
	if len(value) < stampBytes+sendStampBytes {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(value[stampBytes:])), true
}
