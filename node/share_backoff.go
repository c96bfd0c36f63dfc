package node

// Settling share-group redelivery backoffs (Floe's retry policy, issue 18).
//
// A record released by a consumer, or whose lock ran out, backs off for a
// delay its group's floe.share.retry.backoff.* configs set. Those configs
// live in the controller's metadata, and the coordinator's copy of it may
// lag: while the coordinator is cut off from the controller's leader a
// policy set and acknowledged to a client is unknown here, and drawing the
// delay from the stale copy redelivered a released record at once
// (simulator seed 917170 --corrupt --reassign: two records handed out
// again 13-17 ms after their release, under a 718 ms least delay).
//
// So a released record waits unsettled (share.Config.Settle: not acquired,
// persisted as such) until a metadata barrier (metabarrier.go) asked for
// after its release has passed; the node then makes the partition's config
// current and settles it (share.Partition.Settle): each delay runs from its
// record's release, drawn from the policy as the controller had it. The
// cost is one controller ReadIndex round trip before any released record
// can be redelivered (one barrier serves every release before it), and
// none is redelivered while the coordinator cannot reach the controller's
// leader: never early, possibly late.

// settleBackoffs asks for a metadata barrier when some share-partition of
// sh has unsettled records and none is asked for yet; once it passes, the
// records released before the request are settled.
func (r *Reactor) settleBackoffs(sh *shareShard) {
	if sh.settling {
		return
	}
	now := r.monoNow()
	waiting := false
	for _, k := range sortedShareKeys(sh.parts) {
		if sh.parts[k].Unsettled(now) {
			waiting = true
			break
		}
	}
	if !waiting {
		return
	}
	sh.settling = true
	r.afterFreshMetadata(func() {
		sh.settling = false
		if r.shares.shards[sh.raftGroup] != sh {
			return // replaced: the new shard settles what it restored
		}
		for _, k := range sortedShareKeys(sh.parts) {
			sp := sh.parts[k]
			sp.Configure(r.groupShareConfig(k.Group).partition())
			sp.Settle(now)
		}
	})
}

// shareBackoffTick settles the backoffs of every share shard this broker
// leads: releases by lock expiry or a member's departure, and records a
// new coordinator restored unsettled, have no request of their own to
// start it.
func (r *Reactor) shareBackoffTick() {
	for _, g := range sortedKeys(r.shares.shards) {
		sh := r.shares.shards[g]
		if p, ok := r.parts[g]; ok && p.Ready() && p.Term() == sh.term {
			r.settleBackoffs(sh)
		}
	}
}
