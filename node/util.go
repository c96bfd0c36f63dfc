package node

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/netx"
)

// setPeer tells the transport a peer's address, when it can learn one.
func (r *Reactor) setPeer(id netx.NodeID, addr string) {
	if res, ok := r.env.Net.(netx.Resolver); ok {
		res.SetPeer(id, addr)
	}
}

var errUnknownPartition = kerr.UnknownTopicOrPartition

// sortedKeys returns a map's keys in order, for loops whose order reaches
// an output.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m { //floe:unordered sorted below
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// errCode returns the Kafka error code of err (0 for nil).
func errCode(err error) int16 {
	if err == nil {
		return 0
	}
	if ke, ok := err.(*kerr.Error); ok {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// missingPartition is the error for a request naming a partition this
// broker holds no replica of. If the applied metadata knows the partition,
// or this broker's metadata may be behind (it is still catching up after a
// start), the answer is NOT_LEADER_OR_FOLLOWER: clients refresh metadata
// and retry. Only a partition the caught-up metadata does not know is
// UNKNOWN_TOPIC_OR_PARTITION.
func (r *Reactor) missingPartition(topic string, partition int32) *kerr.Error {
	if ok, _ := r.metadataReady(); !ok {
		return kerr.NotLeaderForPartition
	}
	if r.partitionNamed(topic, partition) != nil {
		return kerr.NotLeaderForPartition
	}
	return kerr.UnknownTopicOrPartition
}
