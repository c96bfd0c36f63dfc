package node

import "time"

// BUGGIFY fault sites (FoundationDB style): places in product code that,
// in simulation only, now and then take a path that is legal but rare in
// production, so the simulator's clients and checkers meet it. Env.Buggify
// is nil in production and every site is then dead code: r.buggify is
// false without drawing, and the hooks handed to other packages are nil.
//
// Every site is behaviour the protocol allows: an error a client must
// already retry, an answer lost or late as on a real network, periodic work
// run earlier than its period, a legal but small configuration. None may
// acknowledge what is not durable, serve what is not committed, or serve a
// read without the read lease. Each site is counted (Stats.Buggify, and
// Env.OnBuggify), so the simulator's coverage table shows which fired.
//
// Sites (name: where; what a real system would be doing):
//
//	fetch-one-batch: api_fetch.go; the first partition's byte budget ran
//	  out after one batch, so clients must fetch again.
//	fetch-empty: api_fetch.go; a partition answers with no records (as a
//	  fetch whose wait ended before the data arrived).
//	fetch-not-leader: api_fetch.go readLeader; NOT_LEADER_OR_FOLLOWER, as
//	  while leadership moves.
//	produce-lost-answer: api_produce.go; a committed acks=all write is
//	  answered REQUEST_TIMED_OUT, so idempotence must answer the retry.
//	produce-not-leader: api_produce.go; NOT_LEADER_OR_FOLLOWER before the
//	  append.
//	produce-not-enough-replicas: api_produce.go; NOT_ENOUGH_REPLICAS
//	  before the append (a follower looked slow).
//	list-offsets-not-leader: api_list_offsets.go; NOT_LEADER_OR_FOLLOWER.
//	metadata-no-leader: api_metadata.go; a partition is named leaderless
//	  (LEADER_NOT_AVAILABLE), as during an election.
//	find-coordinator-not-available: api_find_coordinator.go;
//	  COORDINATOR_NOT_AVAILABLE.
//	group-coordinator-loading: coordinators.go coordinatorFor;
//	  COORDINATOR_LOAD_IN_PROGRESS.
//	group-not-coordinator: coordinators.go coordinatorFor; NOT_COORDINATOR,
//	  as right after the offsets partition's leadership moved.
//	offsets-write-fails: coordinators.go offsetsLog; a __consumer_offsets
//	  write fails before it is appended (leadership just moved).
//	txn-coordinator-loading: txns.go txnCoordinatorFor;
//	  COORDINATOR_LOAD_IN_PROGRESS.
//	txn-not-coordinator: txns.go txnCoordinatorFor; NOT_COORDINATOR.
//	txn-state-write-fails: txns.go; a __transaction_state write fails
//	  before it is appended.
//	share-coordinator-loading: shares.go; COORDINATOR_LOAD_IN_PROGRESS.
//	add-partitions-concurrent: api_add_partitions_to_txn.go;
//	  CONCURRENT_TRANSACTIONS before anything is done (clients retry).
//	offset-commit-timeout: api_offset_commit.go; a commit that was written
//	  is answered REQUEST_TIMED_OUT (the answer was lost; it may apply).
//	join-answer-delayed, sync-answer-delayed, heartbeat-answer-delayed:
//	  api_join_group.go, api_sync_group.go, api_heartbeat.go; the
//	  coordinator's answer leaves up to 300 ms late (a slow rebalance).
//	conn-closed-before-serving: dispatch.go; the connection drops before
//	  the request is read (no answer, nothing done).
//	offset-fetch-loading: api_offset_fetch.go; OffsetFetch answered
//	  COORDINATOR_LOAD_IN_PROGRESS.
//	answer-delayed: dispatch.go; the answer leaves up to 200 ms late
//	  (within the request's deadline, which still answers first if due).
//	lease-early-expiry: lease.go leaseHeld; the leader claims its lease has
//	  expired and refuses to serve the read (refusing is always safe).
//	lease-renewal-skipped: lease.go renewLeases; a lease confirmation is
//	  not sent this tick.
//	controller-snapshot-early: controller.go; the controller snapshots and
//	  compacts its log long before ctlSnapshotEvery entries, so followers
//	  behind are sent snapshots.
//	maintenance-early: tick.go; retention and compaction run on a tick
//	  that is not due (periodic work earlier than its period).
//	reassign-drive-early: tick.go; reassignments are driven on an
//	  off-period tick.
//	balance-leaders-early: tick.go; preferred-leader balancing runs on an
//	  off-period tick (a leadership transfer when one is due).
//	segment-roll-early: replicas.go logOptions (logstore.Options.RollEarly);
//	  the active segment rolls before an append, as segment.ms would.
//	raft-small-messages: replicas.go raftConfig; a group's Raft member is
//	  created with a 1-byte MaxSizePerMsg (one entry per append message:
//	  tiny fetch byte budgets to followers) and 4 messages in flight. The
//	  one site whose effect lasts: at the simulator's heal it stops firing
//	  and every member gets the normal limits back (endLastingBuggify).
//	forward-timeout: rpc.go retryForwards; a forward to the controller is
//	  given up as REQUEST_TIMED_OUT (it may still apply).
//
// Opt-in sites draw only when Env.BuggifyOptIn names them (focused
// simulator tests; the default seeds' randomness, so their traces, are
// untouched by them):
//
//	pending-rebuild-read-fails: partition.go rebuildPending
//	  (Partition.RebuildReadFault); a new leader's read of its log's tail
//	  fails, as a disk read error would, so it must refuse appends until a
//	  rebuild reads the whole tail (sim readfault_test.go).
type bugSite uint8

const (
	bugFetchOneBatch bugSite = iota
	bugFetchEmpty
	bugFetchNotLeader
	bugProduceLostAnswer
	bugProduceNotLeader
	bugProduceNotEnoughReplicas
	bugListOffsetsNotLeader
	bugMetadataNoLeader
	bugFindCoordinatorNotAvailable
	bugGroupCoordinatorLoading
	bugGroupNotCoordinator
	bugOffsetsWriteFails
	bugTxnCoordinatorLoading
	bugTxnNotCoordinator
	bugTxnStateWriteFails
	bugShareCoordinatorLoading
	bugAddPartitionsConcurrent
	bugOffsetCommitTimeout
	bugJoinAnswerDelayed
	bugSyncAnswerDelayed
	bugHeartbeatAnswerDelayed
	bugConnClosedBeforeServing
	bugOffsetFetchLoading
	bugAnswerDelayed
	bugLeaseEarlyExpiry
	bugLeaseRenewalSkipped
	bugControllerSnapshotEarly
	bugMaintenanceEarly
	bugReassignDriveEarly
	bugBalanceLeadersEarly
	bugSegmentRollEarly
	bugRaftSmallMessages
	bugForwardTimeout
	bugPendingRebuildReadFails
	bugSites // the number of sites
)

// bugSiteTable names each site and gives its odds (it fires once in oneIn
// of the times it is reached).
var bugSiteTable = [bugSites]struct {
	name  string
	oneIn int
}{
	bugFetchOneBatch:               {"fetch-one-batch", 20},
	bugFetchEmpty:                  {"fetch-empty", 40},
	bugFetchNotLeader:              {"fetch-not-leader", 100},
	bugProduceLostAnswer:           {"produce-lost-answer", 50},
	bugProduceNotLeader:            {"produce-not-leader", 100},
	bugProduceNotEnoughReplicas:    {"produce-not-enough-replicas", 100},
	bugListOffsetsNotLeader:        {"list-offsets-not-leader", 50},
	bugMetadataNoLeader:            {"metadata-no-leader", 50},
	bugFindCoordinatorNotAvailable: {"find-coordinator-not-available", 30},
	bugGroupCoordinatorLoading:     {"group-coordinator-loading", 60},
	bugGroupNotCoordinator:         {"group-not-coordinator", 80},
	bugOffsetsWriteFails:           {"offsets-write-fails", 40},
	bugTxnCoordinatorLoading:       {"txn-coordinator-loading", 40},
	bugTxnNotCoordinator:           {"txn-not-coordinator", 60},
	bugTxnStateWriteFails:          {"txn-state-write-fails", 20},
	bugShareCoordinatorLoading:     {"share-coordinator-loading", 30},
	bugAddPartitionsConcurrent:     {"add-partitions-concurrent", 30},
	bugOffsetCommitTimeout:         {"offset-commit-timeout", 40},
	bugJoinAnswerDelayed:           {"join-answer-delayed", 10},
	bugSyncAnswerDelayed:           {"sync-answer-delayed", 10},
	bugHeartbeatAnswerDelayed:      {"heartbeat-answer-delayed", 20},
	bugConnClosedBeforeServing:     {"conn-closed-before-serving", 300},
	bugOffsetFetchLoading:          {"offset-fetch-loading", 40},
	bugAnswerDelayed:               {"answer-delayed", 100},
	bugLeaseEarlyExpiry:            {"lease-early-expiry", 200},
	bugLeaseRenewalSkipped:         {"lease-renewal-skipped", 50},
	bugControllerSnapshotEarly:     {"controller-snapshot-early", 300},
	bugMaintenanceEarly:            {"maintenance-early", 100},
	bugReassignDriveEarly:          {"reassign-drive-early", 50},
	bugBalanceLeadersEarly:         {"balance-leaders-early", 200},
	bugSegmentRollEarly:            {"segment-roll-early", 100},
	bugRaftSmallMessages:           {"raft-small-messages", 4},
	bugForwardTimeout:              {"forward-timeout", 100},
	bugPendingRebuildReadFails:     {"pending-rebuild-read-fails", 2},
}

// bugOptIn marks the opt-in sites: they draw only when Env.BuggifyOptIn
// names them.
var bugOptIn = [bugSites]bool{bugPendingRebuildReadFails: true}

// BuggifySites returns the names of every BUGGIFY site, in Stats.Buggify
// order.
func BuggifySites() []string {
	out := make([]string, bugSites)
	for i := range out {
		out[i] = bugSiteTable[i].name
	}
	return out
}

// buggify reports whether site s fires: only in simulation, with its odds,
// drawn from the simulation's seeded generator (an opt-in site not turned
// on draws nothing). A firing is counted and traced.
func (r *Reactor) buggify(s bugSite) bool {
	site := bugSiteTable[s]
	if r.env.Buggify == nil || bugOptIn[s] && !r.env.BuggifyOptIn[site.name] || r.env.Buggify.Intn(site.oneIn) != 0 {
		return false
	}
	r.stats.Buggify[s]++
	r.env.Logf("buggify %s", bugSiteTable[s].name)
	if r.env.OnBuggify != nil {
		r.env.OnBuggify(bugSiteTable[s].name)
	}
	return true
}

// buggifyHook is site s as a hook for another package (nil in production,
// so the package skips it without a call).
func (r *Reactor) buggifyHook(s bugSite) func() bool {
	if r.env.Buggify == nil {
		return nil
	}
	return func() bool { return r.buggify(s) }
}

// buggifyDelay is the delay of a late-answer site: up to max, seeded.
func (r *Reactor) buggifyDelay(max time.Duration) time.Duration {
	return time.Duration(r.env.Buggify.Int63n(int64(max))) + time.Millisecond
}

// buggifyHealed reports whether the simulator has healed the cluster
// (Env.BuggifyHealed); always false in production.
func (r *Reactor) buggifyHealed() bool {
	return r.env.BuggifyHealed != nil && r.env.BuggifyHealed()
}

// endLastingBuggify, once the simulator has healed the cluster, gives
// every Raft member the append limits raft-small-messages took away. A
// member made with one entry per append and four in flight keeps them
// for its life, and a long seed's partition then takes longer to copy to
// a new replica than the liveness bounds allow (long seed 4201330 with
// --all-faults: the leader of a 48,000-entry partition, made so 25 s
// before the heal, sent a reassignment's new replica about 1,000 entries
// a second, and the move was not done 30 s after the heal). Members made
// after the heal draw nothing (raftConfig).
func (r *Reactor) endLastingBuggify() {
	if r.buggifyEnded || !r.buggifyHealed() {
		return
	}
	r.buggifyEnded = true
	for _, g := range r.groupIDs() {
		if rep := r.replicaOf(g); rep != nil {
			rep.SetMessageLimits(raftMsgBytesMax, raftInflightMsgMax)
		}
	}
}
