// Package sim is Floe's deterministic simulator.
//
// The world is package sim/world (this package names its types World,
// Config, Env, Instance, Factory, FatalEvent and NewWorld). A World hosts N nodes on one simulated clock (clock.Sim, an event heap
// ordered by simulated time and sequence), one simulated network
// (netx.SimNetwork) and one crashable in-memory file system per node
// (logstore.SimFS). It runs on the caller's goroutine, one event at a time,
// and every random choice in a run derives from Config.Seed, so a seed
// replays bit for bit. It injects process faults itself (crash, restart,
// pause, resume) and forwards network faults (partition, isolate, heal).
//
// Everything that happens is written to a trace: each scheduler event, each
// message delivery, each fault, and the nodes' own trace lines. TraceHash is
// the SHA-256 of that trace; the determinism test proves the same seed gives
// the same hash and different seeds different ones.
//
// Node code does not know it is simulated: it is written against the Env a
// Factory receives (clock.Clock, clock.Scheduler, netx.Transport,
// logstore.FS, *rand.Rand), the same contracts the production runtime
// satisfies.
//
// On top of the World, Run (run.go) runs a whole Floe cluster: full
// brokers (node.Reactor through BrokerFactory, on a simulated disk),
// simulated Kafka clients that record a history (jepsen/history), a
// nemesis that injects the faults a seed chose (ChooseOptions: swarm
// testing), a safety phase, a liveness phase after healing, and the shared
// checkers of jepsen/check. go test ./sim runs it over many seeds; floe sim
// replays one seed or runs a campaign. docs/testing.md ("Simulator") says
// how to read and replay a failing run.
//
// About a third of the seeds (Options.Auth) run the brokers with the ACL
// authorizer on and every client logged in with SASL/SCRAM (auth.go: the
// simulator plays the protocol server's SASL part, with nonces from each
// node's seeded randomness; authclient.go and authscram.go: the clients'
// side), with an ACL workload and its checkers (authwork.go,
// authcheck.go).
//
// What it must not do: sim starts no goroutines, reads no wall clock, uses no
// global randomness and iterates no map into its trace. Nothing under node
// imports sim; node's tests use sim/world, which imports no node.
package sim
