package group

// The server-side assignors of KIP-848, named as Kafka names them:
//
//   - uniform: every partition of the subscribed topics goes to one of the
//     members subscribed to its topic, as evenly as the subscriptions
//     allow, sticky: a partition stays with its previous target owner
//     while that owner is still subscribed and not over its share. New or
//     freed partitions go to the least loaded eligible member, preferring
//     one in a rack that holds a replica of the partition when racks are
//     known (rack-aware), then the smallest member id.
//   - range: per topic, the members subscribed to it in member id order
//     take contiguous ranges of its partitions, the first ones one more
//     when they do not divide evenly (Kafka's RangeAssignor); not sticky.
//
// Both are pure functions of their input, so every replica of the
// coordinator computes the same target.

import "sort"

// Assignor names.
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

// TopicInfo describes one topic for server-side assignment.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
	// Racks holds, per partition, the racks of its replicas (nil when no
	// broker has a rack).
	Racks [][]string
}

// assignInput is what an assignor sees.
type assignInput struct {
	members []string            // sorted
	subs    map[string][]string // member → subscribed existing topics, sorted
	racks   map[string]string   // member → rack ("" unknown)
	topics  map[string]TopicInfo
	prev    map[string]assignment // member → previous target
}

func assignWith(name string, in assignInput) map[string]assignment {
	if name == AssignorRange {
		return assignRange(in)
	}
	return assignUniform(in)
}

// subscribers returns, per topic, the members subscribed to it, sorted.
func (in assignInput) subscribers() (map[string][]string, []string) {
	by := map[string][]string{}
	for _, m := range in.members {
		for _, t := range in.subs[m] {
			by[t] = append(by[t], m)
		}
	}
	topics := make([]string, 0, len(by))
	for t := range by { //floe:unordered sorted below
		topics = append(topics, t)
	}
	sort.Strings(topics)
	return by, topics
}

func assignRange(in assignInput) map[string]assignment {
	out := emptyTargets(in.members)
	by, topics := in.subscribers()
	for _, t := range topics {
		ms := by[t]
		n := in.topics[t].Partitions
		k := int32(len(ms))
		per, extra := n/k, n%k
		next := int32(0)
		for i, m := range ms {
			cnt := per
			if int32(i) < extra {
				cnt++
			}
			for p := next; p < next+cnt; p++ {
				out[m].add(topicPartition{t, p})
			}
			next += cnt
		}
	}
	return out
}

func emptyTargets(members []string) map[string]assignment {
	out := make(map[string]assignment, len(members))
	for _, m := range members {
		out[m] = assignment{}
	}
	return out
}

func assignUniform(in assignInput) map[string]assignment {
	out := emptyTargets(in.members)
	by, topics := in.subscribers()
	eligible := func(m, t string) bool {
		for _, x := range by[t] {
			if x == m {
				return true
			}
		}
		return false
	}
	// quota: the share a member may keep when sticking, the partitions of
	// its topics divided by their subscribers, rounded up.
	quota := map[string]int{}
	for _, t := range topics {
		n := int(in.topics[t].Partitions)
		for _, m := range by[t] {
			quota[m] += n
		}
	}
	for _, m := range in.members {
		load := 0
		for _, t := range in.subs[m] {
			load += (int(in.topics[t].Partitions) + len(by[t]) - 1) / len(by[t])
		}
		quota[m] = min(quota[m], load)
	}
	var free []topicPartition
	for _, t := range topics {
		for p := int32(0); p < in.topics[t].Partitions; p++ {
			free = append(free, topicPartition{t, p})
		}
	}
	var rest []topicPartition
	for _, tp := range free {
		kept := false
		for _, m := range in.members {
			if in.prev[m].has(tp) && eligible(m, tp.topic) && out[m].count() < quota[m] && !in.betterRack(m, tp, by[tp.topic]) {
				out[m].add(tp)
				kept = true
				break
			}
		}
		if !kept {
			rest = append(rest, tp)
		}
	}
	for _, tp := range rest {
		best := ""
		bestRack := false
		for _, m := range by[tp.topic] {
			rack := in.rackMatch(m, tp)
			if best == "" || out[m].count() < out[best].count() ||
				(out[m].count() == out[best].count() && rack && !bestRack) {
				best, bestRack = m, rack
			}
		}
		out[best].add(tp)
	}
	balance(out, by, topics)
	return out
}

// rackMatch reports whether member m's rack holds a replica of tp.
func (in assignInput) rackMatch(m string, tp topicPartition) bool {
	r := in.racks[m]
	ti := in.topics[tp.topic]
	if r == "" || int(tp.partition) >= len(ti.Racks) {
		return false
	}
	for _, x := range ti.Racks[tp.partition] {
		if x == r {
			return true
		}
	}
	return false
}

// betterRack reports whether tp should leave m for a rack match: m's
// rack holds no replica of tp while another eligible member's does.
func (in assignInput) betterRack(m string, tp topicPartition, eligible []string) bool {
	if in.rackMatch(m, tp) {
		return false
	}
	for _, o := range eligible {
		if o != m && in.rackMatch(o, tp) {
			return true
		}
	}
	return false
}

// balance moves partitions from the most to the least loaded eligible
// member until no move narrows the gap; bounded by the partition count.
func balance(out map[string]assignment, by map[string][]string, topics []string) {
	total := 0
	for _, t := range topics {
		total += len(by[t])
	}
	for iter := 0; iter < 4*total+16; iter++ {
		moved := false
		for _, t := range topics {
			ms := by[t]
			hi, lo := ms[0], ms[0]
			for _, m := range ms {
				if out[m].count() > out[hi].count() {
					hi = m
				}
				if out[m].count() < out[lo].count() {
					lo = m
				}
			}
			if out[hi].count()-out[lo].count() <= 1 || len(out[hi][t]) == 0 {
				continue
			}
			ps := out[hi][t]
			p := ps[len(ps)-1]
			out[hi][t] = ps[:len(ps)-1]
			if len(out[hi][t]) == 0 {
				delete(out[hi], t)
			}
			out[lo].add(topicPartition{t, p})
			moved = true
		}
		if !moved {
			return
		}
	}
}
