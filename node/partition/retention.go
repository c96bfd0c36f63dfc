package partition

import (
	"fmt"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/node/replica"
)

// CheckpointAt computes the snapshot point the log needs before it may drop
// every entry up to and including bound: the partition state and membership
// as of bound, by replaying the entries after the current snapshot point
// onto a scratch copy of its state. bound must be applied (so it is
// committed and will never be truncated).
//
// Why replay instead of using the live state: the live state is at the
// applied index, but a follower that needs a snapshot must then receive
// every entry after the snapshot point, and the log only keeps entries
// after bound. So the snapshot must describe exactly bound.
func (p *Partition) CheckpointAt(bound uint64) (logstore.SnapshotMeta, error) {
	log := p.rep
	snap := log.Snapshot()
	if bound <= snap.Index || bound > p.rep.Applied() {
		return logstore.SnapshotMeta{}, fmt.Errorf("partition %s-%d: checkpoint at %d outside (%d, %d]", p.Topic, p.Index, bound, snap.Index, p.rep.Applied())
	}
	sd, err := replica.DecodeSnapshotData(snap.Data)
	if err != nil {
		return logstore.SnapshotMeta{}, err
	}
	scratch := New(p.Topic, p.Index, p.Cfg)
	if err := scratch.Restore(consensus.SnapshotMeta{Index: snap.Index, Term: snap.Term}, sd); err != nil {
		return logstore.SnapshotMeta{}, err
	}
	if sd.NextOffset == 0 {
		scratch.hw = snap.NextOffset
	}
	conf := sd.Conf
	for lo := snap.Index + 1; lo <= bound; {
		es, err := log.Entries(lo, bound+1, 4<<20)
		if err != nil {
			return logstore.SnapshotMeta{}, err
		}
		if len(es) == 0 {
			return logstore.SnapshotMeta{}, fmt.Errorf("partition %s-%d: no entries at %d", p.Topic, p.Index, lo)
		}
		for _, le := range es {
			e := replica.FromLog(le)
			if e.Type == consensus.EntryConfChange {
				if cc, err := consensus.UnmarshalConfChange(e.Data); err == nil {
					conf = replica.ApplyConf(conf, cc)
				}
			}
			scratch.Apply(e)
		}
		lo = es[len(es)-1].Index + 1
	}
	term, err := log.Term(bound)
	if err != nil {
		return logstore.SnapshotMeta{}, err
	}
	next := log.OffsetAfterIndex(bound)
	data := replica.EncodeSnapshotData(replica.SnapshotData{Conf: conf, NextOffset: next, App: scratch.Checkpoint()})
	return logstore.SnapshotMeta{Index: bound, Term: term, NextOffset: next, Data: data}, nil
}
