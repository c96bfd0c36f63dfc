package group

import (
	"maps"
	"slices"
)

// Fork returns a new coordinator on cfg and env holding what c's replay
// built, as if every record c replayed had been replayed into it; c must
// not have started (it only replays). c is left as it was and may replay
// on: a node keeps one replay-only coordinator per offsets partition and
// forks it whenever it takes the partition's leadership, replaying into
// it only the records committed since, instead of replaying the whole log
// at every leader change (node/coordinators.go). Nothing the fork holds is
// shared with c but immutable byte slices and strings.
func (c *Coordinator) Fork(cfg Config, env Env) *Coordinator {
	if c.started {
		panic("group: Fork of a started coordinator")
	}
	f := New(cfg, env)
	f.token = c.token
	for name, g := range c.groups { //floe:unordered each group is copied on its own
		f.groups[name] = g.fork()
	}
	if c.txnPending != nil {
		f.txnPending = make(map[int64]txnOffsets, len(c.txnPending))
		for pid, to := range c.txnPending { //floe:unordered each producer's offsets are copied on their own
			fto := make(txnOffsets, len(to))
			for name, byTP := range to { //floe:unordered copied key by key
				fto[name] = maps.Clone(byTP)
			}
			f.txnPending[pid] = fto
		}
	}
	return f
}

// fork returns a copy of a replayed group that shares no mutable state
// with g.
func (g *group) fork() *group {
	f := *g
	if g.protocol != nil {
		p := *g.protocol
		f.protocol = &p
	}
	f.members, f.byID = nil, nil // as g's: nil or made
	if g.members != nil {
		f.members = make([]*member, len(g.members))
	}
	if g.byID != nil {
		f.byID = make(map[string]*member, len(g.byID))
	}
	for i, m := range g.members {
		fm := *m
		fm.protocols = slices.Clone(m.protocols)
		if m.instanceID != nil {
			id := *m.instanceID
			fm.instanceID = &id
		}
		f.members[i] = &fm
		f.byID[fm.id] = &fm // byID indexes members (group's invariant)
	}
	f.static = maps.Clone(g.static)
	f.pending = maps.Clone(g.pending)
	f.pendingSync = maps.Clone(g.pendingSync)
	f.subscribed = maps.Clone(g.subscribed)
	f.offsets = maps.Clone(g.offsets)
	f.pendingCommits = maps.Clone(g.pendingCommits)
	if g.cons != nil {
		// A replayed consumer group is its record's image, decoded
		// (replayConsumer): decoding the image again makes the copy.
		cg, err := decodeConsumerGroup(g.cons.committed)
		if err != nil {
			panic("group: fork of a consumer group whose image does not decode: " + err.Error())
		}
		cg.committed = g.cons.committed
		f.cons = cg
	}
	return &f
}
