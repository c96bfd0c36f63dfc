// Package nemesis injects faults into a Docker-suite cluster on a seeded
// schedule and keeps the timeline of what it did.
//
// Kinds (Config.Kinds):
//
//	kill              kill -9 one node, restart it after the fault window
//	pause             freeze one node (cgroup freezer), resume it after
//	partition-one     isolate one node from every other node
//	partition-half    cut the cluster into a minority (holding the target)
//	                  and a majority
//	partition-bridge  two halves that cannot talk, joined by one bridge node
//	                  that talks to both (the target sits in the smaller half)
//	membership        add or remove a broker: a hook (Config.Membership);
//	                  without one the kind is refused
//
// Targets (Config.Targets): any node, the leader of a random partition, or
// the controller leader, found through Metadata at the moment of the fault.
//
// Harness code: real time, not deterministic; the schedule's choices come
// from Config.Seed, their timing from the wall clock.
package nemesis
