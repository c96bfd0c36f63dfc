package logstore

// The cleaner: Kafka log compaction (cleanup.policy=compact) in bounded
// steps on the reactor.
//
// A pass works on the sealed segments whose entries are all below the
// limit index the node passes (applied entries; the active segment is never
// touched). It has two phases, each advanced by CleanStep a bounded number
// of bytes at a time:
//
//  1. Map: read the dirty segments (those not cleaned by an earlier pass of
//     this Log) and record, per key (a 128-bit hash of it), the offset of
//     its latest record.
//  2. Copy: rewrite every segment of the pass, oldest first, into
//     "<segment>.log.tmp": a record is dropped if a later record of its key
//     is in the map, or if it is a tombstone (null value) whose timestamp is
//     older than DeleteRetentionMs. When a segment is done: sync the new
//     file, write and sync its index as "<index>.idx.tmp", rename both over
//     the originals, sync the directory. Only then does the log switch to the
//     new file.
//
// What is preserved: every entry stays, with its index, term, kind,
// generation, chain link, offsets and timestamp; a batch keeps its base
// offset, lastOffsetDelta, timestamps and producer fields even when records
// go, and a batch whose records all go stays as an empty batch (as Kafka's
// cleaner does), so offsets, Raft indexes and idempotent-producer state are
// unchanged. Control batches and transactional batches are copied as they
// are (transaction-aware cleaning is not done), and so is anything the
// cleaner cannot decode. Keyless records are kept.
//
// Transactions (CleanConfig.Txns set; compact_txn.go): the pass only takes
// segments wholly below the last stable offset, so every transaction with
// data in it is decided. Records of aborted transactions (from the
// partition's aborted-transaction index) are removed and never shadow
// anything; committed transactional records are compacted like any others.
// A marker (control batch) loses its record, as Kafka's cleaner removes it,
// only when every batch of its transaction was already empty when the pass
// began (its data went in an earlier pass: Kafka's two passes) and its
// timestamp is older than DeleteRetentionMs. Without Txns, transactional
// batches and markers are copied as they are and shadow nothing.
//
// Crash safety: before the renames the original files are untouched and a
// reopen deletes *.tmp leftovers; between the two renames the new segment
// sits next to the old index file, which no longer matches it, so a reopen
// rescans the segment and rebuilds the index. The rewrite keeps every chain
// link, so the rescanned segment still chains.
//
// A pass restarts from scratch if anything but the cleaner changes the
// segments (truncation, retention, snapshot install). The "already cleaned"
// point is kept in memory only: after a reopen the first pass treats every
// segment as dirty. Memory: the map holds about 40 bytes per distinct key in
// the dirty segments.

import (
	"crypto/sha256"
	"fmt"
	"io"
	"path"
	"time"

	"github.com/floe-broker/floe/internal/plant"
	"github.com/floe-broker/floe/node/records"
)

// CleanConfig configures compaction.
type CleanConfig struct {
	// DeleteRetentionMs is delete.retention.ms: how long a tombstone (a
	// record with a null value) is kept, by its timestamp.
	DeleteRetentionMs int64
	// BytesPerStepMax bounds the segment bytes one CleanStep reads (at least
	// one entry; default 4 MiB).
	BytesPerStepMax int
	// Txns, when set, makes the cleaner transaction-aware (compact_txn.go).
	Txns *TxnView
}

type cleanPhase uint8

const (
	cleanIdle cleanPhase = iota
	cleanMapping
	cleanCopying
)

// cleanerState is a pass in progress. Invariant: outside cleanIdle,
// passSegs names l.segs[:len(passSegs)] (structVersion unchanged), and the
// cursor (seg, pos) is at an entry boundary of l.segs[seg].
type cleanerState struct {
	phase          cleanPhase
	structVersion  uint64
	cleanedThrough uint64 // entries <= it were cleaned by a finished pass
	passSegs       []string
	passLast       uint64
	latest         map[[16]byte]int64
	txn            *txnPass // nil: not transaction-aware
	seg            int
	pos            int64
	out            *cleanOutput
}

// cleanOutput is the rewritten copy of the segment being cleaned.
type cleanOutput struct {
	f       File
	tmpName string
	seg     *segment
	buf     []byte
}

// CleanStep advances compaction by at most cfg.BytesPerStepMax bytes of
// reading (plus, when a segment completes, two file syncs and a directory
// sync). done is true when no pass is in progress after the call: either a
// pass just finished or there was nothing to clean. limitIndex bounds the
// entries it may rewrite (all < limitIndex).
func (l *Log) CleanStep(now time.Time, cfg CleanConfig, limitIndex uint64) (done bool, err error) {
	if err := l.writable(); err != nil {
		return false, err
	}
	if cfg.BytesPerStepMax <= 0 {
		cfg.BytesPerStepMax = 4 << 20
	}
	c := &l.cleaner
	if c.phase != cleanIdle && c.structVersion != l.structVersion {
		c.abort(l)
		l.stats.Cleaner.PassesAborted++
	}
	if c.phase == cleanIdle && !c.start(l, limitIndex, cfg.Txns) {
		return true, nil
	}
	switch c.phase {
	case cleanMapping:
		err = c.mapStep(l, cfg)
	case cleanCopying:
		err = c.copyStep(l, now, cfg)
	}
	if err != nil {
		c.abort(l)
		return false, err
	}
	return c.phase == cleanIdle, nil
}

// start begins a pass if some sealed segment below limitIndex (and, with
// txns, wholly below the last stable offset) is dirty.
func (c *cleanerState) start(l *Log, limitIndex uint64, txns *TxnView) bool {
	var names []string
	dirtyFirst := -1
	var last uint64
	var passEnd int64
	for _, s := range l.segs[:len(l.segs)-1] {
		if !s.sealed || s.empty() || s.last >= limitIndex {
			break
		}
		if txns != nil && s.nextOffset > txns.StableOffset {
			break // an open transaction's data, or data past it
		}
		passEnd = s.nextOffset
		names = append(names, s.name)
		if dirtyFirst < 0 && s.last > c.cleanedThrough {
			dirtyFirst = len(names) - 1
		}
		last = s.last
	}
	if dirtyFirst < 0 {
		return false
	}
	*c = cleanerState{phase: cleanMapping, structVersion: l.structVersion, cleanedThrough: c.cleanedThrough,
		passSegs: names, passLast: last, latest: map[[16]byte]int64{}, seg: dirtyFirst}
	if txns != nil {
		c.txn = newTxnPass(txns, l.segs[0].baseOffset, passEnd)
	}
	return true
}

func keyHash(key []byte) [16]byte {
	sum := sha256.Sum256(key)
	var h [16]byte
	copy(h[:], sum[:16])
	return h
}

// mapStep reads dirty segments into the key map.
func (c *cleanerState) mapStep(l *Log, cfg CleanConfig) error {
	budget := int64(cfg.BytesPerStepMax)
	for budget > 0 && c.seg < len(c.passSegs) {
		s := l.segs[c.seg]
		sc := l.scanner(s, c.pos, 0)
		for budget > 0 {
			at := sc.pos
			h, raw, err := sc.next(true)
			if err == io.EOF {
				c.seg, c.pos = c.seg+1, 0
				break
			}
			if err != nil {
				return corruptAt(s, at, err)
			}
			budget -= h.size()
			l.stats.Cleaner.BytesRead += h.size()
			c.pos = sc.pos
			if h.kind == KindBatch {
				c.noteKeys(raw[entryHeaderBytes:])
			}
		}
	}
	if c.seg == len(c.passSegs) {
		c.phase, c.seg, c.pos = cleanCopying, 0, 0
	}
	return nil
}

// cleanable reports whether the cleaner may filter batch b by key: control
// batches, and what it cannot parse, are copied as they are; so are
// transactional batches unless the pass knows transactions (then those of
// committed transactions are filtered like any other; the caller handles
// aborted ones).
func (c *cleanerState) cleanable(b []byte) (records.Header, bool) {
	h, err := records.ParseBatch(b)
	if err != nil || h.IsControl() {
		return h, false
	}
	if h.IsTransactional() {
		return h, c.txn != nil && !c.txn.aborted(h.ProducerID, h.BaseOffset)
	}
	return h, true
}

// noteKeys records the offset of each keyed record of batch b, unless b
// does not decode (then it is copied as it is, and none of its keys count).
func (c *cleanerState) noteKeys(b []byte) {
	bh, ok := c.cleanable(b)
	if plant.Enabled(plant.CompactAbortedShadows) && c.txn != nil && bh.IsTransactional() && !bh.IsControl() {
		ok = true
	}
	if !ok {
		return
	}
	type keyAt struct {
		hash   [16]byte
		offset int64
	}
	var keys []keyAt
	err := records.Records(b, func(r records.Record) error {
		if r.Key != nil {
			keys = append(keys, keyAt{keyHash(r.Key), bh.BaseOffset + int64(r.OffsetDelta)})
		}
		return nil
	})
	if err != nil {
		return
	}
	for _, k := range keys {
		c.latest[k.hash] = k.offset
	}
}

// copyStep rewrites the current segment, swapping it in when complete.
func (c *cleanerState) copyStep(l *Log, now time.Time, cfg CleanConfig) error {
	s := l.segs[c.seg]
	if c.out == nil {
		if err := c.openOutput(l, s); err != nil {
			return err
		}
	}
	out := c.out
	sc := l.scanner(s, c.pos, 0)
	for budget := int64(cfg.BytesPerStepMax); budget > 0; {
		at := sc.pos
		h, raw, err := sc.next(true)
		if err == io.EOF {
			return c.swap(l, s)
		}
		if err != nil {
			return corruptAt(s, at, err)
		}
		budget -= h.size()
		l.stats.Cleaner.BytesRead += h.size()
		payload := raw[entryHeaderBytes:]
		if h.kind == KindBatch {
			if payload, err = c.cleanBatch(l, payload, now, cfg); err != nil {
				return err
			}
		}
		var link uint32
		out.buf, link = appendEntry(out.buf[:0], h, payload)
		if link != entryLink(raw) {
			return fmt.Errorf("logstore: cleaner changed the link of entry %d", h.index)
		}
		if _, err := out.f.Write(out.buf); err != nil {
			return err
		}
		h.length = uint32(len(payload))
		out.seg.noteAppended(h, link, out.seg.size, int64(l.opts.IndexIntervalBytes))
		l.stats.Cleaner.BytesWritten += h.size()
		c.pos = sc.pos
	}
	return nil
}

func (c *cleanerState) openOutput(l *Log, s *segment) error {
	tmp := s.name + ".tmp"
	if err := l.fs.Remove(path.Join(l.dir, tmp)); err != nil && !isNotExist(err) {
		return err
	}
	f, err := l.fs.Create(path.Join(l.dir, tmp))
	if err != nil {
		return err
	}
	c.out = &cleanOutput{f: f, tmpName: tmp, seg: newSegment(s.name, s.base, s.fileGen, f, s.firstPrevLink, s.baseOffset)}
	return nil
}

// cleanBatch returns batch b without its superseded records and expired
// tombstones (b itself when nothing goes, or when b does not decode).
// records.Filter keeps the batch's offsets, timestamps and producer fields.
func (c *cleanerState) cleanBatch(l *Log, b []byte, now time.Time, cfg CleanConfig) ([]byte, error) {
	if c.txn != nil {
		if out, done := c.txn.cleanTxnBatch(l, b, now, cfg); done {
			return out, nil
		}
	}
	bh, ok := c.cleanable(b)
	if !ok {
		return b, nil
	}
	horizonMs := now.UnixMilli() - cfg.DeleteRetentionMs
	out, removed, err := records.Filter(b, func(r records.Record) bool {
		if r.Key == nil {
			return true
		}
		if latest, ok := c.latest[keyHash(r.Key)]; ok && latest > bh.BaseOffset+int64(r.OffsetDelta) {
			return false
		}
		return r.Value != nil || bh.Timestamp(r) >= horizonMs
	})
	if err != nil || removed == 0 {
		return b, nil
	}
	l.stats.Cleaner.RecordsRemoved += int64(removed)
	if removed == int(bh.RecordCount) {
		l.stats.Cleaner.BatchesEmptied++
	}
	return out, nil
}

// swap makes the rewritten segment durable, renames it (and its index)
// over the original, and switches the log to it.
func (c *cleanerState) swap(l *Log, s *segment) error {
	out := c.out
	ns := out.seg
	if ns.last != s.last || ns.lastLink != s.lastLink || ns.nextOffset != s.nextOffset {
		return fmt.Errorf("logstore: cleaner output of %s does not match it", s.name)
	}
	if err := out.f.Sync(); err != nil {
		return err
	}
	idxTmp := indexName(s.name) + ".tmp"
	if err := writeSynced(l.fs, path.Join(l.dir, idxTmp), encodeIndex(ns, termsIn(l.terms, s.base, s.last))); err != nil {
		return err
	}
	if err := l.fs.Rename(path.Join(l.dir, out.tmpName), path.Join(l.dir, s.name)); err != nil {
		return err
	}
	if err := l.fs.Rename(path.Join(l.dir, idxTmp), path.Join(l.dir, indexName(s.name))); err != nil {
		return l.fail(fmt.Errorf("cleaner: rename index: %w", err))
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.fail(fmt.Errorf("cleaner: sync dir: %w", err))
	}
	old := s.f
	ns.sealed, ns.openedMono = true, s.openedMono
	*s = *ns
	l.bury(old, "", 0)
	l.stats.Cleaner.SegmentsCleaned++
	c.out = nil
	c.seg, c.pos = c.seg+1, 0
	if c.seg == len(c.passSegs) {
		l.stats.Cleaner.Passes++
		*c = cleanerState{cleanedThrough: c.passLast}
	}
	return nil
}

// writeSynced creates name (replacing a leftover) with data and syncs it.
func writeSynced(fsys FS, name string, data []byte) error {
	if err := fsys.Remove(name); err != nil && !isNotExist(err) {
		return err
	}
	f, err := fsys.Create(name)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// abort drops a pass in progress and its temporary file.
func (c *cleanerState) abort(l *Log) {
	if c.out != nil {
		c.out.f.Close()
		l.fs.Remove(path.Join(l.dir, c.out.tmpName))
	}
	*c = cleanerState{cleanedThrough: c.cleanedThrough}
}

func (c *cleanerState) progress() (total, done int) {
	if c.phase == cleanCopying {
		return len(c.passSegs), c.seg
	}
	return len(c.passSegs), 0
}
