// Package consensus is Raft as a pure, deterministic state machine.
//
// The caller feeds it messages (Step) and ticks (Tick), proposes data
// (Propose), and collects a Ready: what to persist, what to send (now, or only
// after the persist is durable), and which committed entries to apply. It
// calls Advance once the Ready has been handled. See api.go for the contract.
//
// It covers leader election with pre-vote and check-quorum, log replication
// with pipelining and flow control, commit by quorum of current-term entries
// only, leader transfer, single-server membership change with learners,
// snapshots and log truncation, and ReadIndex. Host runs many groups on one
// node and coalesces their heartbeats per peer. Config.ElectionDelayTicks
// lets the application order a new group's first campaigns (node makes its
// preferred leader campaign first); it changes when elections start, never
// who may vote or win.
//
// What it must not do: no I/O, no goroutines, no select, no clock, no global
// randomness (election timeouts come from the injected *rand.Rand), no
// iteration over maps where the order reaches an output. It imports no other
// Floe package (except internal/plant, whose planted bugs are compiled out of
// normal builds): the storage it needs is the Storage interface in api.go,
// which node satisfies with logstore.
//
// # Terms and Kafka
//
// A group's Raft term is its Kafka leader epoch: Propose returns the term of
// the new entry, which the partition leader stamps into the batch.
//
// # Where things are
//
//	api.go             types and contracts (Storage, Ready, Config, the RawNode method set)
//	rawnode.go         RawNode: Ready/Advance, message validation
//	raft.go            the member: roles, timers, term handling, send routing
//	election.go        campaigns, pre-vote, vote granting
//	step_leader.go     replication, commit, heartbeats, proposals
//	step_follower.go   appends and heartbeats on followers
//	progress.go        a leader's view of one follower; inflights.go, its flow control
//	tracker.go         membership, quorums, votes
//	log.go             the log: storage plus what is not yet persisted (log_unstable.go)
//	confchange.go      single-server membership changes
//	newestconf.go      decisions in the applied and the newest membership of the log
//	voters.go          an operator's voter change: whether it is safe now (PlanVoterChange)
//	snapshot.go        sending and installing snapshots
//	transfer.go        leader transfer
//	fence.go           vote fences: voting safely after losing acknowledged entries
//	readindex.go       linearizable reads
//	codec.go           wire encoding of Message and ConfChange
//	host.go            many groups per node, one frame per peer, coalesced heartbeats
//	storage_memory.go  MemoryStorage, for tests and simulation
//	describe.go        compact text forms of messages and Readies, for traces
//
// # Tests
//
// testdata/*.txt are scripted scenarios (scenario_test.go) with the expected
// output under each step (the runner is internal/datadriven; regenerate
// with -rewrite). random_test.go runs whole groups on the simulator's world
// (sim/world: clock, network, a crashable FS per node, incarnations) under
// faults, a Figure 8 nemesis (figure8_test.go) and membership changes
// (membership_test.go), and checks Raft's safety properties after every
// step (random_checker_test.go). voters_prop_test.go checks membership
// changes against a model (each member's membership is the replay of its
// applied configuration entries; a leader holds at most one unapplied).
// With -tags floe_bugs, planted bugs must be caught by both
// (planted_test.go, planted_scenario_test.go).
package consensus
