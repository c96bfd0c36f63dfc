package consensus_test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"hash/fnv"
	"io"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/logstore"
)

// walFile persists a member's Raft state on a (simulated) FS in a simple
// test-only format, so a crash really loses what was not synced. The real
// adapter onto the segmented log is node's job; this one only has to be
// obviously right.
//
// The file is a sequence of records:
//
//	+------------+-----------+---------+------------------+
//	| length u32 | crc32c u32| kind u8 | body (length-1)  |
//	+------------+-----------+---------+------------------+
//
// kinds: entries (a Message holding them), hard state (three uvarints),
// snapshot installed (a Message holding it), compaction (a Message holding
// the snapshot taken locally). Recovery replays records until the first
// short or corrupt one, and cuts the file there.
type walFile struct {
	fs   logstore.FS
	file logstore.File
}

const walName = "raft.log"

const (
	recEntries   = 1
	recHardState = 2
	recSnapshot  = 3
	recCompact   = 4
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// openWAL opens (or creates, durably) the log and replays it into a fresh
// durableLog.
func openWAL(fs logstore.FS, cs consensus.ConfState) (*walFile, *durableLog, error) {
	f, err := fs.Open(walName)
	if errors.Is(err, logstore.ErrNotExist) {
		if f, err = fs.Create(walName); err != nil {
			return nil, nil, err
		}
		// The file must survive a crash before anything in it is relied on.
		if err := fs.SyncDir("."); err != nil {
			return nil, nil, err
		}
	} else if err != nil {
		return nil, nil, err
	}
	w := &walFile{fs: fs, file: f}
	dl := newDurableLog(cs)
	if err := w.replay(dl); err != nil {
		return nil, nil, err
	}
	return w, dl, nil
}

func (w *walFile) replay(dl *durableLog) error {
	size, err := w.file.Size()
	if err != nil {
		return err
	}
	buf := make([]byte, size)
	if n, err := w.file.ReadAt(buf, 0); err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
		return err
	}
	off := 0
	for off+8 <= len(buf) {
		length := int(binary.BigEndian.Uint32(buf[off:]))
		sum := binary.BigEndian.Uint32(buf[off+4:])
		if length == 0 || off+8+length > len(buf) || crc32.Checksum(buf[off+8:off+8+length], crcTable) != sum {
			break
		}
		if err := dl.replay(buf[off+8], buf[off+9:off+8+length]); err != nil {
			return err
		}
		off += 8 + length
	}
	if int64(off) < size {
		// A torn tail: cut it so that new records follow valid ones.
		if err := w.file.Truncate(int64(off)); err != nil {
			return err
		}
		return w.file.Sync()
	}
	return nil
}

func (w *walFile) append(kind byte, body []byte) error {
	rec := make([]byte, 9, 9+len(body))
	binary.BigEndian.PutUint32(rec, uint32(1+len(body)))
	rec[8] = kind
	rec = append(rec, body...)
	binary.BigEndian.PutUint32(rec[4:], crc32.Checksum(rec[8:], crcTable))
	_, err := w.file.Write(rec)
	return err
}

// writeReady writes what rd asks to persist (not yet synced).
func (w *walFile) writeReady(rd consensus.Ready) error {
	if !rd.Snapshot.IsEmpty() {
		m := consensus.Message{Snapshot: &rd.Snapshot}
		if err := w.append(recSnapshot, m.Marshal()); err != nil {
			return err
		}
	}
	// Entries before the hard state: a crash that keeps the hard state but
	// not the entries would leave a commit index past the log's end (which
	// RawNode tolerates, but there is no need to provoke it).
	if len(rd.Entries) > 0 {
		m := consensus.Message{Entries: rd.Entries}
		if err := w.append(recEntries, m.Marshal()); err != nil {
			return err
		}
	}
	if rd.HardState != (consensus.HardState{}) {
		hs := rd.HardState
		b := binary.AppendUvarint(nil, hs.Term)
		b = binary.AppendUvarint(b, hs.Vote)
		b = binary.AppendUvarint(b, hs.Commit)
		if err := w.append(recHardState, b); err != nil {
			return err
		}
	}
	return nil
}

// writeCompaction records a local snapshot and the index the log is
// compacted to (at or below the snapshot's: a tail is kept for followers).
func (w *walFile) writeCompaction(snap consensus.Snapshot, compactTo uint64) error {
	m := consensus.Message{Snapshot: &snap, Index: compactTo}
	return w.append(recCompact, m.Marshal())
}

func (w *walFile) sync() error { return w.file.Sync() }

// durableLog is what a member has persisted: a MemoryStorage it reads as
// its Storage, plus the prefix hash of every entry it holds, so the checker
// can compare logs by hash.
//
// Invariant: hashes[i] is the prefix hash of entry base+i (hashes[0] of the
// snapshot point base).
type durableLog struct {
	ms     *consensus.MemoryStorage
	cs     consensus.ConfState
	base   uint64
	hashes []uint64
}

func newDurableLog(cs consensus.ConfState) *durableLog {
	ms := consensus.NewMemoryStorage()
	ms.SetConfState(cs)
	return &durableLog{ms: ms, cs: cs, hashes: []uint64{0}}
}

// prefixHash chains an entry onto the hash of everything before it: equal
// hashes at an index mean equal logs up to it.
func prefixHash(prev uint64, e consensus.Entry) uint64 {
	h := fnv.New64a()
	var b [24]byte
	binary.BigEndian.PutUint64(b[0:], prev)
	binary.BigEndian.PutUint64(b[8:], e.Term)
	binary.BigEndian.PutUint64(b[16:], e.Index)
	h.Write(b[:])
	h.Write([]byte{byte(e.Type)})
	h.Write(e.Data)
	return h.Sum64()
}

func (d *durableLog) hashAt(i uint64) (uint64, bool) {
	if i < d.base || i >= d.base+uint64(len(d.hashes)) {
		return 0, false
	}
	return d.hashes[i-d.base], true
}

func (d *durableLog) appendEntries(ents []consensus.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	if err := d.ms.Append(ents); err != nil {
		return err
	}
	for _, e := range ents {
		if e.Index <= d.base {
			continue
		}
		d.hashes = d.hashes[:e.Index-d.base]
		d.hashes = append(d.hashes, prefixHash(d.hashes[len(d.hashes)-1], e))
	}
	return nil
}

func (d *durableLog) installSnapshot(s consensus.Snapshot) error {
	if err := d.ms.ApplySnapshot(s); err != nil {
		return err
	}
	d.base = s.Meta.Index
	d.hashes = []uint64{snapshotHash(s)}
	return nil
}

// compact records a local snapshot and drops the entries before compactTo.
func (d *durableLog) compact(s consensus.Snapshot, compactTo uint64) error {
	cs := s.Meta.ConfState
	if _, err := d.ms.CreateSnapshot(s.Meta.Index, &cs, s.Data); err != nil {
		return err
	}
	if compactTo <= d.base {
		return nil
	}
	if err := d.ms.Compact(compactTo); err != nil {
		return err
	}
	d.hashes = d.hashes[compactTo-d.base:]
	d.base = compactTo
	return nil
}

// snapshotPoint is where the state machine restarts from: the latest
// snapshot's index and state hash.
func (d *durableLog) snapshotPoint() (uint64, uint64) {
	s, _ := d.ms.Snapshot()
	return s.Meta.Index, snapshotHash(s)
}

func snapshotHash(s consensus.Snapshot) uint64 {
	if len(s.Data) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(s.Data)
}

func (d *durableLog) replay(kind byte, body []byte) error {
	switch kind {
	case recEntries:
		m, err := consensus.UnmarshalMessage(body)
		if err != nil {
			return err
		}
		return d.appendEntries(m.Entries)
	case recHardState:
		var hs consensus.HardState
		var n int
		hs.Term, n = binary.Uvarint(body)
		body = body[n:]
		hs.Vote, n = binary.Uvarint(body)
		body = body[n:]
		hs.Commit, _ = binary.Uvarint(body)
		d.ms.SetHardState(hs)
		return nil
	case recSnapshot, recCompact:
		m, err := consensus.UnmarshalMessage(body)
		if err != nil || m.Snapshot == nil {
			return errors.New("wal: bad snapshot record")
		}
		if kind == recSnapshot {
			return d.installSnapshot(*m.Snapshot)
		}
		return d.compact(*m.Snapshot, m.Index)
	}
	return errors.New("wal: unknown record kind")
}
