package check

import (
	"fmt"
	"math/rand"

	"github.com/floe-broker/floe/jepsen/history"
)

// A reference broker that is correct by construction, driven by seeded
// random clients, records histories every checker must accept. Each
// operation takes effect at one step between its invoke and completion, so
// the histories are linearizable; some end info, and their effect lands
// later or never, as a retried idempotent produce's would.

type genConfig struct {
	seed       int64
	partitions int
	producers  int
	fetchers   int
	groups     int
	steps      int
	infoPct    int // chance an operation ends info
}

type pending struct {
	inv     history.Op
	applied bool
	result  history.Op
}

type gen struct {
	cfg       genConfig
	rnd       *rand.Rand
	t         int64
	h         history.History
	logs      map[history.TP][]string
	committed map[groupTP]int64
	pos       map[string]map[history.TP]int64 // group -> consumer positions
	procs     []int64                         // process id per client slot
	running   map[int]*pending                // client slot -> operation
	ghosts    []history.Op                    // info produces that may still land
	nextValue int
}

func newGen(cfg genConfig) *gen {
	g := &gen{cfg: cfg, rnd: rand.New(rand.NewSource(cfg.seed)), logs: map[history.TP][]string{},
		committed: map[groupTP]int64{}, pos: map[string]map[history.TP]int64{}, running: map[int]*pending{}}
	n := cfg.producers + cfg.fetchers + 2*cfg.groups
	for i := 0; i < n; i++ {
		g.procs = append(g.procs, int64(i))
	}
	for i := 0; i < cfg.groups; i++ {
		g.pos[groupName(i)] = map[history.TP]int64{}
	}
	return g
}

func groupName(i int) string { return fmt.Sprintf("g%d", i) }

func (g *gen) tp(i int) history.TP { return history.TP{Topic: "t", Partition: int32(i)} }

func (g *gen) add(op history.Op) history.Op {
	g.t += 1 + int64(g.rnd.Intn(3))
	op.Index, op.Time = int64(len(g.h)), g.t
	g.h = append(g.h, op)
	return op
}

// slot kinds: [0, producers) produce; then fetchers; then per group a
// consumer (polls, commits) and an offset reader.
func (g *gen) kind(slot int) (string, int) {
	switch {
	case slot < g.cfg.producers:
		return "produce", slot
	case slot < g.cfg.producers+g.cfg.fetchers:
		return "fetch", slot
	default:
		i := slot - g.cfg.producers - g.cfg.fetchers
		if i%2 == 0 {
			return "consume", i / 2
		}
		return "offsets", i / 2
	}
}

func (g *gen) run() history.History {
	for s := 0; s < g.cfg.steps; s++ {
		g.step(g.rnd.Intn(len(g.procs)))
		if len(g.ghosts) > 0 && g.rnd.Intn(20) == 0 {
			g.landGhost()
		}
	}
	for slot := range g.procs { // finish everything, no more faults
		for g.running[slot] != nil {
			g.stepNoFault(slot)
		}
	}
	for len(g.ghosts) > 0 {
		g.landGhost()
	}
	g.drain()
	g.finalReads()
	return g.h
}

func (g *gen) step(slot int) {
	p := g.running[slot]
	switch {
	case p == nil:
		g.invoke(slot)
	case !p.applied && g.rnd.Intn(100) < g.cfg.infoPct:
		g.completeUnapplied(slot, p)
	case !p.applied:
		g.apply(slot, p)
	default:
		g.complete(slot, p, g.rnd.Intn(100) < g.cfg.infoPct)
	}
}

func (g *gen) stepNoFault(slot int) {
	p := g.running[slot]
	if !p.applied {
		g.apply(slot, p)
		return
	}
	g.complete(slot, p, false)
}

func (g *gen) invoke(slot int) {
	kind, i := g.kind(slot)
	op := history.Op{Process: g.procs[slot]}
	switch kind {
	case "produce":
		tp := g.tp(g.rnd.Intn(g.cfg.partitions))
		g.nextValue++
		op.F, op.Records = history.Produce, []history.Record{{Topic: tp.Topic, Partition: tp.Partition, Offset: -1, Value: fmt.Sprint(g.nextValue)}}
	case "fetch":
		tp := g.tp(g.rnd.Intn(g.cfg.partitions))
		start := int64(g.rnd.Intn(len(g.logs[tp]) + 1))
		op.F, op.Offsets = history.Fetch, []history.Offset{{Topic: tp.Topic, Partition: tp.Partition, Offset: start}}
	case "consume":
		op.Group = groupName(i)
		switch g.rnd.Intn(10) {
		case 0:
			g.reassign(slot, op.Group)
			return
		case 1, 2:
			op.F = history.Commit
			for p := 0; p < g.cfg.partitions; p++ {
				if off, ok := g.pos[op.Group][g.tp(p)]; ok {
					op.Offsets = append(op.Offsets, history.Offset{Topic: "t", Partition: int32(p), Offset: off})
				}
			}
		default:
			op.F = history.Poll
		}
	case "offsets":
		op.F, op.Group = history.FetchOffset, groupName(i)
		for p := 0; p < g.cfg.partitions; p++ {
			op.Offsets = append(op.Offsets, history.Offset{Topic: "t", Partition: int32(p), Offset: -1})
		}
	}
	g.running[slot] = &pending{inv: g.add(withType(op, history.Invoke))}
}

func withType(op history.Op, t history.Type) history.Op { op.Type = t; return op }

// reassign is a rebalance: the consumer resumes from the committed offsets.
func (g *gen) reassign(slot int, group string) {
	op := history.Op{Process: g.procs[slot], Type: history.OK, F: history.Assign, Group: group}
	for p := 0; p < g.cfg.partitions; p++ {
		tp := g.tp(p)
		op.Assigned = append(op.Assigned, tp)
		if off, ok := g.committed[groupTP{group, tp}]; ok {
			g.pos[group][tp] = off
		} else {
			delete(g.pos[group], tp)
		}
	}
	g.add(op)
}

func (g *gen) apply(slot int, p *pending) {
	p.applied = true
	inv := p.inv
	res := history.Op{Group: inv.Group}
	switch inv.F {
	case history.Produce:
		res.Records = []history.Record{g.appendRecord(inv.Records[0])}
	case history.Fetch:
		tp := inv.Offsets[0].TP()
		res.Records = g.readLog(tp, inv.Offsets[0].Offset, 1+g.rnd.Intn(4))
		res.HWMs = []history.Offset{{Topic: tp.Topic, Partition: tp.Partition, Offset: int64(len(g.logs[tp]))}}
	case history.Poll:
		res.Records = g.poll(inv.Group)
	case history.Commit:
		for _, o := range inv.Offsets {
			g.committed[groupTP{inv.Group, o.TP()}] = o.Offset
		}
		res.Offsets = inv.Offsets
	case history.FetchOffset:
		for _, o := range inv.Offsets {
			off, ok := g.committed[groupTP{inv.Group, o.TP()}]
			if !ok {
				off = history.NoOffset
			}
			res.Offsets = append(res.Offsets, history.Offset{Topic: o.Topic, Partition: o.Partition, Offset: off})
		}
	}
	p.result = res
}

func (g *gen) appendRecord(r history.Record) history.Record {
	tp := r.TP()
	r.Offset = int64(len(g.logs[tp]))
	g.logs[tp] = append(g.logs[tp], r.Value)
	return r
}

func (g *gen) readLog(tp history.TP, from int64, n int) []history.Record {
	var out []history.Record
	for off := from; off < int64(len(g.logs[tp])) && len(out) < n; off++ {
		out = append(out, history.Record{Topic: tp.Topic, Partition: tp.Partition, Offset: off, Value: g.logs[tp][off]})
	}
	return out
}

func (g *gen) poll(group string) []history.Record {
	var out []history.Record
	for p := 0; p < g.cfg.partitions; p++ {
		tp := g.tp(p)
		from, ok := g.pos[group][tp]
		if !ok {
			from = 0
		}
		recs := g.readLog(tp, from, 1+g.rnd.Intn(3))
		if len(recs) > 0 {
			g.pos[group][tp] = recs[len(recs)-1].Offset + 1
		}
		out = append(out, recs...)
	}
	return out
}

// complete ends the operation. An info produce not yet applied may land
// later (a ghost); a process that ends info goes on under a new id.
func (g *gen) complete(slot int, p *pending, info bool) {
	delete(g.running, slot)
	if !info {
		g.add(history.Op{Process: p.inv.Process, Type: history.OK, F: p.inv.F, Group: p.result.Group,
			Records: p.result.Records, Offsets: p.result.Offsets, HWMs: p.result.HWMs})
		return
	}
	g.add(history.Op{Process: p.inv.Process, Type: history.Info, F: p.inv.F, Group: p.inv.Group, Error: "timeout"})
	g.procs[slot] += 1000
	if p.inv.F == history.Poll { // the consumer lost track of what it read
		g.reassign(slot, p.inv.Group)
	}
}

// completeUnapplied ends an operation info before it took effect; a
// produce may still land later, or never.
func (g *gen) completeUnapplied(slot int, p *pending) {
	delete(g.running, slot)
	g.add(history.Op{Process: p.inv.Process, Type: history.Info, F: p.inv.F, Group: p.inv.Group, Error: "timeout"})
	g.procs[slot] += 1000
	if p.inv.F == history.Poll {
		g.reassign(slot, p.inv.Group)
	}
	if p.inv.F == history.Produce && g.rnd.Intn(2) == 0 {
		g.ghosts = append(g.ghosts, p.inv)
	}
}

func (g *gen) landGhost() {
	i := g.rnd.Intn(len(g.ghosts))
	g.appendRecord(g.ghosts[i].Records[0])
	g.ghosts = append(g.ghosts[:i], g.ghosts[i+1:]...)
}

// drain: every consumer polls until it has read everything.
func (g *gen) drain() {
	for i := 0; i < g.cfg.groups; i++ {
		slot := g.cfg.producers + g.cfg.fetchers + 2*i
		for {
			group := groupName(i)
			inv := g.add(history.Op{Process: g.procs[slot], Type: history.Invoke, F: history.Poll, Group: group})
			recs := g.poll(group)
			g.add(history.Op{Process: inv.Process, Type: history.OK, F: history.Poll, Group: group, Records: recs})
			if len(recs) == 0 {
				break
			}
		}
	}
}

func (g *gen) finalReads() {
	for p := 0; p < g.cfg.partitions; p++ {
		tp := g.tp(p)
		start := []history.Offset{{Topic: tp.Topic, Partition: tp.Partition, Offset: 0}}
		inv := g.add(history.Op{Process: 9999, Type: history.Invoke, F: history.Read, Offsets: start})
		recs := g.readLog(tp, 0, len(g.logs[tp]))
		hwm := []history.Offset{{Topic: tp.Topic, Partition: tp.Partition, Offset: int64(len(g.logs[tp]))}}
		g.add(history.Op{Process: inv.Process, Type: history.OK, F: history.Read, Records: recs, HWMs: hwm})
	}
}

func defaultGen(seed int64) genConfig {
	return genConfig{seed: seed, partitions: 3, producers: 4, fetchers: 2, groups: 2, steps: 600, infoPct: 5}
}
