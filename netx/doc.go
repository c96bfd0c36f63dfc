// Package netx carries messages between Floe nodes.
//
// It owns the Transport contract (fire-and-forget Send to a peer id; inbound
// messages arrive through a Handler) and two implementations:
//
//   - TCP (tcp.go, tcp_out.go, tcp_in.go, wire.go), the production transport:
//     one outbound connection per peer fed by a bounded queue and a writer
//     goroutine that batches frames per system call; reader goroutines for
//     accepted connections; a handshake naming sender and intended receiver;
//     a frame size cap enforced on both sides; reconnection with jittered
//     exponential backoff. A full queue drops the newest message (see Send).
//   - SimNetwork (sim.go), the simulated network: deterministic, driven by a
//     clock.Scheduler and a seeded *rand.Rand, with latency, loss,
//     duplication, reordering, clogged links, partitions, one-way cuts,
//     isolation and node crashes. It follows the core's determinism rules.
//
// What it must not do: netx knows nothing of Raft or Kafka. A message is an
// opaque byte slice; the node encodes and decodes it. netx never imports
// consensus, node or sim.
package netx
