package bench

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// The histogram's bucket layout, HDR style (log-linear):
//
//	values 0..127            one bucket each (exact)
//	values in [2^k, 2^(k+1)) for k >= 7: 128 equal sub-buckets of width 2^(k-7)
//
// so a bucket's width is at most 1/128 of its lowest value and a reported
// value is at most 0.79% above the true one. 57 groups of 128 buckets cover
// every non-negative int64.
const (
	subBucketBits  = 7
	subBucketCount = 1 << subBucketBits
	bucketCount    = (64 - subBucketBits) * subBucketCount
)

// Histogram counts non-negative int64 values (nanoseconds, in this package)
// in log-linear buckets. Every method is safe to call concurrently: Record
// from many goroutines while another takes a Snapshot for a progress line.
// A snapshot taken during recording may be off by the records in flight; it
// is never torn in a way that breaks ValueAt (which recounts the buckets).
// The zero value is empty and ready to use.
type Histogram struct {
	counts [bucketCount]atomic.Int64
	// total and sum are kept beside the buckets for Count and Mean.
	total atomic.Int64
	sum   atomic.Int64
	// minPlusOne is the smallest value recorded plus one; 0 means none yet,
	// so the zero Histogram needs no constructor.
	minPlusOne atomic.Int64
	max        atomic.Int64
}

// Record adds one value. Negative values (a clock step between two stamps)
// are recorded as 0.
func (h *Histogram) Record(v int64) {
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)].Add(1)
	h.total.Add(1)
	h.sum.Add(v)
	for {
		m := h.minPlusOne.Load()
		if m != 0 && m-1 <= v || h.minPlusOne.CompareAndSwap(m, v+1) {
			break
		}
	}
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			break
		}
	}
}

// Count is the number of values recorded.
func (h *Histogram) Count() int64 { return h.total.Load() }

// Min is the smallest value recorded, exactly; 0 when empty.
func (h *Histogram) Min() int64 {
	if m := h.minPlusOne.Load(); m > 0 {
		return m - 1
	}
	return 0
}

// Max is the largest value recorded, exactly; 0 when empty.
func (h *Histogram) Max() int64 { return h.max.Load() }

// Mean is the exact arithmetic mean; 0 when empty.
func (h *Histogram) Mean() float64 {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	return float64(h.sum.Load()) / float64(n)
}

// ValueAt returns the value at percentile p (0..100): the smallest recorded
// value v such that at least p% of the values are <= v, rounded up to its
// bucket's highest value (so at most 0.79% high) and capped at Max. p <= 0
// gives Min; an empty histogram gives 0.
func (h *Histogram) ValueAt(p float64) int64 {
	var n int64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	if n == 0 {
		return 0
	}
	if p <= 0 || math.IsNaN(p) {
		return h.Min()
	}
	rank := int64(math.Ceil(math.Min(p, 100) / 100 * float64(n)))
	rank = max(rank, 1)
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return min(bucketHighest(i), h.Max())
		}
	}
	return h.Max()
}

// Merge adds every value of o into h. Min and max stay exact.
func (h *Histogram) Merge(o *Histogram) {
	for i := range o.counts {
		if c := o.counts[i].Load(); c != 0 {
			h.counts[i].Add(c)
		}
	}
	h.total.Add(o.total.Load())
	h.sum.Add(o.sum.Load())
	if o.Count() > 0 {
		h.mergeExtremes(o.Min(), o.Max())
	}
}

func (h *Histogram) mergeExtremes(lo, hi int64) {
	for {
		m := h.minPlusOne.Load()
		if m != 0 && m-1 <= lo || h.minPlusOne.CompareAndSwap(m, lo+1) {
			break
		}
	}
	for {
		m := h.max.Load()
		if hi <= m || h.max.CompareAndSwap(m, hi) {
			break
		}
	}
}

// Snapshot returns a copy of h.
func (h *Histogram) Snapshot() *Histogram {
	s := &Histogram{}
	s.Merge(h)
	return s
}

// Since returns the values recorded in h after the snapshot prev was taken
// (h minus prev, bucket by bucket): the histogram of one progress interval.
// Its Min and Max are those of its buckets (exact only within 0.79%).
func (h *Histogram) Since(prev *Histogram) *Histogram {
	d := &Histogram{}
	lo, hi := -1, -1
	for i := range h.counts {
		c := h.counts[i].Load() - prev.counts[i].Load()
		if c <= 0 {
			continue
		}
		d.counts[i].Store(c)
		if lo < 0 {
			lo = i
		}
		hi = i
	}
	d.total.Store(h.total.Load() - prev.total.Load())
	d.sum.Store(h.sum.Load() - prev.sum.Load())
	if lo >= 0 {
		d.mergeExtremes(bucketLowest(lo), min(bucketHighest(hi), h.Max()))
	}
	return d
}

// bucketOf maps a value >= 0 to its bucket index.
func bucketOf(v int64) int {
	if v < subBucketCount {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - 1 - subBucketBits
	return (shift+1)<<subBucketBits + int(v>>shift) - subBucketCount
}

// bucketLowest is the smallest value that maps to bucket i.
func bucketLowest(i int) int64 {
	if i < subBucketCount {
		return int64(i)
	}
	shift := i>>subBucketBits - 1
	sub := int64(i&(subBucketCount-1) + subBucketCount)
	return sub << shift
}

// bucketHighest is the largest value that maps to bucket i.
func bucketHighest(i int) int64 {
	if i < subBucketCount {
		return int64(i)
	}
	shift := i>>subBucketBits - 1
	return bucketLowest(i) + (int64(1) << shift) - 1
}
