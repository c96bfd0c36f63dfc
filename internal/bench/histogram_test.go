package bench

import (
	"math"
	"slices"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// referencePercentile is the obviously-correct answer ValueAt approximates:
// sort everything and take the value at rank ceil(p/100*n).
func referencePercentile(sorted []int64, p float64) int64 {
	if p <= 0 {
		return sorted[0]
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

func TestHistogramMatchesSortedReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Latency-like values: spread over many powers of two.
		values := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) int64 {
			exp := rapid.IntRange(0, 40).Draw(t, "exp")
			return rapid.Int64Range(0, int64(1)<<exp).Draw(t, "v")
		}), 1, 300).Draw(t, "values")
		var h Histogram
		var sum int64
		for _, v := range values {
			h.Record(v)
			sum += v
		}
		sorted := slices.Clone(values)
		slices.Sort(sorted)
		if h.Count() != int64(len(values)) || h.Min() != sorted[0] || h.Max() != sorted[len(sorted)-1] {
			t.Fatalf("count/min/max = %d/%d/%d, want %d/%d/%d",
				h.Count(), h.Min(), h.Max(), len(values), sorted[0], sorted[len(sorted)-1])
		}
		if want := float64(sum) / float64(len(values)); h.Mean() != want {
			t.Fatalf("mean %v, want %v", h.Mean(), want)
		}
		for _, p := range []float64{0, 1, 50, 90, 95, 99, 99.9, 100,
			rapid.Float64Range(0, 100).Draw(t, "p")} {
			got, want := h.ValueAt(p), referencePercentile(sorted, p)
			if got < want || got-want > want/subBucketCount {
				t.Fatalf("p%v = %d, want %d within 1/%d", p, got, want, subBucketCount)
			}
		}
	})
}

func TestHistogramBucketsTileTheRange(t *testing.T) {
	// Buckets must be contiguous and each value must land in the bucket
	// whose bounds contain it, including at the extremes of int64.
	for i := 1; i < bucketCount; i++ {
		if bucketLowest(i) != bucketHighest(i-1)+1 {
			t.Fatalf("gap between bucket %d (hi %d) and %d (lo %d)", i-1, bucketHighest(i-1), i, bucketLowest(i))
		}
	}
	if got := bucketHighest(bucketCount - 1); got != math.MaxInt64 {
		t.Fatalf("last bucket ends at %d, want MaxInt64", got)
	}
	for _, v := range []int64{0, 1, 127, 128, 129, 255, 256, 257, 1000, 1 << 40, math.MaxInt64 - 1, math.MaxInt64} {
		i := bucketOf(v)
		if v < bucketLowest(i) || v > bucketHighest(i) {
			t.Fatalf("value %d in bucket %d = [%d, %d]", v, i, bucketLowest(i), bucketHighest(i))
		}
	}
}

func TestHistogramEmptyAndNegative(t *testing.T) {
	var h Histogram
	if h.ValueAt(99) != 0 || h.Min() != 0 || h.Max() != 0 || h.Mean() != 0 {
		t.Fatal("empty histogram must report zeros")
	}
	h.Record(-5)
	if h.Count() != 1 || h.Max() != 0 || h.ValueAt(50) != 0 {
		t.Fatalf("negative value must count as 0: count %d max %d", h.Count(), h.Max())
	}
}

func TestHistogramMergeEqualsRecordingTogether(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.SliceOf(rapid.Int64Range(0, 1<<30)).Draw(t, "a")
		b := rapid.SliceOf(rapid.Int64Range(0, 1<<30)).Draw(t, "b")
		var ha, hb, both Histogram
		for _, v := range a {
			ha.Record(v)
			both.Record(v)
		}
		for _, v := range b {
			hb.Record(v)
			both.Record(v)
		}
		ha.Merge(&hb)
		for _, p := range []float64{0, 50, 99, 100} {
			if ha.ValueAt(p) != both.ValueAt(p) {
				t.Fatalf("p%v merged %d, together %d", p, ha.ValueAt(p), both.ValueAt(p))
			}
		}
		if ha.Count() != both.Count() || ha.Min() != both.Min() || ha.Max() != both.Max() || ha.Mean() != both.Mean() {
			t.Fatal("merged summary differs from recording together")
		}
	})
}

func TestHistogramSinceIsTheInterval(t *testing.T) {
	var h Histogram
	for v := int64(1); v <= 1000; v++ {
		h.Record(v * 1000)
	}
	prev := h.Snapshot()
	for v := int64(1); v <= 10; v++ {
		h.Record(v)
	}
	d := h.Since(prev)
	if d.Count() != 10 || d.ValueAt(100) != 10 || d.Min() != 1 || d.Mean() != 5.5 {
		t.Fatalf("interval: count %d p100 %d min %d mean %v", d.Count(), d.ValueAt(100), d.Min(), d.Mean())
	}
}

func TestHistogramConcurrentRecord(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	const workers, each = 4, 5000
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				h.Record(int64(w*each + i))
			}
		})
	}
	// A reader racing the writers must not upset the race detector or panic.
	for range 10 {
		_ = h.Snapshot().ValueAt(99)
	}
	wg.Wait()
	if h.Count() != workers*each || h.Min() != 0 || h.Max() != workers*each-1 {
		t.Fatalf("count %d min %d max %d", h.Count(), h.Min(), h.Max())
	}
	if got := h.ValueAt(50); got < workers*each/2-1 || got > (workers*each/2)*129/128 {
		t.Fatalf("median %d", got)
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	var h Histogram
	for i := 0; b.Loop(); i++ {
		h.Record(int64(i) * 7919)
	}
}
