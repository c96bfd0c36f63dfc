package replica

import "github.com/floe-broker/floe/consensus"

// entryCache keeps the entries most recently written to the log, so that
// Raft reading them back — to apply them once committed, or to send them
// to followers — does not go through the file. A produced batch is then
// read from disk only by consumers that fall behind.
//
// Invariant: ents is dense (each Index one more than the previous) and
// bytes is the sum of their Data lengths.
type entryCache struct {
	ents     []consensus.Entry
	bytes    int
	bytesMax int
}

// entryCacheBytes bounds each replica's cache.
const entryCacheBytes = 8 << 20

// add records entries just written. Entries that overwrite a cached suffix
// (conflict repair) replace it; a gap resets the cache.
func (c *entryCache) add(es []consensus.Entry) {
	if len(es) == 0 {
		return
	}
	first := es[0].Index
	if n := len(c.ents); n > 0 {
		switch {
		case first <= c.ents[0].Index || first > c.ents[n-1].Index+1:
			c.reset()
		case first <= c.ents[n-1].Index:
			c.truncateFrom(first)
		}
	}
	for _, e := range es {
		c.ents = append(c.ents, e)
		c.bytes += len(e.Data)
	}
	drop := 0
	for c.bytes > c.bytesMax && drop < len(c.ents)-1 {
		c.bytes -= len(c.ents[drop].Data)
		drop++
	}
	if drop > 0 {
		// Re-slice rather than copy the survivors: a full cache of small
		// entries is tens of thousands of them, and copying them all on
		// every add made the cache the replica's largest cost. Clearing the
		// dropped slots frees their data now; append moves the survivors to
		// a new array only when it next grows, so the cost is amortized.
		clear(c.ents[:drop])
		c.ents = c.ents[drop:]
	}
}

func (c *entryCache) truncateFrom(index uint64) {
	keep := int(index - c.ents[0].Index)
	for _, e := range c.ents[keep:] {
		c.bytes -= len(e.Data)
	}
	c.ents = c.ents[:keep]
}

func (c *entryCache) reset() { c.ents, c.bytes = nil, 0 }

// get returns entries [lo, hi) up to maxBytes (at least one), if the cache
// holds them all.
func (c *entryCache) get(lo, hi, maxBytes uint64) ([]consensus.Entry, bool) {
	n := len(c.ents)
	if n == 0 || lo < c.ents[0].Index || hi-1 > c.ents[n-1].Index || lo >= hi {
		return nil, false
	}
	from := int(lo - c.ents[0].Index)
	to := int(hi - c.ents[0].Index)
	var size uint64
	end := from
	for end < to {
		size += uint64(len(c.ents[end].Data))
		if end > from && size > maxBytes {
			break
		}
		end++
	}
	out := make([]consensus.Entry, end-from)
	copy(out, c.ents[from:end])
	return out, true
}
