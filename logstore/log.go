package logstore

import (
	"fmt"
	"path"
	"time"

	"github.com/floe-broker/floe/clock"
	"github.com/floe-broker/floe/node/records"
)

// Entry is one log entry: one Raft entry, and for KindBatch one Kafka record
// batch.
//
// Kind is opaque to the log except KindBatch: then Data is a Kafka v2 record
// batch whose baseOffset (bytes 0-8) is already set, and it occupies offsets
// [baseOffset, baseOffset+lastOffsetDelta]. Other kinds take no Kafka offset.
// In a log, Index is dense from FirstIndex to LastIndex and Term never
// decreases.
type Entry struct {
	Index, Term uint64
	Kind        uint8
	Data        []byte
}

// KindBatch marks an entry whose Data is a Kafka record batch.
const KindBatch uint8 = 1

// Options configure a Log. Zero values take the defaults.
type Options struct {
	// SegmentBytes rolls to a new segment when the active one would pass it
	// (default 1 GiB). An entry larger than it gets a segment of its own.
	SegmentBytes int64
	// SegmentAge rolls when the active segment has been active this long,
	// measured on Clock.Monotonic at appends (0: never; needs Clock). After
	// Open, the active segment's age restarts.
	SegmentAge time.Duration
	// IndexIntervalBytes is the spacing of sparse index points (default 4096).
	IndexIntervalBytes int
	// Clock times segment age and sync latency; nil disables both.
	Clock clock.Clock
	// EntryBytesMax caps an entry's Data (default 64 MiB).
	EntryBytesMax int
	// RollEarly, when set (a simulation's BUGGIFY hook), is asked before
	// each append to a non-empty active segment; true rolls to a new
	// segment there, as SegmentAge might have.
	RollEarly func() bool
	// ReadBuffers, when set, are the buffers the Log's reads go through,
	// shared with the other Logs given the same ones: all of them must be
	// used from one goroutine (the reactor's). nil: the Log has its own.
	ReadBuffers *ReadBuffers
}

// ReadBuffers are the buffers a Log's reads go through, reused from one
// read to the next (read.go); what a read hands out never aliases them.
// Logs called from one goroutine may share one set (Options.ReadBuffers):
// a Log is mostly read just after it opens (Raft applying its committed
// entries, a coordinator replaying it), so buffers of its own would be
// grown anew by every Log a restart opens. The zero value is ready.
type ReadBuffers struct {
	scan []byte  // the array behind Log.scanner's scanners
	read []byte  // Read's batches before their copy to ReadResult.Data
	ents []Entry // EntriesFunc's entries
}

func (o Options) withDefaults() Options {
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = 1 << 30
	}
	if o.IndexIntervalBytes <= 0 {
		o.IndexIntervalBytes = 4096
	}
	if o.EntryBytesMax <= 0 || o.EntryBytesMax > 1<<31 {
		o.EntryBytesMax = 64 << 20
	}
	return o
}

// HardState is Raft's durable vote state. Commit is an optimisation on
// restart: a change of Commit alone does not force a meta write, so after a
// crash Commit may be older than the last one set.
type HardState struct{ Term, Vote, Commit uint64 }

// SnapshotMeta is a snapshot point: the log up to Index (at Term) is
// covered by the node's snapshot, and NextOffset is the Kafka offset after
// it. Data is opaque to the log (the node's state-machine snapshot: producer
// state and the like); it is stored in the meta files, so keep it small.
type SnapshotMeta struct {
	Index, Term uint64
	NextOffset  int64
	Data        []byte
}

// Log is a partition's log: the Raft log and the Kafka log in one.
//
// A Log is not safe for concurrent use: one goroutine (the reactor) calls
// every method, except SyncPlan.Run, which may run on another goroutine
// while the reactor keeps appending (see sync.go).
type Log struct {
	fs   FS
	dir  string
	opts Options

	// recFiles lists the directory's segment files while recovery runs
	// (laterSegmentData), nil otherwise.
	recFiles []segFile

	// segs is the physical log in index order; the last one is active (never
	// sealed) and the only one written. Invariants: segs is never empty;
	// segs[0] starts at logStart; consecutive segments chain
	// (next.base == prev.last+1, next.firstPrevLink == prev.lastLink).
	segs  []*segment
	terms []termRun // term runs of every physical entry

	// Invariants: snap.Index <= lastIndex; logStart.index <= snap.Index+1;
	// logStart.offset <= startOffset <= nextOffset.
	snap        SnapshotMeta
	hs          HardState
	logStart    chainPoint
	lastIndex   uint64
	lastTerm    uint64
	lastLink    uint32
	nextOffset  int64
	startOffset int64
	gen         uint32 // stamped on appended entries; bumped by truncation and install

	sy      syncState
	noMeta  bool        // opened with no valid meta record (recovery.go)
	loss    *lossRecord // the durable loss record, until LossFenced (loss.go)
	graves  []grave
	failed  error
	cleaner cleanerState
	// structVersion changes whenever segments are removed, cut or replaced
	// by anyone but the cleaner, so a cleaner pass in progress restarts.
	structVersion uint64
	stats         Stats
	sealed        sealedSize // the cache behind sizeBytes (stats.go)
	// wbuf holds the active segment's last appended bytes, not yet written
	// to its file. Invariant: file size + len(wbuf) == active().size.
	wbuf []byte

	// bufs are the read buffers: opts.ReadBuffers, or the Log's own.
	bufs *ReadBuffers
}

// FirstIndex is the first index readable on the Raft side: snapshot index + 1.
func (l *Log) FirstIndex() uint64 { return l.snap.Index + 1 }

// LastIndex is the last entry's index, unsynced included; the snapshot
// index when the log holds no entry after it.
func (l *Log) LastIndex() uint64 { return l.lastIndex }

// Term returns the term of entry i: the snapshot's term for i equal to the
// snapshot index, ErrCompacted below it, ErrUnavailable past LastIndex.
func (l *Log) Term(i uint64) (uint64, error) {
	switch {
	case i < l.snap.Index:
		return 0, fmt.Errorf("%w: term of %d, snapshot at %d", ErrCompacted, i, l.snap.Index)
	case i == l.snap.Index:
		return l.snap.Term, nil
	case i > l.lastIndex:
		return 0, fmt.Errorf("%w: term of %d, last index %d", ErrUnavailable, i, l.lastIndex)
	}
	t, ok := termAt(l.terms, i)
	if !ok {
		return 0, fmt.Errorf("%w: no term for %d", ErrCorrupt, i)
	}
	return t, nil
}

// HardState returns the hard state last set.
func (l *Log) HardState() HardState { return l.hs }

// SetHardState records hs; it is durable once a sync prepared after this
// call finishes.
func (l *Log) SetHardState(hs HardState) { l.hs = hs }

// Snapshot returns the current snapshot point.
func (l *Log) Snapshot() SnapshotMeta { return l.snap }

// StartOffset is the first Kafka offset readable (after retention,
// compaction of whole segments, and DeleteRecords).
func (l *Log) StartOffset() int64 { return l.startOffset }

// NextOffset is the Kafka offset after the last batch, unsynced included.
func (l *Log) NextOffset() int64 { return l.nextOffset }

// DurableHardState is the hard state of the newest meta record a sync
// has made durable (at Open, the record recovered): what a crash now
// would recover at most. Checkers compare it across restarts.
func (l *Log) DurableHardState() HardState { return l.sy.durableHS }

// DurableIndex is the last index known durable: entries up to it survive a
// crash (it never counts entries a later truncation replaced).
func (l *Log) DurableIndex() uint64 { return l.sy.durableIndex }

// SetStartOffset moves the Kafka start offset forward (DeleteRecords); it is
// durable with the next sync. Moving it backwards is a no-op.
func (l *Log) SetStartOffset(offset int64) error {
	if err := l.writable(); err != nil {
		return err
	}
	if offset > l.nextOffset {
		return fmt.Errorf("%w: start offset %d past next offset %d", ErrOffsetOutOfRange, offset, l.nextOffset)
	}
	if offset > l.startOffset {
		l.startOffset = offset
		l.sy.metaVersion++
	}
	return nil
}

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

// refreshTail sets the log's end from the active segment. Segments chain, so
// an empty active segment carries the previous end.
func (l *Log) refreshTail() {
	s := l.active()
	l.lastIndex, l.lastLink, l.nextOffset = s.last, s.lastLink, s.nextOffset
	l.lastTerm = l.snap.Term
	if t, ok := termAt(l.terms, l.lastIndex); ok && l.lastIndex >= l.logStart.index {
		l.lastTerm = t
	}
}

func (l *Log) writable() error {
	if l.failed != nil {
		return l.failed
	}
	return nil
}

// fail puts the log in the failed state after an I/O error.
func (l *Log) fail(err error) error {
	if l.failed == nil {
		l.failed = fmt.Errorf("%w: %w", ErrFailed, err) // both stay visible to errors.Is
	}
	return l.failed
}

func (l *Log) monoNow() time.Duration {
	if l.opts.Clock == nil {
		return 0
	}
	return l.opts.Clock.Monotonic()
}

// Append appends entries at the end of the log. entries[0].Index must be
// LastIndex()+1, indexes dense, terms non-decreasing, and a KindBatch entry
// a well-framed v2 batch whose base offset is the log's next offset. On a
// contract violation it returns ErrInvalid and writes nothing. Appended
// entries are readable at once and durable after a sync.
func (l *Log) Append(entries ...Entry) error {
	if err := l.writable(); err != nil {
		return err
	}
	hdrs, err := l.validate(entries)
	if err != nil {
		return err
	}
	for i := 0; i < len(entries); {
		if l.shouldRoll(hdrs[i].size()) {
			if err := l.roll(hdrs[i].index); err != nil {
				return err
			}
		}
		n, err := l.writeChunk(entries[i:], hdrs[i:])
		if err != nil {
			return err
		}
		i += n
	}
	return nil
}

// validate checks entries against the log's end and returns their headers
// (prevLink not yet set).
func (l *Log) validate(entries []Entry) ([]entryHeader, error) {
	hdrs := make([]entryHeader, len(entries))
	next, term, off := l.lastIndex+1, l.lastTerm, l.nextOffset
	for k, e := range entries {
		switch {
		case e.Index != next:
			return nil, fmt.Errorf("%w: entry index %d, want %d", ErrInvalid, e.Index, next)
		case e.Term < term:
			return nil, fmt.Errorf("%w: entry %d has term %d after term %d", ErrInvalid, e.Index, e.Term, term)
		case len(e.Data) > l.opts.EntryBytesMax:
			return nil, fmt.Errorf("%w: entry %d has %d bytes, max %d", ErrInvalid, e.Index, len(e.Data), l.opts.EntryBytesMax)
		}
		h := entryHeader{kind: e.Kind, gen: l.gen, index: e.Index, term: e.Term,
			baseOffset: off, lastOffsetDelta: -1, maxTimestamp: -1}
		if e.Kind == KindBatch {
			var bh records.Header
			if err := parseBatch(e.Data, &bh); err != nil {
				return nil, fmt.Errorf("%w: entry %d: %v", ErrInvalid, e.Index, err)
			}
			if bh.BaseOffset != off {
				return nil, fmt.Errorf("%w: entry %d has base offset %d, want %d", ErrInvalid, e.Index, bh.BaseOffset, off)
			}
			h.lastOffsetDelta, h.maxTimestamp = bh.LastOffsetDelta, bh.MaxTimestamp
		}
		hdrs[k] = h
		next, term, off = next+1, e.Term, h.offsetAfter()
	}
	return hdrs, nil
}

// parseBatch checks a batch entry's payload: exactly one Kafka v2 record
// batch (node/records: framing only; the node validated it whole before
// proposing it) whose offset delta and record count are not negative, so
// that offsets only move forward.
// It fills in h, rather than returning it, to spare the append path copies.
func parseBatch(b []byte, h *records.Header) error {
	var err error
	if *h, err = records.ParseBatch(b); err == nil && (h.LastOffsetDelta < 0 || h.RecordCount < 0) {
		err = fmt.Errorf("logstore: malformed record batch: lastOffsetDelta %d recordCount %d", h.LastOffsetDelta, h.RecordCount)
	}
	return err
}

// shouldRoll says whether an entry of n bytes must go to a new segment.
func (l *Log) shouldRoll(n int64) bool {
	s := l.active()
	if s.size == 0 {
		return false
	}
	if s.size+n > l.opts.SegmentBytes {
		return true
	}
	if l.opts.RollEarly != nil && l.opts.RollEarly() {
		return true
	}
	return l.opts.SegmentAge > 0 && l.opts.Clock != nil && l.monoNow()-s.openedMono >= l.opts.SegmentAge
}

// writeBufferBytes is how much encoded data the active segment may hold in
// memory before it is written to its file. Appends land in this buffer;
// PrepareSync, a roll, every read and a full buffer flush it, so a group
// commit costs a few large writes instead of one per Append.
const writeBufferBytes = 256 << 10

// writeChunk encodes as many of entries as fit the active segment into the
// write buffer and returns how many it took (at least one).
func (l *Log) writeChunk(entries []Entry, hdrs []entryHeader) (int, error) {
	s := l.active()
	n := 0
	for n < len(entries) && (n == 0 || s.size+hdrs[n].size() <= l.opts.SegmentBytes) {
		h := hdrs[n]
		h.prevLink = l.lastLink
		pos := s.size
		var link uint32
		l.wbuf, link = appendEntry(l.wbuf, h, entries[n].Data)
		h.length = uint32(len(entries[n].Data))
		s.noteAppended(h, link, pos, int64(l.opts.IndexIntervalBytes))
		l.terms = noteTerm(l.terms, h.index, h.term)
		l.lastIndex, l.lastTerm, l.lastLink, l.nextOffset = h.index, h.term, link, h.offsetAfter()
		l.stats.BytesAppended += h.size()
		n++
	}
	l.stats.EntriesAppended += int64(n)
	l.markDirty(s.f)
	if len(l.wbuf) >= writeBufferBytes {
		return n, l.flush()
	}
	return n, nil
}

// flush writes the write buffer to the active segment's file. A failed
// write fails the log: the entries were already accepted.
func (l *Log) flush() error {
	if len(l.wbuf) == 0 {
		return nil
	}
	s := l.active()
	if _, err := s.f.Write(l.wbuf); err != nil {
		s.f.Truncate(s.size - int64(len(l.wbuf))) // best effort; recovery cuts a torn tail anyway
		l.wbuf = l.wbuf[:0]
		return l.fail(fmt.Errorf("append to %s: %w", s.name, err))
	}
	l.wbuf = l.wbuf[:0]
	if cap(l.wbuf) > 4*writeBufferBytes {
		l.wbuf = nil // do not pin a huge buffer after an outsized append
	}
	return nil
}

// roll seals the active segment and starts a new one at base.
func (l *Log) roll(base uint64) error {
	if err := l.flush(); err != nil {
		return err
	}
	if err := l.seal(l.active()); err != nil {
		return err
	}
	return l.startSegment(base, l.lastLink, l.nextOffset)
}

// startSegment creates a new active segment.
func (l *Log) startSegment(base uint64, prevLink uint32, nextOffset int64) error {
	name := segmentName(base, l.gen)
	f, err := l.fs.Create(path.Join(l.dir, name))
	if err != nil {
		return l.fail(fmt.Errorf("create segment: %w", err))
	}
	s := newSegment(name, base, l.gen, f, prevLink, nextOffset)
	s.openedMono = l.monoNow()
	l.segs = append(l.segs, s)
	l.sy.dirDirty = true
	return nil
}

// seal writes s's index file and marks it sealed. The index file is synced
// with the next sync and closed after it.
func (l *Log) seal(s *segment) error {
	data := encodeIndex(s, termsIn(l.terms, s.base, s.last))
	f, err := l.fs.Create(path.Join(l.dir, indexName(s.name)))
	if err != nil {
		return l.fail(fmt.Errorf("create index: %w", err))
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return l.fail(fmt.Errorf("write index: %w", err))
	}
	l.markDirty(f)
	l.sy.closeAfterSync = append(l.sy.closeAfterSync, f)
	s.sealed = true
	l.sy.dirDirty = true
	return nil
}

// unseal turns the last segment back into the active one (after a
// truncation or recovery), removing its index file.
func (l *Log) unseal(s *segment) error {
	s.sealed = false
	s.openedMono = l.monoNow()
	err := l.fs.Remove(path.Join(l.dir, indexName(s.name)))
	if err != nil && !isNotExist(err) {
		return l.fail(fmt.Errorf("remove index: %w", err))
	}
	l.sy.dirDirty = true
	return nil
}

// SetSegmentLimits changes when the active segment rolls (segment.bytes and
// segment.ms altered on a live topic). It takes effect at the next append;
// segments already sealed keep their size. A bytes value <= 0 keeps the
// current one; an age <= 0 turns rolling by age off.
func (l *Log) SetSegmentLimits(bytes int64, age time.Duration) {
	if bytes > 0 {
		l.opts.SegmentBytes = bytes
	}
	l.opts.SegmentAge = max(age, 0)
}

// Err returns the error that put the log in the failed state (a write or
// fsync failed: the file may lack what the log holds in memory), or nil.
// A failed log accepts no more appends and makes nothing more durable; its
// owner must stop using it and reopen it, which recovers what is on disk.
func (l *Log) Err() error { return l.failed }
