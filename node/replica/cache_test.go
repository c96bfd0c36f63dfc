package replica

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/floe-broker/floe/consensus"
)

// naiveCache is the reference: every entry ever added, by index, with the
// cache's rules for what it keeps written out the slow way.
type naiveCache struct {
	ents     []consensus.Entry
	bytesMax int
}

func (n *naiveCache) add(es []consensus.Entry) {
	if len(es) == 0 {
		return
	}
	first := es[0].Index
	if k := len(n.ents); k > 0 {
		switch {
		case first <= n.ents[0].Index || first > n.ents[k-1].Index+1:
			n.ents = nil
		case first <= n.ents[k-1].Index:
			n.ents = n.ents[:first-n.ents[0].Index]
		}
	}
	n.ents = append(n.ents, es...)
	total := 0
	for _, e := range n.ents {
		total += len(e.Data)
	}
	drop := 0
	for total > n.bytesMax && drop < len(n.ents)-1 {
		total -= len(n.ents[drop].Data)
		drop++
	}
	n.ents = slices.Clone(n.ents[drop:])
}

func entriesOf(first uint64, n int, term uint64, rng *rand.Rand) []consensus.Entry {
	es := make([]consensus.Entry, n)
	for i := range es {
		data := make([]byte, 1+rng.Intn(300))
		data[0] = byte(rng.Intn(256))
		es[i] = consensus.Entry{Index: first + uint64(i), Term: term, Data: data}
	}
	return es
}

// TestEntryCacheMatchesNaive drives the cache and the reference with the
// same appends, overwrites and gaps, and checks that they hold the same
// entries and that the cache's invariants hold after every add.
func TestEntryCacheMatchesNaive(t *testing.T) {
	for seed := int64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewSource(seed))
		bytesMax := 500 + rng.Intn(5000)
		c := &entryCache{bytesMax: bytesMax}
		n := &naiveCache{bytesMax: bytesMax}
		next, term := uint64(1), uint64(1)
		for step := 0; step < 2000; step++ {
			first := next
			switch x := rng.Intn(20); {
			case x == 0: // a gap
				first = next + 1 + uint64(rng.Intn(5))
			case x < 3 && next > 1: // conflict repair of a suffix
				first = next - uint64(1+rng.Intn(min(int(next-1), 30)))
				term++
			}
			es := entriesOf(first, 1+rng.Intn(8), term, rng)
			c.add(es)
			n.add(es)
			next = first + uint64(len(es))
			checkCache(t, seed, step, c, n)
		}
	}
}

func checkCache(t *testing.T, seed int64, step int, c *entryCache, n *naiveCache) {
	t.Helper()
	if len(c.ents) != len(n.ents) {
		t.Fatalf("seed %d step %d: cache holds %d entries, reference %d", seed, step, len(c.ents), len(n.ents))
	}
	total := 0
	for i, e := range c.ents {
		want := n.ents[i]
		if e.Index != want.Index || e.Term != want.Term || !slices.Equal(e.Data, want.Data) {
			t.Fatalf("seed %d step %d: entry %d is (%d,%d), reference (%d,%d)", seed, step, i, e.Index, e.Term, want.Index, want.Term)
		}
		if i > 0 && e.Index != c.ents[i-1].Index+1 {
			t.Fatalf("seed %d step %d: not dense at %d", seed, step, i)
		}
		total += len(e.Data)
	}
	if total != c.bytes {
		t.Fatalf("seed %d step %d: bytes %d, entries hold %d", seed, step, c.bytes, total)
	}
	if len(c.ents) == 0 {
		return
	}
	lo, hi := c.ents[0].Index, c.ents[len(c.ents)-1].Index+1
	got, ok := c.get(lo, hi, uint64(1<<62))
	if !ok || len(got) != len(c.ents) {
		t.Fatalf("seed %d step %d: get(%d, %d) = %d entries, %v", seed, step, lo, hi, len(got), ok)
	}
}

// TestEntryCacheFreesDroppedData checks that entries dropped from the
// front no longer hold their data through the cache's array while the
// survivors still live in it.
func TestEntryCacheFreesDroppedData(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	c := &entryCache{bytesMax: 1000}
	shared := 0
	for i := uint64(1); i <= 500; i++ {
		before := c.ents
		if len(before) == 0 {
			c.add(entriesOf(i, 1, 1, rng))
			continue
		}
		firstBefore := before[0].Index // read now: the add clears dropped slots
		c.add(entriesOf(i, 1, 1, rng))
		drop := int(c.ents[0].Index - firstBefore)
		if drop <= 0 || drop >= len(before) || &before[drop] != &c.ents[0] {
			continue // no drop, or the survivors moved to a new array
		}
		shared++
		for _, e := range before[:drop] {
			if e.Data != nil {
				t.Fatalf("add %d: dropped entry %d still holds its data in the cache's array", i, e.Index)
			}
		}
	}
	if shared == 0 {
		t.Fatal("no add dropped entries within one array: the test checked nothing")
	}
}

// BenchmarkEntryCacheAddFull adds one small entry at a time to a full
// cache, the steady state of a busy replica.
func BenchmarkEntryCacheAddFull(b *testing.B) {
	c := &entryCache{bytesMax: entryCacheBytes}
	data := make([]byte, 100)
	next := uint64(1)
	for range entryCacheBytes / len(data) * 2 {
		c.add([]consensus.Entry{{Index: next, Term: 1, Data: data}})
		next++
	}
	b.ResetTimer()
	for range b.N {
		c.add([]consensus.Entry{{Index: next, Term: 1, Data: data}})
		next++
	}
}
