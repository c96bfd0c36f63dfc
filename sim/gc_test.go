package sim

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestMemTotalBytes(t *testing.T) {
	for _, c := range []struct {
		meminfo string
		want    int64
	}{
		{"MemTotal:       24576000 kB\nMemFree:        1000 kB\n", 24576000 * 1024},
		{"MemFree:        1000 kB\nMemTotal: 2048 kB", 2048 * 1024},
		{"MemFree:        1000 kB\n", 0},
		{"MemTotal:       24576000 MB\n", 0},
		{"MemTotal:       many kB\n", 0},
		{"MemTotal:       -5 kB\n", 0},
		{"", 0},
	} {
		if got := memTotalBytes(c.meminfo); got != c.want {
			t.Errorf("memTotalBytes(%q) = %d, want %d", c.meminfo, got, c.want)
		}
	}
}

// TestUseSimGCBoundsTheHeap: TestMain called UseSimGC, so where the
// machine's memory is known and GOMEMLIMIT chose nothing, the soft limit
// is SimMemoryShare of it, not Go's default of none.
func TestUseSimGCBoundsTheHeap(t *testing.T) {
	want := simMemoryLimitBytes()
	if want == 0 || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("machine memory unknown here, or GOMEMLIMIT set")
	}
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Fatalf("memory limit %d after UseSimGC, want %d (half of MemTotal)", got, want)
	}
}
