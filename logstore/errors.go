package logstore

import "errors"

// Log errors (test with errors.Is; most are wrapped with details).
var (
	// ErrCompacted: the index is at or below the snapshot index (Raft side),
	// or a request would cut below it.
	ErrCompacted = errors.New("logstore: index compacted")
	// ErrUnavailable: the index is past LastIndex.
	ErrUnavailable = errors.New("logstore: index unavailable")
	// ErrOffsetOutOfRange: a Kafka offset below StartOffset or above
	// NextOffset.
	ErrOffsetOutOfRange = errors.New("logstore: offset out of range")
	// ErrCorrupt: stored data failed its checksum or is inconsistent. The
	// data is never returned; the node should refetch it from a peer.
	ErrCorrupt = errors.New("logstore: corrupt data")
	// ErrInvalid: an argument breaks the call's contract (non-dense index,
	// malformed batch, wrong offset, oversize entry...). Nothing was written.
	ErrInvalid = errors.New("logstore: invalid argument")
	// ErrFailed: an earlier write or sync failed, so what is on disk is
	// unknown. The log refuses further writes; close it and Open it again,
	// which recovers a valid prefix.
	ErrFailed = errors.New("logstore: log failed")
	// ErrSyncInFlight: the call needs the pending SyncPlan to finish first.
	ErrSyncInFlight = errors.New("logstore: a sync is in flight")
	// ErrFileLimit: the process or the system is out of file descriptors
	// (EMFILE, ENFILE). OSFS marks these errors (they stay errors.Is the
	// underlying errno too). Unlike a failed write, nothing is lost: a
	// caller that was opening a log may close the log it half opened (Open
	// does) and retry later, once descriptors are free or the limit raised.
	ErrFileLimit = errors.New("logstore: out of file descriptors")
)
