// Package world is the simulator's world: N nodes on one simulated clock
// (clock.Sim, an event heap ordered by simulated time and sequence), one
// simulated network (netx.SimNetwork) and one crashable in-memory file
// system per node (logstore.SimFS), with a trace of everything that
// happens. It runs on the caller's goroutine, one event at a time, and
// every random choice derives from Config.Seed, so a seed replays bit for
// bit. It injects process faults itself (crash, restart, pause, resume,
// fatal exit) and forwards network faults (partition, isolate, cut, heal)
// and clock faults (skew, jump).
//
// A node is a Factory that receives an Env (its clock, scheduler, network
// endpoint, FS, *rand.Rand, trace) and returns an Instance; events of a
// crashed or stopped incarnation never run. TraceHash is the SHA-256 of the
// trace; the determinism test (a replicated counter, counter_test.go) proves
// the same seed gives the same hash and different seeds different ones.
//
// It imports no Floe package above clock, netx and logstore, and in
// particular not node or consensus, so that their own tests can run on it
// (node/harness_test.go, consensus/random_test.go) and package sim can build
// whole Floe clusters on it (sim.Run). Like sim, it starts no goroutines,
// reads no wall clock, uses no global randomness and iterates no map into
// its trace.
//
//	world.go   Config, Env, Instance, Factory; World: boot, queries, Call, Step, RunUntil
//	host.go    one machine: incarnations, the pause gate, fatal exits
//	faults.go  crash, stop, restart, pause, resume, partitions, clock skew
//	trace.go   the trace and its hash
package world
