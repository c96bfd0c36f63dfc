// Command jepsen is Floe's Docker fault-injection suite: it builds a static
// floe binary and an image FROM scratch, starts a cluster of containers on a
// private network, runs a franz-go workload from the host while a nemesis
// injects faults, heals, drains, reads everything back, and checks the
// history with the simulator's checkers (jepsen/check).
//
//	jepsen run [flags]     one run; writes jepsen/out/<timestamp>/
//	jepsen smoke [flags]   a run of at most 5 minutes (what .ci/run calls)
//	jepsen check DIR       re-check DIR/history.jsonl, rewrite results and plot
//	jepsen clean           remove every container, network and data
//	                       directory any run left behind
//
// Exit status: 0 when every checker says valid, 1 when one says invalid
// or unknown, 2 when the run itself could not be carried out.
package main
