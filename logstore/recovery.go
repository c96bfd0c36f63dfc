package logstore

// Opening a log recovers the longest valid log the files hold.
//
// The newest valid meta record says where the physical log starts
// (logStart: first index, the prevLink its entry carries, its offset).
// From there recovery follows the chain (see segment.go): the next segment
// is a file whose base is the previous last index + 1 and whose first entry
// links to the previous last entry. Among several files with that base (a
// crash can leave a stale one from before a truncation or snapshot install)
// only a linking one is taken. Every segment but the last loads its index
// file when that file agrees with the segment (size, and the last entry
// re-read and checked); otherwise, and always for the last (active)
// segment, recovery scans it, verifying every entry's CRC, index, link and
// offset. The first bad entry ends the log: the file is cut there and every
// later file is deleted. Files not on the chain are deleted. Then recovery
// syncs what it changed and the active segment, so everything Open returns
// is durable (DurableIndex == LastIndex).
//
// A bad entry at the very end of the file is a torn write, unless it is a
// whole entry that fails its CRC or reads whole with its CRC once its
// header's length is corrected (wholeEntryDamagedHeader). A bad entry with
// more data after it is damage (Recovery.Corrupt): the entries after it were
// complete, so some may have been acknowledged, and the node should treat
// this replica as having lost data (for example, not vote until it has caught
// up from the leader). Recovery.HeldThrough then bounds what was lost: the
// highest index any segment file held. Damaged data is cut from the log but
// not destroyed: the cut bytes and the segment files after them are kept
// beside the log as "*.damaged" files, for an operator (a replica with no
// peer to repair from may hold the only copy). Corruption inside a sealed
// segment whose index file is intact is not seen here: it is found when
// read, and reported then.
//
// A loss found (damage, or a log cut back below its snapshot) is made
// durable in the loss record before recovery changes any file because of
// it, and reported by every Open until the node calls LossFenced (loss.go).
//
// What recovery cannot see: a file cut back (a disk losing synced writes)
// to an entry boundary looks like a clean end, or like a torn write. The
// node compares the log's end with the commit index the meta record holds
// (node/replicas.go); a loss above that index is not detected.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// Recovery reports what Open found and cut.
type Recovery struct {
	// Reason says why something was cut; "" when nothing was.
	Reason string
	// Segment and Position locate the first cut.
	Segment  string
	Position int64
	// EntriesCut counts complete entries dropped from the chain's segments
	// at and after the cut (entries of deleted, unchained files are not
	// counted: they were never part of the log).
	EntriesCut int
	// BytesCut counts bytes removed: cut tails and deleted files.
	BytesCut int64
	// SegmentsRemoved counts segment files deleted (unchained or after a cut).
	SegmentsRemoved int
	// IndexesRebuilt counts sealed segments whose index file was rebuilt.
	IndexesRebuilt int
	// Corrupt: a damaged entry had data after it (see the top of recovery.go).
	Corrupt bool
	// HeldThrough, when Corrupt, is the highest entry index found in the
	// segment files before recovery cut them (at least LastIndex):
	// entries up to it may have been durable, and acknowledged.
	// HeldUnknown says how far the lost entries went is unknown, so more
	// may have been lost than HeldThrough says: the entries after a
	// damaged one could not be followed (its header was damaged), or the
	// log ended before its snapshot point (restartAfterSnapshot: the files
	// were cut back, and a cut file keeps no record of its old end).
	HeldThrough uint64
	HeldUnknown bool
}

// anchor is the link the first entry after a snapshot install carries: it
// depends on the snapshot point and the generation, so entries appended
// after a different install (or none) cannot pass for them.
func anchor(index, term uint64, nextOffset int64, gen uint32) uint32 {
	var b [32]byte
	le := binary.LittleEndian
	le.PutUint64(b[0:], index)
	le.PutUint64(b[8:], term)
	le.PutUint64(b[16:], uint64(nextOffset))
	le.PutUint32(b[24:], gen)
	copy(b[28:], "snap")
	return crc32c(b[:])
}

// segFile is a segment file found in the directory.
type segFile struct {
	name string
	base uint64
	gen  uint32
}

// Open opens the log in dir, creating dir and an empty log if missing, and
// recovers it (see the top of recovery.go).
func Open(fsys FS, dir string, opts Options) (*Log, Recovery, error) {
	l := &Log{fs: fsys, dir: cleanName(dir), opts: opts.withDefaults(), bufs: opts.ReadBuffers}
	if l.bufs == nil {
		l.bufs = new(ReadBuffers)
	}
	var rec Recovery
	if err := l.open(&rec); err != nil {
		l.closeFiles()
		return nil, rec, err
	}
	return l, rec, nil
}

func (l *Log) open(rec *Recovery) error {
	if err := ensureDir(l.fs, l.dir); err != nil {
		return err
	}
	names, err := l.fs.List(l.dir)
	if err != nil {
		return err
	}
	segFiles, idxNames, err := l.sortFiles(names)
	if err != nil {
		return err
	}
	if err := l.readLoss(rec); err != nil {
		return err
	}
	mf, m, found, err := openMeta(l.fs, l.dir)
	l.sy.meta = mf
	if err != nil {
		return err
	}
	if !found {
		// No meta record was ever made durable: the meta files are empty
		// or hold a torn first record (meta.go), so the log's first sync
		// never completed. No hard state (so no vote) was ever recorded
		// and nothing was acknowledged; recover the segments as a log
		// starting at index 1. Segment files that do not continue that
		// chain cannot come from such a log: they are refused, not
		// deleted (recoverChain).
		m = metaState{logStart: chainPoint{index: 1, prevLink: anchor(0, 0, 0, 0)}}
		l.noMeta = true
		l.sy.dirDirty = true // the meta files were just created
	}
	l.hs, l.snap, l.startOffset, l.logStart = m.hs, m.snap, m.startOffset, m.logStart
	l.sy.metaSeq, l.sy.writtenHS, l.sy.durableHS, l.sy.durableSnapIndex = m.seq, m.hs, m.hs, m.snap.Index
	l.sy.metaVersion, l.sy.metaWritten = 1, 1
	// A generation above every file's and entry's: new files get fresh
	// names, and entries appended from now on differ from any before.
	for _, sf := range segFiles {
		l.gen = max(l.gen, sf.gen+1)
	}
	if err := l.recoverChain(segFiles, idxNames, rec); err != nil {
		return err
	}
	if !found || l.lastIndex < l.snap.Index {
		if err := l.restartAfterSnapshot(found, rec); err != nil {
			return err
		}
	}
	l.startOffset = min(max(l.startOffset, l.logStart.offset), l.nextOffset)
	if l.loss != nil && rec.Reason == "" {
		rec.Reason = "an earlier open recorded a loss the node has not fenced yet"
	}
	return l.syncRecovered()
}

// ensureDir creates dir if missing and makes its entry durable.
func ensureDir(fsys FS, dir string) error {
	if _, err := fsys.List(dir); err == nil || !isNotExist(err) {
		return err
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return err
	}
	for d := dir; d != ""; {
		parent := path.Dir(d)
		if parent == "." {
			parent = ""
		}
		if err := fsys.SyncDir(parent); err != nil {
			return err
		}
		d = parent
	}
	return nil
}

// sortFiles sorts the directory: segment files by base then newest
// generation first; it deletes leftovers of interrupted writes (*.tmp).
func (l *Log) sortFiles(names []string) ([]segFile, map[string]bool, error) {
	var segs []segFile
	idx := map[string]bool{}
	for _, name := range names {
		switch {
		case strings.HasSuffix(name, ".tmp"):
			if err := l.fs.Remove(path.Join(l.dir, name)); err != nil && !isNotExist(err) {
				return nil, nil, err
			}
			l.sy.dirDirty = true
		case strings.HasSuffix(name, ".idx"):
			idx[name] = true
		default:
			if base, gen, ok := parseSegmentName(name); ok {
				segs = append(segs, segFile{name: name, base: base, gen: gen})
			}
		}
	}
	sort.Slice(segs, func(i, j int) bool {
		if segs[i].base != segs[j].base {
			return segs[i].base < segs[j].base
		}
		return segs[i].gen > segs[j].gen
	})
	return segs, idx, nil
}

// recoverChain builds l.segs by following the chain from logStart, then
// deletes every other segment and index file.
func (l *Log) recoverChain(files []segFile, idxNames map[string]bool, rec *Recovery) error {
	l.recFiles = files
	defer func() { l.recFiles = nil }()
	expect := l.logStart
	used := map[string]bool{}
	l.lastIndex, l.lastTerm, l.lastLink, l.nextOffset = expect.index-1, l.snap.Term, expect.prevLink, expect.offset
	if expect.index <= l.snap.Index {
		l.lastTerm = 0 // the entry before the physical log is gone; its term is unknown
	}
	for {
		s, err := l.pickSegment(files, expect)
		if err != nil {
			return err
		}
		if s == nil {
			break
		}
		used[s.name] = true
		l.segs = append(l.segs, s)
		cut, err := l.loadSegment(s, expect, idxNames[indexName(s.name)], rec)
		if err != nil {
			return err
		}
		l.gen = max(l.gen, s.maxGen+1)
		l.refreshTail()
		if cut || s.empty() {
			break
		}
		expect = chainPoint{index: s.last + 1, prevLink: s.lastLink, offset: s.nextOffset}
	}
	if l.noMeta {
		for _, sf := range files {
			if !used[sf.name] {
				return fmt.Errorf("%w: %s has no valid meta record and segment %s does not continue its log from index 1",
					ErrCorrupt, l.dir, sf.name)
			}
		}
	}
	if err := l.finishActive(rec); err != nil {
		return err
	}
	l.refreshTail()
	if rec.Corrupt {
		l.noteHeld(files, used, rec)
		if err := l.recordLoss(rec); err != nil { // before the files go
			return err
		}
	}
	return l.deleteUnchained(files, idxNames, used, rec)
}

// noteHeld completes Recovery.HeldThrough with the log's end and the files
// off the chain (those after a cut among them).
func (l *Log) noteHeld(files []segFile, used map[string]bool, rec *Recovery) {
	rec.HeldThrough = max(rec.HeldThrough, l.lastIndex)
	for _, sf := range files {
		if used[sf.name] {
			continue
		}
		f, err := l.fs.Open(path.Join(l.dir, sf.name))
		if err != nil {
			rec.HeldUnknown = true
			continue
		}
		if size, err := f.Size(); err != nil {
			rec.HeldUnknown = true
		} else {
			last, clean := lastIndexIn(f, 0, size, l.opts.EntryBytesMax)
			rec.HeldThrough = max(rec.HeldThrough, last)
			rec.HeldUnknown = rec.HeldUnknown || !clean
		}
		f.Close()
	}
}

// lastIndexIn follows the entry headers of f from pos to end, without
// checking CRCs, and returns the highest index it met. clean is false if a
// header did not parse before the end (a torn last entry is clean: it
// was never durable).
func lastIndexIn(f File, pos, end int64, lengthMax int) (last uint64, clean bool) {
	sc := newEntryScanner(f, pos, end, lengthMax, scanChunkBytes)
	for {
		h, err := sc.peek()
		switch {
		case err == io.EOF || errors.Is(err, errTruncated):
			return last, true
		case err != nil:
			return last, false
		case sc.pos+h.size() > end:
			return last, true
		}
		last = max(last, h.index)
		sc.skip(h)
	}
}

// pickSegment opens the file continuing the chain at expect: one whose first
// entry is expect.index linking to expect.prevLink, else one with that base
// whose first entry is damaged or torn (the scan then cuts it, keeping what
// followed a damaged entry aside; a stale file from before a truncation has
// an intact first entry that does not link), else an empty file with that
// base (a segment rolled to but never written), else none.
func (l *Log) pickSegment(files []segFile, expect chainPoint) (*segment, error) {
	var empty, damaged *segment
	defer func() {
		for _, s := range []*segment{empty, damaged} {
			if s != nil && s.f != nil {
				s.f.Close()
			}
		}
	}()
	for _, sf := range files {
		if sf.base != expect.index {
			continue
		}
		f, err := l.fs.Open(path.Join(l.dir, sf.name))
		if err != nil {
			return nil, err
		}
		size, err := f.Size()
		if err != nil {
			f.Close()
			return nil, err
		}
		s := newSegment(sf.name, sf.base, sf.gen, f, expect.prevLink, expect.offset)
		s.size = size
		switch {
		case size == 0 && empty == nil:
			empty = s
			continue
		case size == 0:
		default:
			sc := newEntryScanner(f, 0, size, l.opts.EntryBytesMax, entryHeaderBytes)
			h, err := sc.peek()
			if err == nil && h.index == expect.index && h.prevLink == expect.prevLink {
				return s, nil
			}
			switch {
			case err == nil && h.size() > size:
				err = errTruncated
			case err == nil && damaged == nil:
				_, err = sc.take(h, true) // nil: an intact entry that does not link, stale
			}
			if err != nil && damaged == nil { // damaged, or torn: the scan tells which
				damaged = s
				continue
			}
		}
		f.Close()
	}
	if damaged != nil {
		s := damaged
		damaged = nil
		return s, nil
	}
	s := empty
	empty = nil
	return s, nil
}

// loadSegment fills s from its index file when that can be trusted, else by
// scanning. cut reports that the scan cut s short (the chain ends with it).
func (l *Log) loadSegment(s *segment, expect chainPoint, hasIndex bool, rec *Recovery) (cut bool, err error) {
	if hasIndex {
		if terms, ok := l.loadIndex(s, expect); ok {
			s.sealed = true
			for _, t := range terms {
				l.terms = noteTerm(l.terms, t.firstIndex, t.term)
			}
			return false, nil
		}
	}
	return l.scanSegment(s, expect, l.lastTerm, rec)
}

// loadIndex reads and checks s's index file.
func (l *Log) loadIndex(s *segment, expect chainPoint) ([]termRun, bool) {
	f, err := l.fs.Open(path.Join(l.dir, indexName(s.name)))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := readWhole(f)
	if err != nil {
		return nil, false
	}
	fileSize := s.size
	probe := *s
	terms, err := decodeIndex(b, &probe)
	if err != nil || probe.size != fileSize || probe.firstPrevLink != expect.prevLink ||
		probe.baseOffset != expect.offset || probe.last < probe.base || len(terms) == 0 {
		return nil, false
	}
	sc := newEntryScanner(s.f, probe.lastPos, probe.size, l.opts.EntryBytesMax, 0)
	h, raw, err := sc.next(true)
	if err != nil || h.index != probe.last || entryLink(raw) != probe.lastLink || sc.pos != probe.size {
		return nil, false
	}
	*s = probe
	return terms, true
}

// scanSegment reads s from the start, verifying every entry against the
// chain, and cuts it at the first bad one.
// term is the term of the entry before s.
func (l *Log) scanSegment(s *segment, expect chainPoint, term uint64, rec *Recovery) (cut bool, err error) {
	fileSize := s.size
	*s = *newSegment(s.name, s.base, s.fileGen, s.f, expect.prevLink, expect.offset)
	sc := newEntryScanner(s.f, 0, fileSize, l.opts.EntryBytesMax, 0)
	for {
		at := sc.pos
		h, raw, err := sc.next(true)
		if err == io.EOF {
			return false, nil
		}
		if err == nil {
			err = checkChained(h, raw, expect, term)
		}
		if err != nil && !damagedEntry(err) {
			// The disk failed to read (EIO): the bytes may be fine, so
			// nothing is cut; opening fails and is retried.
			return false, fmt.Errorf("logstore: recovery read of %s at byte %d: %w", s.name, at, err)
		}
		if err != nil {
			return true, l.cutSegment(s, at, fileSize, expect.index, err, rec)
		}
		link := entryLink(raw)
		s.noteAppended(h, link, at, int64(l.opts.IndexIntervalBytes))
		l.terms = noteTerm(l.terms, h.index, h.term)
		expect = chainPoint{index: h.index + 1, prevLink: link, offset: h.offsetAfter()}
		term = h.term
	}
}

var errChain = errors.New("entry does not continue the chain")

// damagedEntry reports whether a scan error says what the bytes hold (a
// torn, damaged or foreign entry), rather than that reading them failed.
func damagedEntry(err error) bool {
	return errors.Is(err, errTruncated) || errors.Is(err, errChecksum) || errors.Is(err, errBadHeader) || errors.Is(err, errChain)
}

// checkChained checks a CRC-valid entry continues the log.
func checkChained(h entryHeader, raw []byte, expect chainPoint, term uint64) error {
	switch {
	case h.index != expect.index || h.prevLink != expect.prevLink || h.baseOffset != expect.offset || h.term < term:
		return errChain
	case h.kind == KindBatch && h.lastOffsetDelta < 0, h.kind != KindBatch && h.lastOffsetDelta != -1:
		return errChain
	}
	return nil
}

// cutSegment records a cut of s at pos and truncates the file there.
// index is the index the entry at pos should have had.
func (l *Log) cutSegment(s *segment, pos, fileSize int64, index uint64, why error, rec *Recovery) error {
	f := &probeFile{File: s.f}
	n, _ := countEntries(f, pos, fileSize, l.opts.EntryBytesMax)
	c := l.judgeCut(f, s.base, pos, fileSize, index, why)
	var last uint64
	clean := true
	if c.corrupt {
		// The damaged entry, and those after it (from the next intact one).
		last, clean = lastIndexIn(f, c.after, fileSize, l.opts.EntryBytesMax)
	}
	if f.err != nil {
		// A probe that could not read answers "nothing there", which
		// says nothing about the bytes: taken for an answer, it bounded
		// the loss at the damaged entry while intact entries followed
		// (sim seed 953872 on 135883d: a controller log cut at entry 7
		// with entries to 28 after it, one read failing, fenced at 7).
		// As for a failed read in the scan: nothing is cut; opening
		// fails and is retried.
		return fmt.Errorf("logstore: recovery read of %s after byte %d: %w", s.name, pos, f.err)
	}
	if rec.Reason == "" {
		rec.Reason = fmt.Sprintf("cut %s at byte %d: %v", s.name, pos, why)
		rec.Segment, rec.Position = s.name, pos
	}
	rec.Corrupt = rec.Corrupt || c.corrupt
	rec.EntriesCut += n
	rec.BytesCut += fileSize - pos
	if c.corrupt {
		rec.HeldThrough = max(rec.HeldThrough, index, last)
		rec.HeldUnknown = rec.HeldUnknown || c.unknown || !clean
		if err := l.recordLoss(rec); err != nil { // before the cut (loss.go)
			return err
		}
		if err := l.keepDamaged(s, pos, fileSize); err != nil {
			return err
		}
	}
	if err := s.f.Truncate(pos); err != nil {
		return err
	}
	l.markDirty(s.f)
	return nil
}

// cutJudgement is what the bytes at a cut say: damage (corrupt) or a torn
// write; for damage, where the entries after the damaged one start
// (after; the end of the file if none follow) and whether that is unknown.
type cutJudgement struct {
	corrupt bool
	after   int64
	unknown bool
}

// judgeCut tells damage from a torn write at pos of f, the segment file
// at base (see cutSegment).
//
// A torn write leaves a prefix of what was written: its last entry is
// incomplete (errTruncated), and nothing intact follows. An entry that is
// whole but fails its CRC, or whose header is bad but whose length ends
// the file exactly, or that is followed by an intact entry, was damaged
// after it was written: it and what follows may have been acknowledged.
func (l *Log) judgeCut(f File, base uint64, pos, fileSize int64, index uint64, why error) cutJudgement {
	c := cutJudgement{after: fileSize}
	found := false // the entry after the damaged one, or its end, was found
	zeroHeader, zeroTail, first := zeroRegionAt(f, pos, fileSize)
	switch {
	case zeroTail && !l.laterSegmentData(base):
		// The file system extended the active segment but the data never
		// landed: zeros from the last good entry to the end of the file
		// are a torn write, never durable (a sector read back as zeros).
		return c
	case l.tornIntoZeros(f, base, pos, fileSize, index, why, first):
		// The last write torn at a sector boundary inside this entry,
		// zeros after it (recovery_torn.go): never durable.
		return c
	case zeroHeader:
		// Zeros where an entry should start, with data after them (or in
		// a segment the log had moved past): a torn write leaves a prefix
		// of what was written, never a hole before it, so the zeros hide
		// entries that were there.
		c.corrupt = true
		if at, ok := l.findEntryAfter(f, pos+1, fileSize, index+1, false); ok {
			c.after = at
		} else if !zeroTail {
			c.unknown = true
		}
		return c
	case errors.Is(why, errChecksum), errors.Is(why, errHeaderCheck):
		// A whole entry whose CRC fails, or a header (whole, so written
		// whole) whose check fails.
		c.corrupt = true
	case errors.Is(why, errBadHeader):
		c.corrupt = wholeEntryAt(f, pos, fileSize)
		found = c.corrupt // its length ends the file
	}
	if c.corrupt || errors.Is(why, errBadHeader) || errors.Is(why, errTruncated) {
		// The entry's own length may be what was damaged: find the entry
		// that followed it by its index.
		if at, ok := l.findEntryAfter(f, pos+1, fileSize, index+1, true); ok {
			c.corrupt, c.after, found = true, at, true
		} else if end, ok := l.wholeEntryDamagedHeader(f, pos, fileSize, index); ok {
			// Nothing intact follows, but the entry itself is whole:
			// its CRC holds once its header's length (and magic and
			// reserved bytes) are set to what they must have been.
			c.corrupt, c.after, found = true, end, true
		}
	}
	if c.corrupt && !found && !wholeEntryAt(f, pos, fileSize) {
		// Damage with bytes after it that are neither the next entry
		// nor the damaged entry's own: entries may follow (a second
		// damaged one hides them from the search), so how far the loss
		// goes is unknown.
		c.unknown = true
	}
	return c
}

// probeFile is a segment file as recovery's probes read it: it remembers
// the first read that failed (other than at the end of the file).
type probeFile struct {
	File
	err error
}

func (p *probeFile) ReadAt(b []byte, off int64) (int, error) {
	n, err := p.File.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) && p.err == nil {
		p.err = err
	}
	return n, err
}

// zeroRegionAt reports whether the bytes at pos where an entry should
// start are zeros (the whole header, or up to end if that comes first:
// no entry starts so, its magic byte is not 0), and whether every byte
// from pos to end is zero. first is the first window it read from pos
// (nil if a read failed), for tornIntoZeros to judge without reading
// again: a read draws a simulated disk's fault generator, so reads
// recovery did not need would move the simulator's seeds.
func zeroRegionAt(f File, pos, end int64) (header, tail bool, first []byte) {
	const window = 64 << 10
	buf := make([]byte, min(window, end-pos))
	for at := pos; at < end; at += window {
		b := buf[:min(window, end-at)]
		if n, err := f.ReadAt(b, at); err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
			return false, false, nil
		}
		if at == pos {
			first = b
		}
		for i, c := range b {
			if c != 0 {
				return at+int64(i) >= pos+entryHeaderBytes, false, first
			}
		}
	}
	return end > pos, end > pos, first
}

// laterSegmentData reports whether a segment file with a higher base than
// base holds any bytes: then the segment at base is not the one the log
// was appending to (during recovery; false otherwise).
func (l *Log) laterSegmentData(base uint64) bool {
	for _, sf := range l.recFiles {
		if sf.base <= base {
			continue
		}
		f, err := l.fs.Open(path.Join(l.dir, sf.name))
		if err != nil {
			return true // cannot tell: not taken for the active segment
		}
		size, err := f.Size()
		f.Close()
		if err != nil || size > 0 {
			return true
		}
	}
	return false
}

// wholeEntryAt reports whether the bytes at pos, whose header does not
// parse, hold a whole header whose length field ends the file exactly.
func wholeEntryAt(f File, pos, end int64) bool {
	var h [entryHeaderBytes]byte
	if pos+entryHeaderBytes > end {
		return false
	}
	if _, err := f.ReadAt(h[:], pos); err != nil {
		return false
	}
	return pos+entryHeaderBytes+int64(binary.LittleEndian.Uint32(h[8:])) == end
}

// wholeEntryDamagedHeader tells a whole entry whose header was damaged
// from a torn write, when both look like an entry that runs past the end of
// the file or whose header does not parse, and nothing intact follows
// (sim seed 197: the last entry of a segment, 56 bytes, had a bit of its
// length flipped to read 32, and was cut as a torn write).
//
// A torn write leaves a prefix of what was written (SimFS; on a real disk
// also sectors never written, read back as zeros or as older bytes): it
// never changes a byte that reached the disk, so the CRC field of a torn
// entry is the CRC of bytes that are not all there. A flipped bit leaves
// the entry's bytes all there, one of them wrong. So: for each length
// that would end the entry at the end of the file, or where the entry
// after it (index+1) begins, or inside a header too short to tell (a torn
// next entry), compute the CRC with that length and with the magic and
// header-check bytes the format fixes; if it matches the stored CRC, the
// entry was whole and only its header's fixed or length bytes were damaged. It
// returns where that entry ends. A torn write passes this only by a CRC-32C
// collision (about 2^-32 per candidate length), so genuinely torn tails
// are still cut silently and a majority crashing at once with torn tails
// stays available. Damage to the CRC field or a wider garbling of the
// header together with its length is caught by the header check (cutSegment,
// errHeaderCheck); in an entry written before header checks nothing tells
// it from a tear (docs/architecture.md).
func (l *Log) wholeEntryDamagedHeader(f File, pos, end int64, index uint64) (int64, bool) {
	limit := min(end, pos+entryHeaderBytes+int64(l.opts.EntryBytesMax))
	if limit-pos < entryHeaderBytes {
		return 0, false
	}
	b := make([]byte, limit-pos)
	if n, err := f.ReadAt(b, pos); err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
		return 0, false
	}
	le := binary.LittleEndian
	stored := le.Uint32(b)
	var hdr [entryHeaderBytes]byte
	copy(hdr[:], b)
	hdr[4] = entryMagic
	for e := int64(entryHeaderBytes); e <= int64(len(b)); e++ {
		rest := b[e:]
		atEnd := pos+e == end
		switch {
		case atEnd:
		case pos+e == limit: // the longest entry the log allows ends here, not the file
			continue
		case len(rest) > 4 && rest[4] != entryMagic:
			continue
		case len(rest) >= 24 && le.Uint64(rest[16:]) != index+1:
			continue
		}
		le.PutUint32(hdr[8:], uint32(e-entryHeaderBytes))
		// With the header check this length implies, and without one
		// (an entry written before header checks).
		for _, check := range [2]uint16{headerCheck(hdr[:]), 0} {
			le.PutUint16(hdr[6:], check)
			if crc32cUpdate(crc32c(hdr[4:]), b[entryHeaderBytes:e]) == stored {
				return pos + e, true
			}
		}
	}
	return 0, false
}

// findEntryAfter looks in f from pos to end for the start of an intact
// entry (its CRC holds) whose index is index (or, unless exact, at least
// index), and returns its position.
func (l *Log) findEntryAfter(f File, pos, end int64, index uint64, exact bool) (int64, bool) {
	const window = 1 << 20
	buf := make([]byte, window+entryHeaderBytes)
	for start := pos; start+entryHeaderBytes <= end; start += window {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), end-start)], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, false
		}
		for i := 0; i+entryHeaderBytes <= n && i < window; i++ {
			if buf[i+4] != entryMagic {
				continue
			}
			h, err := parseEntryHeader(buf[i:], l.opts.EntryBytesMax)
			if err != nil || h.index < index || exact && h.index != index || start+int64(i)+h.size() > end {
				continue
			}
			at := start + int64(i)
			sc := newEntryScanner(f, at, end, l.opts.EntryBytesMax, 0)
			if _, _, err := sc.next(true); err == nil {
				return at, true
			}
		}
	}
	return 0, false
}

// keepDamaged copies the bytes of s from pos to end, which recovery is about
// to cut as damaged, to "<segment>.<pos>.damaged" beside the log.
func (l *Log) keepDamaged(s *segment, pos, end int64) error {
	b := make([]byte, end-pos)
	if n, err := s.f.ReadAt(b, pos); err != nil && !(errors.Is(err, io.EOF) && int64(n) == end-pos) {
		return err
	}
	l.sy.dirDirty = true
	return writeSynced(l.fs, path.Join(l.dir, fmt.Sprintf("%s.%d%s", s.name, pos, damagedSuffix)), b)
}

// damagedSuffix marks files recovery set aside as damaged (never read
// again by the log).
const damagedSuffix = ".damaged"

// countEntries counts the complete-looking entries from pos (by their
// length fields) and returns where the first one ends, for telling a torn
// tail from damage followed by data.
func countEntries(f File, pos, end int64, lengthMax int) (n int, firstEnd int64) {
	sc := newEntryScanner(f, pos, end, lengthMax, 0)
	firstEnd = end
	for {
		h, err := sc.peek()
		if err != nil || sc.pos+h.size() > end {
			return n, firstEnd
		}
		if n == 0 {
			firstEnd = sc.pos + h.size()
		}
		sc.skip(h)
		n++
	}
}

// finishActive makes the chain's last segment the active one: one loaded
// from its index is rescanned (the rule: the active segment is always
// verified) and unsealed; an empty chain gets a fresh segment.
func (l *Log) finishActive(rec *Recovery) error {
	if len(l.segs) == 0 {
		return l.startSegment(l.logStart.index, l.logStart.prevLink, l.logStart.offset)
	}
	s := l.active()
	if !s.sealed {
		return nil
	}
	expect := chainPoint{index: s.base, prevLink: s.firstPrevLink, offset: s.baseOffset}
	l.terms = cutTermsAfter(l.terms, s.base-1)
	// The term of the entry before s, as recoverChain starts it: when s is
	// the chain's first segment and starts at or below the snapshot point,
	// that entry is older than the snapshot's and its term is unknown (its
	// own entries may have terms below the snapshot's: sim seed 941582, a
	// controller segment 43-70 with the snapshot at 49 cut whole).
	prevTerm := uint64(0)
	if s.base > l.snap.Index {
		prevTerm = l.snap.Term
	}
	if n := len(l.terms); n > 0 {
		prevTerm = l.terms[n-1].term
	}
	size, err := s.f.Size()
	if err != nil {
		return err
	}
	s.size = size
	if _, err := l.scanSegment(s, expect, prevTerm, rec); err != nil {
		return err
	}
	return l.unseal(s)
}

// deleteUnchained deletes segment files not on the chain and index files
// without a chained, sealed segment, and rebuilds missing index files.
func (l *Log) deleteUnchained(files []segFile, idxNames, used map[string]bool, rec *Recovery) error {
	for _, sf := range files {
		if used[sf.name] {
			continue
		}
		if f, err := l.fs.Open(path.Join(l.dir, sf.name)); err == nil {
			if size, err := f.Size(); err == nil {
				rec.BytesCut += size
			}
			f.Close()
		}
		if rec.Corrupt {
			// Possibly entries after the damage: set aside, not deleted.
			if err := l.fs.Rename(path.Join(l.dir, sf.name), path.Join(l.dir, sf.name+damagedSuffix)); err != nil {
				return err
			}
		} else if err := l.fs.Remove(path.Join(l.dir, sf.name)); err != nil && !isNotExist(err) {
			return err
		}
		rec.SegmentsRemoved++
		if rec.Reason == "" {
			rec.Reason = "removed segment files not on the chain"
		}
		l.sy.dirDirty = true
	}
	sealed := map[string]bool{}
	for _, s := range l.segs {
		if s.sealed {
			sealed[indexName(s.name)] = true
		}
	}
	// Sorted: the order of removals reaches the file system (and what a
	// simulated crash keeps).
	for _, name := range sortedKeys(idxNames) {
		if !sealed[name] {
			if err := l.fs.Remove(path.Join(l.dir, name)); err != nil && !isNotExist(err) {
				return err
			}
			l.sy.dirDirty = true
		}
	}
	for _, s := range l.segs[:len(l.segs)-1] {
		if !s.sealed {
			if err := l.seal(s); err != nil {
				return err
			}
			rec.IndexesRebuilt++
		}
	}
	return nil
}

// restartAfterSnapshot gives a new log its first meta record, or restarts a
// log whose entries end before its snapshot (damage) right after the
// snapshot point, as a snapshot install would.
//
// Such a log lost entries it had made durable: a snapshot point is never
// past the durable index (SetSnapshot), so the files held at least up to
// it, and were cut back. How far they went beyond it nothing on disk says
// (the meta record's commit index may be the snapshot point itself: the
// record is rewritten with each snapshot, and the entries appended and
// acknowledged after it are in no record). Unless damage found in the
// files already bounds the loss past the snapshot point (HeldThrough),
// the loss is reported unbounded (HeldUnknown): restarting the log at the
// snapshot point must not make it look like the log the replica held
// (sim seed 911081: a controller log cut to 22 below its snapshot at 76
// had acknowledged entry 91; fenced at 76 only, the replica voted for a
// candidate without it, which overwrote it).
func (l *Log) restartAfterSnapshot(found bool, rec *Recovery) error {
	if found {
		if !rec.Corrupt || rec.HeldThrough < l.snap.Index {
			rec.HeldUnknown = true
		}
		rec.Corrupt = true
		rec.Reason = fmt.Sprintf("log ends at %d before the snapshot at %d; restarted after the snapshot", l.lastIndex, l.snap.Index)
		// The loss durable before the segments go and the meta record
		// saying the log starts after the snapshot is written: after
		// those, nothing else on disk shows it (loss.go).
		if err := l.recordLoss(rec); err != nil { // the loss durable first
			return err
		}
		for _, s := range l.segs {
			rec.BytesCut += s.size
			rec.SegmentsRemoved++
			l.bury(s.f, s.name, 0)
			if s.sealed {
				l.bury(nil, indexName(s.name), 0)
			}
		}
		l.segs, l.terms = nil, nil
		l.logStart = chainPoint{index: l.snap.Index + 1, prevLink: anchor(l.snap.Index, l.snap.Term, l.snap.NextOffset, l.gen), offset: l.snap.NextOffset}
		l.lastIndex, l.lastTerm, l.lastLink, l.nextOffset = l.snap.Index, l.snap.Term, l.logStart.prevLink, l.snap.NextOffset
		if err := l.startSegment(l.logStart.index, l.logStart.prevLink, l.logStart.offset); err != nil {
			return err
		}
	}
	l.sy.metaVersion++ // write the meta record in syncRecovered
	return nil
}

// syncRecovered makes everything Open returns durable.
func (l *Log) syncRecovered() error {
	l.markDirty(l.active().f)
	if err := l.Sync(); err != nil {
		return err
	}
	l.sy.durableIndex = l.lastIndex
	return nil
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	//floe:unordered the keys are sorted below
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// closeFiles closes every file the log holds (after a failed Open or at
// Close).
func (l *Log) closeFiles() {
	for _, s := range l.segs {
		if s.f != nil {
			s.f.Close()
		}
	}
	l.segs = nil
	for _, f := range l.sy.closeAfterSync {
		f.Close()
	}
	l.sy.closeAfterSync = nil
	for _, g := range l.graves {
		if g.f != nil {
			g.f.Close()
		}
	}
	l.graves = nil
	l.cleaner.abort(l)
}
