package records

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Kind is the class of a validation failure; each maps to one Kafka error
// code, and the code decides what the client does next.
type Kind uint8

const (
	// KindCorrupt: the bytes are damaged (bad CRC, magic, framing, codec,
	// undecodable compressed payload). CORRUPT_MESSAGE, which clients
	// retry: damage in transit may not recur.
	KindCorrupt Kind = iota + 1
	// KindInvalidRecord: intact bytes (the CRC matched) that break a rule:
	// a control batch from a client, a record count or offset deltas that
	// lie, malformed records, a null key on a compacted topic. Kafka answers
	// INVALID_RECORD, which clients do not retry: resending the same bytes
	// cannot help.
	KindInvalidRecord
	// KindTooLarge: the batch exceeds max.message.bytes, or decompresses past
	// the configured bound. MESSAGE_TOO_LARGE; the Java producer splits the
	// batch and retries.
	KindTooLarge
	// KindInvalidTimestamp: a producer set the log-append-time bit, which
	// only the broker may set. INVALID_TIMESTAMP, as Kafka answers.
	KindInvalidTimestamp
)

// Sentinel causes, for errors.Is. Every error this package returns is an
// *Error wrapping one of them.
var (
	ErrTruncated            = errors.New("records: batch truncated")
	ErrBatchLength          = errors.New("records: batchLength inconsistent")
	ErrMagic                = errors.New("records: unsupported magic")
	ErrCRC                  = errors.New("records: crc mismatch")
	ErrCodec                = errors.New("records: unknown compression codec")
	ErrDecompress           = errors.New("records: cannot decompress records")
	ErrTooLarge             = errors.New("records: batch larger than max.message.bytes")
	ErrDecompressedTooLarge = errors.New("records: records decompress past the bound")
	ErrControl              = errors.New("records: clients may not write control batches")
	ErrLogAppendTime        = errors.New("records: producers may not set log-append time")
	ErrRecordCount          = errors.New("records: record count inconsistent")
	ErrSequence             = errors.New("records: invalid base sequence")
	ErrRecords              = errors.New("records: malformed records")
	ErrOffsetDelta          = errors.New("records: offset delta out of order")
	ErrNullKey              = errors.New("records: compacted topic needs a key on every record")
)

// Error is a validation failure: which kind, which cause, and where.
type Error struct {
	Kind   Kind
	Err    error  // one of the sentinels above
	Record int    // index of the offending record in its batch, or -1
	Detail string // human-readable specifics; may be empty
}

func (e *Error) Error() string {
	s := e.Err.Error()
	if e.Record >= 0 {
		s += fmt.Sprintf(" (record %d)", e.Record)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorCode maps an error from this package to the Kafka error code a
// produce response should carry: 0 for nil, CORRUPT_MESSAGE, INVALID_RECORD,
// MESSAGE_TOO_LARGE or INVALID_TIMESTAMP by Kind, and UNKNOWN_SERVER_ERROR
// for an error that did not come from this package.
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var e *Error
	if !errors.As(err, &e) {
		return kerr.UnknownServerError.Code
	}
	switch e.Kind {
	case KindCorrupt:
		return kerr.CorruptMessage.Code
	case KindInvalidRecord:
		return kerr.InvalidRecord.Code
	case KindTooLarge:
		return kerr.MessageTooLarge.Code
	case KindInvalidTimestamp:
		return kerr.InvalidTimestamp.Code
	}
	return kerr.UnknownServerError.Code
}

func corrupt(cause error, detail string) error {
	return &Error{Kind: KindCorrupt, Err: cause, Record: -1, Detail: detail}
}

func invalid(cause error, record int, detail string) error {
	return &Error{Kind: KindInvalidRecord, Err: cause, Record: record, Detail: detail}
}

// atBatch prefixes the detail of err with the index of the batch it is
// about, for inputs holding several batches.
func atBatch(err error, batch int) error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		c.Detail = fmt.Sprintf("batch %d: %s", batch, e.Detail)
		return &c
	}
	return err
}
