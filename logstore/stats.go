package logstore

import "time"

// Stats are counters the node exports as metrics. Counters are totals since
// Open.
type Stats struct {
	BytesAppended   int64 // bytes written by Append, headers included
	EntriesAppended int64
	Syncs           int64 // plans finished (successful or not)
	SyncFailures    int64
	// SyncLatencySum sums, over finished plans, the time from PrepareSync to
	// FinishSync on Options.Clock (0 without a Clock): the group-commit
	// latency an append waits for. Divide by Syncs for the mean.
	SyncLatencySum  time.Duration
	Segments        int   // segment files in the log now
	SizeBytes       int64 // their total size
	SegmentsRemoved int64 // by CompactTo and retention
	Cleaner         CleanerStats
}

// CleanerStats report compaction progress.
type CleanerStats struct {
	Passes          int64 // completed passes
	PassesAborted   int64 // restarted because the log changed under them
	SegmentsCleaned int64 // segments rewritten
	BytesRead       int64
	BytesWritten    int64
	RecordsRemoved  int64
	BatchesEmptied  int64 // batches kept with no records, to keep their offsets
	// AbortedRecordsRemoved counts the records of aborted transactions
	// removed (also in RecordsRemoved); MarkersRemoved the transaction
	// markers removed (compact_txn.go).
	AbortedRecordsRemoved int64
	MarkersRemoved        int64
	// PassSegments and PassSegmentsDone give the progress of the pass in
	// flight (both 0 when idle).
	PassSegments     int
	PassSegmentsDone int
}

// Stats returns the log's counters. It costs the same whatever the number
// of segments.
func (l *Log) Stats() Stats {
	st := l.stats
	st.Segments = len(l.segs)
	st.SizeBytes = l.sizeBytes()
	st.Cleaner.PassSegments, st.Cleaner.PassSegmentsDone = l.cleaner.progress()
	return st
}

// sealedSize caches the total size of every segment but the active one.
// The node reads a log's size at every look at its partition, and a
// compacted partition keeps all its segments (tens of thousands in a long
// simulation: summing them was most of such a run's time).
//
// The cache is valid while its key matches the log. A segment other than
// the active one changes size only when a truncation cuts it (or makes it
// the active one) or the cleaner swaps in its rewritten copy; the list
// changes when a roll appends, retention or a snapshot drops, or a
// truncation cuts. Truncations and drops move structVersion, swaps
// SegmentsCleaned and rolls the number of segments, so the key (those
// three) moves with every change of the sum. Recovery changes sizes too,
// but only inside Open, before the first look.
//
// The zero value is never valid: it counts no segments, and it is only
// consulted for a log that has at least one.
type sealedSize struct {
	structVersion uint64
	swaps         int64
	segments      int
	bytes         int64
}

// sizeBytes is the total size of the log's segments: what their files hold
// plus the active segment's bytes still in the write buffer.
func (l *Log) sizeBytes() int64 {
	n := len(l.segs)
	if n == 0 {
		return 0
	}
	c := &l.sealed
	if c.structVersion != l.structVersion || c.swaps != l.stats.Cleaner.SegmentsCleaned || c.segments != n {
		*c = sealedSize{structVersion: l.structVersion, swaps: l.stats.Cleaner.SegmentsCleaned, segments: n}
		for _, s := range l.segs[:n-1] {
			c.bytes += s.size
		}
	}
	return c.bytes + l.segs[n-1].size
}

// Close syncs the log (unless it failed) and closes its files. It fails
// with ErrSyncInFlight while a plan is in flight (its files must stay open
// until FinishSync).
func (l *Log) Close() error {
	if len(l.sy.inflight) > 0 {
		return ErrSyncInFlight
	}
	var err error
	if l.failed == nil {
		err = l.Sync()
	}
	l.closeFiles()
	if l.failed == nil {
		l.failed = ErrClosed
	}
	return err
}
