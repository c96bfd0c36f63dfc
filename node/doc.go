// Package node is the broker: the reactor that owns every piece of a
// broker's deterministic state — the controller replica and the metadata it
// applies, the partition replicas, pending client requests — and handles one
// event at a time: an inbound peer frame, a client request, a tick, a disk
// completion. Handlers never block; fsyncs go to the runtime through
// Env.Disk and come back as events.
//
// The Kafka APIs are served here, one file per API (api_*.go), each opening
// with the versions it serves and how it behaves, and saying what its
// client must be allowed (authz.go: Kafka's ACLs and roles, when the
// authorizer is on). apis.go lists them all in one table (keys, versions,
// handlers): the only source of what is advertised and routed. The audit
// log (audit.go) records authentications, denials and changes. The
// production runtime (node/runtime) and the simulator (sim) drive the same
// Reactor.
//
// Core code: no time.Now, timers, goroutines, select, os, net or global
// randomness; time, randomness, files and peers come through Env.
package node
