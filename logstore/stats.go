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

// Stats returns the log's counters.
func (l *Log) Stats() Stats {
	st := l.stats
	st.Segments = len(l.segs)
	for _, s := range l.segs {
		st.SizeBytes += s.size
	}
	st.Cleaner.PassSegments, st.Cleaner.PassSegmentsDone = l.cleaner.progress()
	return st
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
