package sim

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
)

// metaCache is the clients' view of the cluster, as a Kafka client keeps
// one: the leader of each partition of the workload topic and the
// controller, from the last Metadata answer; each group's coordinator, from
// FindCoordinator. Leaders move, so every NOT_LEADER answer invalidates an
// entry and a refresh asks some broker again. Refreshes are coalesced: one
// Metadata request at a time, every waiter called when it ends.
type metaCache struct {
	r          *run
	leaders    map[int32]netx.NodeID
	controller netx.NodeID
	coords     map[string]netx.NodeID
	refreshing bool
	waiters    []func()
}

func newMetaCache(r *run) *metaCache {
	return &metaCache{r: r, leaders: map[int32]netx.NodeID{}, coords: map[string]netx.NodeID{}}
}

// leader returns the believed leader of partition p.
func (m *metaCache) leader(p int32) (netx.NodeID, bool) {
	id, ok := m.leaders[p]
	return id, ok
}

func (m *metaCache) invalidate(p int32) { delete(m.leaders, p) }

// anyNode picks a broker to ask, as a client picks a bootstrap server.
func (m *metaCache) anyNode() netx.NodeID {
	return netx.NodeID(1 + m.r.rng.Intn(m.r.o.Nodes))
}

// refresh asks one broker for the topic's metadata and calls done when the
// answer (or a failure) is in.
func (m *metaCache) refresh(done func()) {
	if done != nil {
		m.waiters = append(m.waiters, done)
	}
	if m.refreshing {
		return
	}
	m.refreshing = true
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(m.r.topic)
	req.Topics = append(req.Topics, rt)
	m.r.kn.call(m.anyNode(), req, m.r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			m.absorb(resp.(*kmsg.MetadataResponse))
		}
		m.refreshing = false
		ws := m.waiters
		m.waiters = nil
		for _, w := range ws {
			w()
		}
	})
}

func (m *metaCache) absorb(resp *kmsg.MetadataResponse) {
	if resp.ControllerID > 0 {
		m.controller = netx.NodeID(resp.ControllerID)
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != m.r.topic || t.ErrorCode != 0 {
			continue
		}
		for _, p := range t.Partitions {
			if p.Leader > 0 && p.ErrorCode == 0 {
				m.leaders[p.Partition] = netx.NodeID(p.Leader)
			} else {
				delete(m.leaders, p.Partition)
			}
		}
	}
}

// findCoordinator asks some broker for group's coordinator and calls done
// with it (0 when none is known yet).
func (m *metaCache) findCoordinator(group string, done func(netx.NodeID)) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 3
	req.CoordinatorKey = group
	m.r.kn.call(m.anyNode(), req, m.r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err != nil {
			done(0)
			return
		}
		fr := resp.(*kmsg.FindCoordinatorResponse)
		if fr.ErrorCode != 0 || fr.NodeID <= 0 {
			delete(m.coords, group)
			done(0)
			return
		}
		m.coords[group] = netx.NodeID(fr.NodeID)
		done(netx.NodeID(fr.NodeID))
	})
}

// retriable reports whether a Kafka error code means "try again, maybe
// elsewhere": the operation did not happen, or may still.
func retriable(code int16) bool {
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.LeaderNotAvailable.Code,
		kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code,
		kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code,
		kerr.KafkaStorageError.Code, kerr.FencedLeaderEpoch.Code,
		kerr.UnknownLeaderEpoch.Code, kerr.NotCoordinator.Code,
		kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.UnstableOffsetCommit.Code, kerr.RebalanceInProgress.Code,
		kerr.NetworkException.Code:
		return true
	}
	return false
}

// errName names a Kafka error code for the history.
func errName(code int16) string {
	var ke *kerr.Error
	if errors.As(kerr.ErrorForCode(code), &ke) {
		return ke.Message
	}
	return fmt.Sprintf("error code %d", code)
}

// askLeader asks any broker for the leader of single-partition topic and
// calls done with it (0 when the answer is lost, an error, or names none).
// The workloads' withLeader caches it.
func (r *run) askLeader(topic string, done func(netx.NodeID)) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	r.kn.call(r.meta.anyNode(), req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		var lead netx.NodeID
		if err == nil {
			for _, t := range resp.(*kmsg.MetadataResponse).Topics {
				if t.Topic != nil && *t.Topic == topic && len(t.Partitions) == 1 && t.Partitions[0].ErrorCode == 0 && t.Partitions[0].Leader > 0 {
					lead = netx.NodeID(t.Partitions[0].Leader)
				}
			}
		}
		done(lead)
	})
}
