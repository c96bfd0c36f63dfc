// Package good uses, in a core package, everything the determinism lint
// allows. It must produce no diagnostics.
package good

import (
	"maps"
	"math/rand"
	randv2 "math/rand/v2"
	"net/netip"
	"slices"
	"sort"
	"time"
)

// Durations, time.Time values and their methods are data, not clocks.
func durations(t time.Time) time.Duration {
	d := 3 * time.Second
	return t.Add(d).Sub(t) + time.Duration(time.Millisecond)
}

// Address values are data: parsing one reaches no network.
func address(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Unmap().Is4()
}

// A private, seeded generator and its methods are allowed.
func seeded(seed int64) int {
	r := rand.New(rand.NewSource(seed))
	r.Shuffle(3, func(i, j int) {})
	_ = rand.NewZipf(r, 2, 1, 10)
	intn := r.Intn
	return intn(10) + r.Int()
}

func seededV2(seed uint64) int {
	r := randv2.New(randv2.NewPCG(seed, seed))
	_ = randv2.NewChaCha8([32]byte{})
	return r.IntN(10)
}

// Sorted keys, the escape hatch, and loops that bind nothing.
func mapOrder(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	//floe:unordered keys are sorted below
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	set := map[int]bool{}
	for _, v := range m { //floe:unordered building a set
		set[v] = true
	}
	n := 0
	for range m {
		n++
	}
	for _, _ = range m {
		n++
	}
	_ = slices.Sorted(maps.Keys(m))
	for _, k := range keys {
		_ = m[k]
	}
	return keys
}

// A channel type may be named (a runtime hands it in); only operations on it
// are reported. Slices and strings range in order.
type runtimeHooks struct {
	done chan struct{}
}

func ordered(s []int, str string) int {
	n := 0
	for i := range s {
		n += i
	}
	for range str {
		n++
	}
	return n
}
