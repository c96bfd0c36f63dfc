package records

import (
	"encoding/binary"
	"fmt"
)

// Control records are written by the broker, never by clients, in batches
// with the control and transactional bits set. The only kind Floe writes is
// the transaction marker (end of a transaction on a partition):
//
//	key:   int16 version (0), int16 type (0 abort, 1 commit)
//	value: int16 version (0), int32 coordinatorEpoch

// ControlType is the type in a control record's key.
type ControlType int16

const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

// Marker is a transaction marker: how a producer's transaction ended on
// this partition, and the epoch of the coordinator that ended it.
type Marker struct {
	Type             ControlType
	CoordinatorEpoch int32
}

// MarkerRecord is the control record of m.
func MarkerRecord(m Marker) Record {
	key := binary.BigEndian.AppendUint16(make([]byte, 0, 4), 0)
	key = binary.BigEndian.AppendUint16(key, uint16(m.Type))
	val := binary.BigEndian.AppendUint16(make([]byte, 0, 6), 0)
	val = binary.BigEndian.AppendUint32(val, uint32(m.CoordinatorEpoch))
	return Record{Key: key, Value: val}
}

// ParseMarker decodes a transaction marker from a control record. Control
// types other than abort and commit (Kafka's KRaft uses some) are errors.
func ParseMarker(r Record) (Marker, error) {
	if len(r.Key) < 4 || len(r.Value) < 6 {
		return Marker{}, invalid(ErrRecords, -1, fmt.Sprintf("control record key %d bytes, value %d bytes", len(r.Key), len(r.Value)))
	}
	typ := ControlType(binary.BigEndian.Uint16(r.Key[2:]))
	if typ != ControlAbort && typ != ControlCommit {
		return Marker{}, invalid(ErrRecords, -1, fmt.Sprintf("control type %d is not a transaction marker", typ))
	}
	return Marker{Type: typ, CoordinatorEpoch: int32(binary.BigEndian.Uint32(r.Value[2:]))}, nil
}

// BuildMarker makes the one-record control batch that ends producer p's
// transaction on a partition. Kafka writes markers uncompressed, with
// baseSequence -1.
func BuildMarker(p Producer, m Marker, baseOffset int64, leaderEpoch int32, timestamp int64) []byte {
	p.BaseSequence = NoSequence
	return Build(BuildOptions{
		BaseOffset:           baseOffset,
		PartitionLeaderEpoch: leaderEpoch,
		BaseTimestamp:        timestamp,
		Transactional:        true,
		Control:              true,
		Producer:             &p,
	}, []Record{MarkerRecord(m)})
}
