// Package netx carries messages between Floe nodes.
//
// It owns the Transport contract (fire-and-forget Send to a peer id; inbound
// messages arrive through a Handler), a production implementation over TCP
// (tcp.go) and a simulated one (sim.go) with seeded latency, loss,
// duplication, reordering, partitions and clogged links.
//
// What it must not do: netx knows nothing of Raft or Kafka. A message is an
// opaque byte slice; the node encodes and decodes it. netx never imports
// consensus, node or sim.
package netx
