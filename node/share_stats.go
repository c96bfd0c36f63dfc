package node

import (
	"time"

	"github.com/floe-broker/floe/node/share"
)

// ShareGroupStats are one share group's figures on this broker, for
// metrics. Counters count what this broker did as the group's coordinator
// since it started (they never go back; after a failover the new
// coordinator counts from there). Gauges are read from the
// share-partitions this broker coordinates now.
type ShareGroupStats struct {
	Group string
	// Acquired counts records handed out (each delivery once);
	// Redelivered those handed out with a delivery count above 1.
	Acquired, Redelivered uint64
	// Acks counts acknowledged records by type: gap, accept, release,
	// reject, renew (share.AckType order).
	Acks [5]uint64
	// DeadLettered counts records copied to the dead-letter topic and
	// archived; DeadLetterDropped those archived uncopied because the
	// dead-letter partition refused them for good.
	DeadLettered, DeadLetterDropped uint64
	// InFlight counts records acquired with a lock now; DeadLetterPending
	// records waiting for their dead-letter copy; OldestInFlight the age
	// of the oldest acquisition still held (0 when none).
	InFlight, DeadLetterPending int
	OldestInFlight              time.Duration
}

// shareCounters are a group's counters, by group, on the reactor.
type shareCounters map[string]*ShareGroupStats

func (c *shareCounters) of(group string) *ShareGroupStats {
	if *c == nil {
		*c = shareCounters{}
	}
	s := (*c)[group]
	if s == nil {
		s = &ShareGroupStats{Group: group}
		(*c)[group] = s
	}
	return s
}

// countAcquired counts one fetch's acquisitions for group.
func (c *shareCounters) countAcquired(group string, ranges []share.Range) {
	s := c.of(group)
	for _, rg := range ranges {
		n := uint64(rg.Last - rg.First + 1)
		s.Acquired += n
		if rg.DeliveryCount > 1 {
			s.Redelivered += n
		}
	}
}

// countAcks counts applied acknowledgements for group.
func (c *shareCounters) countAcks(group string, acks []share.Ack) {
	s := c.of(group)
	for _, a := range acks {
		for off := a.First; off <= a.Last; off++ {
			t := a.Types[0]
			if len(a.Types) > 1 {
				t = a.Types[off-a.First]
			}
			if t >= 0 && int(t) < len(s.Acks) {
				s.Acks[t]++
			}
		}
	}
}

// ShareStats returns every share group's figures on this broker, by
// group name.
func (r *Reactor) ShareStats() []ShareGroupStats {
	out := map[string]*ShareGroupStats{}
	for _, g := range sortedKeys(r.shares.counters) {
		s := *r.shares.counters[g]
		out[g] = &s
	}
	now := r.monoNow()
	for _, g := range sortedKeys(r.shares.shards) {
		sh := r.shares.shards[g]
		if p, ok := r.parts[g]; !ok || !p.IsLeader() || p.Term() != sh.term {
			continue
		}
		for _, k := range sortedShareKeys(sh.parts) {
			s := out[k.Group]
			if s == nil {
				s = &ShareGroupStats{Group: k.Group}
				out[k.Group] = s
			}
			for _, rec := range sh.parts[k].InFlight() {
				switch {
				case rec.State == share.Acquired && rec.LockUntil > now:
					s.InFlight++
					s.OldestInFlight = max(s.OldestInFlight, now-rec.AcquiredAt)
				case rec.State == share.DeadLettering:
					s.DeadLetterPending++
				}
			}
		}
	}
	res := make([]ShareGroupStats, 0, len(out))
	for _, g := range sortedKeys(out) {
		res = append(res, *out[g])
	}
	return res
}
