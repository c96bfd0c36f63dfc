package logstore

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
	var total int64
	for _, s := range l.segs {
		total += s.size
	}
	cutoffMs := nowMs - retentionMs
	var bound uint64
	for n := 0; n < len(l.segs)-1; n++ {
		s := l.segs[n]
		if !s.sealed || s.last >= limitIndex || s.empty() {
			break
		}
		byTime := retentionMs >= 0 && s.maxTimestamp >= 0 && s.maxTimestamp < cutoffMs
		bySize := retentionBytes >= 0 && total-s.size >= retentionBytes
		byStart := s.nextOffset <= l.startOffset && s.nextOffset > s.baseOffset
		if !byTime && !bySize && !byStart {
			break
		}
		total -= s.size
		bound = s.last
	}
	return bound
}
