package node

import (
	"time"

	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/node/partition"
)

// maintain runs retention and compaction on every local partition replica.
// Each replica does so on its own: only whole segments of applied entries
// go, and before they go the log records a snapshot point describing the
// state just after them (partition.CheckpointAt), so a follower that falls
// behind the new start is sent that snapshot and then every entry the
// leader still has. A leader also puts a changed producer.id.expiration.ms
// in its log, where every replica applies it at the same entry.
func (r *Reactor) maintain() {
	now := r.env.Clock.Now()
	for _, g := range sortedKeys(r.parts) {
		p := r.parts[g]
		if err := p.SyncProducerExpiry(); err != nil {
			r.env.Logf("node %d: producer expiry %s-%d: %v", r.self, p.Topic, p.Index, err)
		}
		rep := p.Replica()
		if !rep.Quiet() {
			continue // drained, it runs maintainPart then (ready.go idleWork)
		}
		r.maintainPart(p, now)
	}
}

// maintainPart runs retention and compaction on partition p's replica,
// which has no Ready in flight.
func (r *Reactor) maintainPart(p *partition.Partition, now time.Time) {
	rep := p.Replica()
	limit := rep.Applied() + 1 // entries at or past limit stay
	if p.Cfg.Delete && r.retain(p, now.UnixMilli(), limit) {
		// The new snapshot point goes to disk in the next fsync round,
		// and the dropped files after it: also on a partition that
		// takes no more writes (ready.go wantSync).
		r.wantSync(rep)
	}
	if p.Cfg.Compact {
		// Transaction-aware: nothing at or past the last stable
		// offset, aborted records removed, markers after their data
		// (logstore/compact_txn.go).
		cc := logstore.CleanConfig{DeleteRetentionMs: p.Cfg.DeleteRetentionMs, BytesPerStepMax: 8 << 20, Txns: p.CleanView()}
		if _, err := rep.CleanStep(now, cc, limit); err != nil {
			r.env.Logf("node %d: compact %s-%d: %v", r.self, p.Topic, p.Index, err)
		}
	}
}

// retain drops the segments retention no longer keeps. It reports whether
// it set a new snapshot point: the log then needs a sync, after which the
// dropped segments' files are removed (logstore/sync.go).
func (r *Reactor) retain(p *partition.Partition, nowMs int64, limit uint64) bool {
	log := p.Replica()
	bound := log.RetentionBound(nowMs, p.Cfg.RetentionMs, p.Cfg.RetentionBytes, limit)
	if bound <= log.Snapshot().Index {
		return false
	}
	if log.OffsetAfterIndex(bound) > p.LastStableOffset() {
		// The segments would take data at or above the last stable offset:
		// the first batch of an open transaction, which read_committed
		// readers and the abort index still need. Retention waits until
		// the transaction is decided (docs/transactions.md).
		return false
	}
	meta, err := p.CheckpointAt(bound)
	if err != nil {
		r.env.Logf("node %d: retention checkpoint %s-%d: %v", r.self, p.Topic, p.Index, err)
		return false
	}
	if err := log.SetSnapshot(meta); err != nil {
		r.env.Logf("node %d: retention snapshot %s-%d: %v", r.self, p.Topic, p.Index, err)
		return false
	}
	// Exactly the segments up to the snapshot point go, so a partition log
	// holds no entry at or below its snapshot: the repair scans only the
	// entries after it (repair.go, firstDamaged).
	if _, err := log.CompactTo(bound); err != nil {
		r.env.Logf("node %d: retention %s-%d: %v", r.self, p.Topic, p.Index, err)
	}
	return true
}
