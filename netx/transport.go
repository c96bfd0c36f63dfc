package netx

// NodeID names a broker. It is the Raft node id of every replica the broker
// hosts and the Kafka broker id clients see. Zero is never a valid id.
type NodeID uint64

// Transport sends messages to peers.
//
// Contract:
//   - Send(to, msg) queues msg for delivery to peer `to` and returns at once.
//     It never blocks and never reports failure. Delivery is best effort: a
//     message may be lost (peer down, queue full, connection reset), delayed
//     or, on the simulated network, duplicated and reordered. Callers (Raft)
//     must tolerate all of this; they retry by protocol, not by transport.
//   - The transport takes ownership of msg: the caller must not modify it
//     after Send.
//   - Sending to yourself or to an unknown peer drops the message.
//   - Messages that arrive are passed to the Handler given when the transport
//     was made, one call per message, each with the sender's id.
type Transport interface {
	Send(to NodeID, msg []byte)
}

// Anyone is a pseudo peer id for an address whose node id is not known yet
// (a broker joining a cluster knows one member's address, not its id): the
// node listening there accepts it, whatever its own id. As a sender it
// names a process that shares the receiver's own id and reached it by
// address (a duplicate broker id): the receiver learns no more of it.
const Anyone NodeID = 1<<64 - 1

// Handler receives one inbound message. The real transport calls it from its
// reader goroutines (so a production Handler posts to the reactor and returns
// quickly); the simulated network calls it from the simulator's loop. The
// handler owns msg.
type Handler func(from NodeID, msg []byte)

// Resolver is an optional ability of a Transport whose peers can change at
// run time (brokers joining a cluster): it learns or forgets a peer address.
type Resolver interface {
	SetPeer(id NodeID, addr string)
	RemovePeer(id NodeID)
}
