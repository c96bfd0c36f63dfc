package logstore

// The loss record. Recovery that finds the log lost entries it had made
// durable (damage, or files cut back below the snapshot point) reports it
// in Recovery, and the node fences the replica from it (node/replicas.go).
// But recovery also repairs the files (cuts the damage, restarts the log
// after its snapshot and writes a meta record saying so), and once that
// repair is durable nothing on disk shows the loss any more: if the open
// then fails, or the broker crashes, before the node has made its vote
// fence durable, the next open finds a whole-looking log and the replica
// votes and acknowledges as if it had never lost anything (sim seed 5 on
// h-23 e17261e: the restart's meta record was written, its sync failed,
// and the next start opened the controller's log unfenced).
//
// So the loss is made durable first: before recovery cuts, deletes or
// restarts anything because of a loss, it writes the "loss" file beside
// the log (what the loss may reach: an index, or unknown), with
// WriteFileAtomic (temporary file, fsync, rename, directory fsync). Every
// Open reports a loss record it finds, merged into Recovery, until the node
// calls LossFenced once its fence is durable; LossFenced removes the file.

import (
	"encoding/binary"
	"path"
)

const (
	lossName  = "loss"
	lossMagic = "FLOELOSS"
	lossBytes = 8 + 4 + 8 + 1
)

// lossRecord is what the loss file says: entries up to heldThrough may
// have been durable (and acknowledged), or, if unknown, how far is unknown.
type lossRecord struct {
	heldThrough uint64
	unknown     bool
}

func encodeLoss(r lossRecord) []byte {
	b := make([]byte, lossBytes)
	copy(b, lossMagic)
	binary.LittleEndian.PutUint64(b[12:], r.heldThrough)
	if r.unknown {
		b[20] = 1
	}
	binary.LittleEndian.PutUint32(b[8:], crc32c(b[12:]))
	return b
}

// decodeLoss reads a loss file; a damaged one is a loss of unknown extent
// (the file exists only because a loss was being recorded).
func decodeLoss(b []byte) lossRecord {
	if len(b) != lossBytes || string(b[:8]) != lossMagic || binary.LittleEndian.Uint32(b[8:]) != crc32c(b[12:]) {
		return lossRecord{unknown: true}
	}
	return lossRecord{heldThrough: binary.LittleEndian.Uint64(b[12:]), unknown: b[20] != 0}
}

// readLoss loads the loss record an earlier open left, if any, into
// l.loss and rec.
func (l *Log) readLoss(rec *Recovery) error {
	b, err := ReadWholeFile(l.fs, path.Join(l.dir, lossName))
	if isNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	r := decodeLoss(b)
	l.loss = &r
	rec.Corrupt = true
	rec.HeldThrough = max(rec.HeldThrough, r.heldThrough)
	rec.HeldUnknown = rec.HeldUnknown || r.unknown
	return nil
}

// recordLoss makes the loss rec reports durable (merged with one an
// earlier open left), before recovery changes the files because of it.
func (l *Log) recordLoss(rec *Recovery) error {
	r := lossRecord{heldThrough: rec.HeldThrough, unknown: rec.HeldUnknown}
	if l.loss != nil {
		r.heldThrough = max(r.heldThrough, l.loss.heldThrough)
		r.unknown = r.unknown || l.loss.unknown
		if r == *l.loss {
			return nil
		}
	}
	if err := WriteFileAtomic(l.fs, l.dir, lossName, encodeLoss(r)); err != nil {
		return err
	}
	l.loss = &r
	return nil
}

// LossFenced says the node has made durable what protects the replica from
// the loss Open reported (its vote fence), so the log stops reporting it:
// the loss record is removed. It does nothing when Open reported no loss.
func (l *Log) LossFenced() error {
	if l.loss == nil {
		return nil
	}
	if err := l.fs.Remove(path.Join(l.dir, lossName)); err != nil && !isNotExist(err) {
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	l.loss = nil
	return nil
}
