package logstore

// The meta files hold what the log must remember besides its entries: the
// Raft hard state, the snapshot point, the Kafka start offset
// (DeleteRecords) and where the physical log starts. There are two,
// "meta.a" and "meta.b", written alternately, each holding one record:
//
//	 0 magic            [8]byte "FLOEMETA"
//	 8 crc32c           uint32  CRC-32C of bytes 12..end
//	12 seq              uint64  higher wins
//	20 term, vote, commit       3 × uint64
//	44 snapIndex, snapTerm      2 × uint64
//	60 snapNextOffset   int64
//	68 startOffset      int64
//	76 logStartIndex    uint64  first entry of the physical log...
//	84 logStartPrev     uint32  ...the prevLink it must carry...
//	88 logStartOffset   int64   ...and the Kafka offset it starts at
//	96 dataLen          uint32
//	100 snapshot data (opaque)
//
// A file holds its record twice, one copy after the other, so that damage
// to one copy (a flipped bit) leaves the other readable: a record is lost
// only if both copies are. A write truncates the file not holding the
// newest durable record and writes the new one into it, in SyncPlan.Run
// once everything the record describes is durable, then syncs it (see
// sync.go). Only one sync is in flight at a time and a failed sync fails
// the log, so the other file always holds a complete durable record (once
// one was ever made durable): a crash mid-write leaves at worst a torn
// record, which fails its CRC and loses to the other.
//
// A file holding bytes but no valid copy is therefore a torn write, never
// a durable record: if neither file holds a valid record, no meta record
// ever became durable (the log's first sync did not complete), so no vote
// was ever cast and no entry acknowledged from it, and recovery starts the
// log from index 1 (recovery.go). Older files hold one copy; they read the
// same way.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
)

var metaNames = [2]string{"meta.a", "meta.b"}

const (
	metaMagic       = "FLOEMETA"
	metaHeaderBytes = 100
)

// chainPoint is where the physical log starts: the index of its first entry,
// the link that entry must carry as prevLink, and its Kafka offset.
type chainPoint struct {
	index    uint64
	prevLink uint32
	offset   int64
}

// metaState is the content of one meta record.
type metaState struct {
	seq         uint64
	hs          HardState
	snap        SnapshotMeta
	startOffset int64
	logStart    chainPoint
}

func encodeMeta(m metaState) []byte {
	b := make([]byte, metaHeaderBytes, metaHeaderBytes+len(m.snap.Data))
	le := binary.LittleEndian
	copy(b, metaMagic)
	le.PutUint64(b[12:], m.seq)
	le.PutUint64(b[20:], m.hs.Term)
	le.PutUint64(b[28:], m.hs.Vote)
	le.PutUint64(b[36:], m.hs.Commit)
	le.PutUint64(b[44:], m.snap.Index)
	le.PutUint64(b[52:], m.snap.Term)
	le.PutUint64(b[60:], uint64(m.snap.NextOffset))
	le.PutUint64(b[68:], uint64(m.startOffset))
	le.PutUint64(b[76:], m.logStart.index)
	le.PutUint32(b[84:], m.logStart.prevLink)
	le.PutUint64(b[88:], uint64(m.logStart.offset))
	le.PutUint32(b[96:], uint32(len(m.snap.Data)))
	b = append(b, m.snap.Data...)
	le.PutUint32(b[8:], crc32c(b[12:]))
	return b
}

var errBadMeta = errors.New("bad meta record")

// encodeMetaFile is a meta file's content: the record twice.
func encodeMetaFile(m metaState) []byte {
	rec := encodeMeta(m)
	return append(rec[:len(rec):len(rec)], rec...)
}

// decodeMetaFile returns the record of a meta file: its first copy, or its
// second if the first is damaged.
func decodeMetaFile(b []byte) (metaState, error) {
	if len(b) >= metaHeaderBytes {
		n := metaHeaderBytes + int64(binary.LittleEndian.Uint32(b[96:]))
		if n <= int64(len(b)) {
			if m, err := decodeMeta(b[:n]); err == nil {
				return m, nil
			}
		}
	}
	if len(b)%2 == 0 {
		return decodeMeta(b[len(b)/2:]) // the copies are the same size
	}
	return metaState{}, errBadMeta
}

func decodeMeta(b []byte) (metaState, error) {
	le := binary.LittleEndian
	if len(b) < metaHeaderBytes || string(b[:8]) != metaMagic || le.Uint32(b[8:]) != crc32c(b[12:]) {
		return metaState{}, errBadMeta
	}
	if int(le.Uint32(b[96:])) != len(b)-metaHeaderBytes {
		return metaState{}, errBadMeta
	}
	m := metaState{
		seq:         le.Uint64(b[12:]),
		hs:          HardState{Term: le.Uint64(b[20:]), Vote: le.Uint64(b[28:]), Commit: le.Uint64(b[36:])},
		snap:        SnapshotMeta{Index: le.Uint64(b[44:]), Term: le.Uint64(b[52:]), NextOffset: int64(le.Uint64(b[60:]))},
		startOffset: int64(le.Uint64(b[68:])),
		logStart:    chainPoint{index: le.Uint64(b[76:]), prevLink: le.Uint32(b[84:]), offset: int64(le.Uint64(b[88:]))},
	}
	if len(b) > metaHeaderBytes {
		m.snap.Data = append([]byte(nil), b[metaHeaderBytes:]...)
	}
	return m, nil
}

// readWhole reads a whole file.
func readWhole(f File) ([]byte, error) {
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, size)
	n, err := f.ReadAt(b, 0)
	if err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
		return nil, err
	}
	return b, nil
}

// metaFiles says which meta file to write next. The files are not held
// open: a sync that writes a record opens its file, writes, syncs and
// closes it (SyncPlan.Run), so an open log holds one descriptor per
// segment and none for its meta files. A broker with 10,000 partitions
// otherwise held 20,000 descriptors for files written a few times a
// second at most, and ran out of them ("too many open files" at a
// restart, docs/benchmarks.md).
type metaFiles struct {
	next int // the file not holding the newest record
}

// openMeta reads both meta files (creating missing ones) and returns the
// newest valid record. found is false when neither holds one (a new log,
// or one whose first record never became durable). It leaves no file open.
func openMeta(fsys FS, dir string) (mf metaFiles, m metaState, found bool, err error) {
	newest := -1
	for i, name := range metaNames {
		rec, ok, err := readMetaFile(fsys, path.Join(dir, name))
		if err != nil {
			return mf, m, false, fmt.Errorf("read %s: %w", name, err)
		}
		if ok && (newest < 0 || rec.seq > m.seq) {
			m, newest = rec, i
		}
	}
	mf.next = (newest + 1) % 2 // newest == -1 gives 0
	return mf, m, newest >= 0, nil
}

// readMetaFile opens (or creates, if missing) one meta file, decodes its
// record and closes it; ok is false when it holds no valid record.
func readMetaFile(fsys FS, name string) (rec metaState, ok bool, err error) {
	f, err := fsys.Open(name)
	if errors.Is(err, ErrNotExist) {
		f, err = fsys.Create(name)
	}
	if err != nil {
		return rec, false, err
	}
	b, err := readWhole(f)
	cerr := f.Close()
	if err != nil {
		return rec, false, err
	}
	if cerr != nil {
		return rec, false, cerr
	}
	rec, derr := decodeMetaFile(b)
	return rec, derr == nil, nil
}

// take returns the name of the file not holding the newest record, for the
// next record to be written into, and makes the other one next.
func (mf *metaFiles) take() string {
	name := metaNames[mf.next]
	mf.next = 1 - mf.next
	return name
}

// writeMetaRecord opens meta file name, replaces its content by record m,
// syncs it and closes it.
func writeMetaRecord(fsys FS, name string, m metaState) error {
	f, err := fsys.Open(name)
	if err != nil {
		return err
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.Write(encodeMetaFile(m))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
