package check

import (
	"fmt"
	"sort"

	"github.com/floe-broker/floe/jepsen/history"
)

// bound is "the value was at least v by time t", from the event that
// showed it.
type bound struct {
	t     int64
	v     int64
	event int64
}

// observation is a value seen by an operation running over [start, end].
type observation struct {
	start, end int64
	v          int64
	event      int64
}

// checkHWMRegression: the high watermark never goes back. An acknowledged
// produce at offset o shows it reached o+1 by the ack; a fetch or final
// read that saw h shows it reached h by the fetch's end. A fetch that began
// after such an event ended must see at least as much.
func checkHWMRegression(a *analysis, opts Options) Result {
	r := newResult(HWMRegression, opts)
	bounds := map[history.TP][]bound{}
	obs := map[history.TP][]observation{}
	for _, v := range sortedValues(a.produces) {
		pr := a.produces[v]
		if pr.acked && pr.ackOffset >= 0 {
			done := a.ops[pr.op].Done
			bounds[pr.tp] = append(bounds[pr.tp], bound{done.Time, pr.ackOffset + 1, done.Index})
		}
	}
	for _, op := range a.ops {
		if (op.Invoke.F != history.Fetch && op.Invoke.F != history.Read) || op.Done.Type != history.OK {
			continue
		}
		for _, hw := range op.Done.HWMs {
			tp := hw.TP()
			bounds[tp] = append(bounds[tp], bound{op.Done.Time, hw.Offset, op.Done.Index})
			obs[tp] = append(obs[tp], observation{op.Invoke.Time, op.Done.Time, hw.Offset, op.Done.Index})
		}
	}
	for _, tp := range a.sortedTPs() {
		r.stat("observations", int64(len(obs[tp])))
		sweepRegressions(r, HWMRegression, "high watermark", tp, bounds[tp], obs[tp])
	}
	return *r
}

// sweepRegressions reports each observation below the largest bound
// established before it began, as anomaly; what names the value in the
// details.
func sweepRegressions(r *Result, anomaly, what string, tp history.TP, bounds []bound, obs []observation) {
	sort.SliceStable(bounds, func(i, j int) bool { return bounds[i].t < bounds[j].t })
	sort.SliceStable(obs, func(i, j int) bool { return obs[i].start < obs[j].start })
	best, bi := bound{v: -1}, 0
	for _, o := range obs {
		for ; bi < len(bounds) && bounds[bi].t < o.start; bi++ {
			if bounds[bi].v > best.v {
				best = bounds[bi]
			}
		}
		if o.v < best.v {
			d := tpDetail(tp, fmt.Sprintf("%s %d, after event %d showed %d", what, o.v, best.event, best.v))
			d.Offsets, d.Events = []int64{best.v, o.v}, []int64{best.event, o.event}
			r.add(anomaly, d)
		}
	}
}

// groupTP names a group's committed offset for one partition.
type groupTP struct {
	group string
	tp    history.TP
}

func (k groupTP) less(o groupTP) bool {
	if k.group != o.group {
		return k.group < o.group
	}
	return k.tp.Less(o.tp)
}

// commitOps splits commits and offset fetches per (group, partition):
// writes are commits (any outcome; one that did not complete ok runs until
// Never), reads are ok offset fetches.
func commitOps(a *analysis) (keys []groupTP, writes, reads map[groupTP][]observation) {
	writes, reads = map[groupTP][]observation{}, map[groupTP][]observation{}
	seen := map[groupTP]bool{}
	for _, op := range a.ops {
		var list []history.Offset
		var into map[groupTP][]observation
		end := op.Done.Time
		switch {
		case op.Invoke.F == history.Commit:
			list, into = op.Invoke.Offsets, writes
			if op.Done.Type != history.OK {
				end = history.Never
			}
		case op.Invoke.F == history.FetchOffset && op.Done.Type == history.OK:
			list, into = op.Done.Offsets, reads
		default:
			continue
		}
		for _, o := range list {
			k := groupTP{op.Invoke.Group, o.TP()}
			into[k] = append(into[k], observation{op.Invoke.Time, end, o.Offset, op.Invoke.Index})
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
	return keys, writes, reads
}

// checkCommittedRegression: a committed-offset read r2 that returns less
// than a read r1 which ended before r2 began is a regression unless some
// commit of r2's value could have taken effect between them (it began
// before r2 ended and ended after r1 began).
func checkCommittedRegression(a *analysis, opts Options) Result {
	r := newResult(CommittedRegression, opts)
	keys, writes, reads := commitOps(a)
	for _, k := range keys {
		r.stat("reads", int64(len(reads[k])))
		for _, r2 := range reads[k] {
			if r1, bad := regressedBefore(r2, reads[k], writes[k]); bad {
				d := Detail{Topic: k.tp.Topic, Partition: k.tp.Partition, Group: k.group,
					Offsets: []int64{r1.v, r2.v}, Events: []int64{r1.event, r2.event},
					Msg: fmt.Sprintf("committed offset read %d after a read of %d ended, and no commit of %d fits between", r2.v, r1.v, r2.v)}
				r.add(CommittedRegression, d)
			}
		}
	}
	return *r
}

func regressedBefore(r2 observation, reads, writes []observation) (observation, bool) {
	for _, r1 := range reads {
		if r1.end >= r2.start || r1.v <= r2.v {
			continue
		}
		explained := false
		for _, w := range writes {
			if w.v == r2.v && w.start <= r2.end && w.end >= r1.start {
				explained = true
				break
			}
		}
		if !explained {
			return r1, true
		}
	}
	return observation{}, false
}
