package records

import (
	"fmt"
)

// ValidateOptions are the per-topic rules a produced batch must meet.
type ValidateOptions struct {
	// MaxMessageBytes is the topic's max.message.bytes: the largest batch,
	// header included. Zero or less means no limit.
	MaxMessageBytes int
	// RequireKeys rejects records with a null key, for topics whose
	// cleanup.policy includes compact. Kafka answers INVALID_RECORD (since
	// 2.4, KIP-467; before, CORRUPT_MESSAGE), and so does Floe.
	RequireKeys bool
	// DecompressedBytesMax bounds the uncompressed size of the records;
	// zero means DefaultDecompressedBytesMax.
	DecompressedBytesMax int
}

// Summary is what validation learned about a batch beyond its header.
type Summary struct {
	Header
	// MinTimestamp and MaxTimestamp are the smallest and largest record
	// timestamps (baseTimestamp + delta). Kafka stores MaxTimestamp as the
	// batch's maxTimestamp for create-time topics: when it differs from
	// Header.MaxTimestamp, SetMaxTimestamp corrects the batch.
	MinTimestamp int64
	MaxTimestamp int64
	// UncompressedBytes is the size of the records once decompressed.
	UncompressedBytes int
}

// Validate checks that b is exactly one v2 batch a client may append, with
// no topic-specific rule but the size limit; see ValidateWith.
func Validate(b []byte, maxMessageBytes int) (Header, error) {
	s, err := ValidateWith(b, ValidateOptions{MaxMessageBytes: maxMessageBytes})
	return s.Header, err
}

// ValidateWith checks that b is exactly one v2 batch a client may append
// under opts, so a batch that lies is rejected before it reaches the log.
// It checks, in this order (the first failure is returned; ErrorCode maps
// it to the Kafka error code):
//
//	framing: a whole header, magic 2, batchLength = len(b)-12   CORRUPT_MESSAGE
//	size: len(b) <= MaxMessageBytes                             MESSAGE_TOO_LARGE
//	CRC-32C of bytes 21..end                                    CORRUPT_MESSAGE
//	codec 0..4                                                  CORRUPT_MESSAGE
//	no control bit                                              INVALID_RECORD
//	no log-append-time bit                                      INVALID_TIMESTAMP
//	recordCount > 0 and lastOffsetDelta = recordCount-1         INVALID_RECORD
//	baseSequence >= 0 when a producer ID is set                 INVALID_RECORD
//	payload decompresses (codec != 0)                           CORRUPT_MESSAGE
//	... within DecompressedBytesMax                             MESSAGE_TOO_LARGE
//	exactly recordCount well-formed records, nothing after      INVALID_RECORD
//	record i has offset delta i                                 INVALID_RECORD
//	every key non-null, if RequireKeys                          INVALID_RECORD
//
// The codes follow Kafka's LogValidator: a CRC failure is retriable damage,
// while a batch whose CRC matches but whose contents lie is a client bug
// that retrying cannot fix. ValidateWith never modifies b.
func ValidateWith(b []byte, opts ValidateOptions) (Summary, error) {
	s := Summary{MinTimestamp: NoTimestamp, MaxTimestamp: NoTimestamp}
	h, err := ParseBatch(b)
	s.Header = h
	if err != nil {
		return s, err
	}
	if opts.MaxMessageBytes > 0 && len(b) > opts.MaxMessageBytes {
		return s, &Error{Kind: KindTooLarge, Err: ErrTooLarge, Record: -1,
			Detail: fmt.Sprintf("%d bytes, max.message.bytes is %d", len(b), opts.MaxMessageBytes)}
	}
	if got := checksum(b); got != h.CRC {
		return s, corrupt(ErrCRC, fmt.Sprintf("stored crc %#08x, computed %#08x", h.CRC, got))
	}
	if err := checkHeaderRules(h); err != nil {
		return s, err
	}
	w := walker{decodedBytesMax: opts.DecompressedBytesMax}
	if w.decodedBytesMax <= 0 {
		w.decodedBytesMax = DefaultDecompressedBytesMax
	}
	minTs, maxTs := int64(0), int64(0)
	err = w.walk(b, h, func(i int, r *Record) error {
		if r.OffsetDelta != int32(i) {
			return invalid(ErrOffsetDelta, i, fmt.Sprintf("offset delta %d", r.OffsetDelta))
		}
		if opts.RequireKeys && r.Key == nil {
			return invalid(ErrNullKey, i, "")
		}
		if i == 0 || r.TimestampDelta < minTs {
			minTs = r.TimestampDelta
		}
		if i == 0 || r.TimestampDelta > maxTs {
			maxTs = r.TimestampDelta
		}
		return nil
	})
	if err != nil {
		return s, err
	}
	s.MinTimestamp = h.BaseTimestamp + minTs
	s.MaxTimestamp = h.BaseTimestamp + maxTs
	s.UncompressedBytes = w.decodedBytes
	return s, nil
}

// checkHeaderRules applies the rules that the header alone decides.
func checkHeaderRules(h Header) error {
	if !h.Codec().Valid() {
		return corrupt(ErrCodec, h.Codec().String())
	}
	if h.IsControl() {
		return invalid(ErrControl, -1, "")
	}
	if h.HasLogAppendTime() {
		return &Error{Kind: KindInvalidTimestamp, Err: ErrLogAppendTime, Record: -1}
	}
	if h.RecordCount <= 0 || h.LastOffsetDelta != h.RecordCount-1 {
		return invalid(ErrRecordCount, -1, fmt.Sprintf("recordCount %d, lastOffsetDelta %d", h.RecordCount, h.LastOffsetDelta))
	}
	if h.HasProducerID() && h.BaseSequence < 0 {
		return invalid(ErrSequence, -1, fmt.Sprintf("baseSequence %d with producerId %d", h.BaseSequence, h.ProducerID))
	}
	return nil
}
