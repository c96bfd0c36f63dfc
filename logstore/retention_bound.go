package logstore

import "math"

// RetentionBound returns the last index of the newest sealed segment that
// retention may drop now, or 0 when none may go. It is ApplyRetention's
// choice without acting on it, and it also counts segments wholly below the
// log start offset (DeleteRecords). The caller records a snapshot point at
// the returned index (SetSnapshot) and then drops the prefix (CompactTo):
// the snapshot must describe exactly the state after the dropped entries,
// so that a follower sent it can be caught up with the entries that remain.
//
// Segments holding an index >= limitIndex and the active segment never
// qualify.
func (l *Log) RetentionBound(nowMs, retentionMs, retentionBytes int64, limitIndex uint64) uint64 {
	n := l.retainable(nowMs, retentionMs, retentionBytes, limitIndex, math.MaxUint64)
	if n == 0 {
		return 0
	}
	return l.segs[n-1].last
}

// retainable counts the oldest segments retention may drop: sealed, not
// the active one, every entry below limitIndex and at or below snapIndex,
// and past retention.ms (by their largest batch timestamp), beyond
// retention.bytes (the log stays at or above it without them), or wholly
// below the log start offset. Retention stops at the first segment that
// must stay.
func (l *Log) retainable(nowMs, retentionMs, retentionBytes int64, limitIndex, snapIndex uint64) int {
	total := l.sizeBytes()
	cutoffMs := nowMs - retentionMs
	n := 0
	for ; n < len(l.segs)-1; n++ {
		s := l.segs[n]
		if !s.sealed || s.last >= limitIndex || s.last > snapIndex || s.empty() {
			break
		}
		byTime := retentionMs >= 0 && s.maxTimestamp >= 0 && s.maxTimestamp < cutoffMs
		bySize := retentionBytes >= 0 && total-s.size >= retentionBytes
		byStart := s.nextOffset <= l.startOffset && s.nextOffset > s.baseOffset
		if !byTime && !bySize && !byStart {
			break
		}
		total -= s.size
	}
	return n
}
