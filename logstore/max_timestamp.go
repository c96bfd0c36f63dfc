package logstore

import (
	"io"
	"sort"

	"github.com/floe-broker/floe/node/records"
)

// MaxTimestamp finds the record with the largest timestamp among offsets
// [StartOffset, limitOffset), the first such record when several share it
// (Kafka's ListOffsets -3, KIP-734: Kafka keeps the offset of the first
// record that raised the maximum). ok is false when the range holds no
// record. Callers pass the high watermark as limitOffset: the uncommitted
// tail, which often holds the newest timestamps, must not be seen.
//
// Segments are visited by descending recorded maxTimestamp, and the walk
// stops at the first segment that cannot hold a better record. A segment's
// recorded maximum may come from batches outside the range (below the start
// offset or in the uncommitted tail), so each visited segment is read batch
// header by batch header; only the winning batch is decoded.
func (l *Log) MaxTimestamp(limitOffset int64) (offset, timestamp int64, ok bool, err error) {
	if err := l.flush(); err != nil {
		return 0, 0, false, err
	}
	order := make([]*segment, 0, len(l.segs))
	for _, s := range l.segs {
		if s.nextOffset > l.startOffset && s.maxTimestamp >= 0 {
			order = append(order, s)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return order[a].maxTimestamp > order[b].maxTimestamp })
	best := maxTimestampHit{timestamp: -1}
	for _, s := range order {
		if ok && (s.maxTimestamp < best.timestamp || (s.maxTimestamp == best.timestamp && s.base > best.index)) {
			continue // cannot beat best: lower maximum, or the same one later in the log
		}
		hit, found, err := l.maxTimestampIn(s, limitOffset)
		if err != nil {
			return 0, 0, false, err
		}
		if found && (!ok || hit.better(best)) {
			best, ok = hit, true
		}
	}
	return best.offset, best.timestamp, ok, nil
}

// maxTimestampHit is a candidate for MaxTimestamp: a record's offset and
// timestamp, and the Raft index of the entry holding it.
type maxTimestampHit struct {
	offset, timestamp int64
	index             uint64
}

// better reports whether h beats o: a larger timestamp, or the same one
// earlier in the log.
func (h maxTimestampHit) better(o maxTimestampHit) bool {
	return h.timestamp > o.timestamp || (h.timestamp == o.timestamp && h.offset < o.offset)
}

// maxTimestampIn finds the best record of segment s within [StartOffset,
// limitOffset). A batch wholly inside the range has its maximum in its
// header, so only the winning batch is decoded (to find which of its
// records holds it); a batch that straddles either end is decoded to drop
// the records outside. Batches are visited in log order and a later one
// wins only with a strictly larger timestamp, so ties go to the first.
func (l *Log) maxTimestampIn(s *segment, limitOffset int64) (maxTimestampHit, bool, error) {
	var best maxTimestampHit
	var bestRaw []byte // the winning batch, when its record is still to be found
	found := false
	sc := l.scanner(s, 0, 0)
	for {
		at := sc.pos
		h, err := sc.peek()
		if err == io.EOF {
			break
		}
		if err != nil {
			return maxTimestampHit{}, false, corruptAt(s, at, err)
		}
		if h.kind != KindBatch || h.offsetAfter() <= l.startOffset || h.baseOffset >= limitOffset ||
			(found && h.maxTimestamp <= best.timestamp) {
			sc.skip(h)
			continue
		}
		raw, err := sc.take(h, true)
		if err != nil {
			return maxTimestampHit{}, false, corruptAt(s, at, err)
		}
		batch := raw[entryHeaderBytes:]
		if h.baseOffset >= l.startOffset && h.offsetAfter() <= limitOffset {
			best, bestRaw, found = maxTimestampHit{offset: h.baseOffset, timestamp: h.maxTimestamp, index: h.index}, append(bestRaw[:0], batch...), true
			continue
		}
		off, ts, ok := maxRecord(batch, l.startOffset, limitOffset)
		if ok && (!found || ts > best.timestamp) {
			best, bestRaw, found = maxTimestampHit{offset: off, timestamp: ts, index: h.index}, nil, true
		}
	}
	if found && bestRaw != nil {
		off, ts, ok := maxRecord(bestRaw, l.startOffset, limitOffset)
		if !ok {
			return maxTimestampHit{}, false, nil
		}
		best.offset, best.timestamp = off, ts
	}
	return best, found, nil
}

// maxRecord returns the first record of batch b within [minOffset,
// limitOffset) holding the batch's largest timestamp. A batch it cannot
// decode answers with its header's maximum at its first offset in range.
func maxRecord(b []byte, minOffset, limitOffset int64) (offset, timestamp int64, ok bool) {
	bh, err := records.ParseBatch(b)
	if err != nil {
		return 0, 0, false
	}
	timestamp = -1
	err = records.Records(b, func(r records.Record) error {
		off, ts := bh.BaseOffset+int64(r.OffsetDelta), bh.Timestamp(r)
		if off >= minOffset && off < limitOffset && (!ok || ts > timestamp) {
			offset, timestamp, ok = off, ts, true
		}
		return nil
	})
	if err != nil {
		return max(bh.BaseOffset, minOffset), bh.MaxTimestamp, true
	}
	return offset, timestamp, ok
}
