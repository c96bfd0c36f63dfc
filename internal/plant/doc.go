// Package plant holds deliberately planted bugs, used only to prove that
// Floe's checkers can fail.
//
// Product code asks plant.Enabled(name) at the one place a bug would live.
// In a normal build Enabled is a constant false and the compiler removes the
// branch. Built with the tag floe_bugs, tests may switch a named bug on with
// Set and off with Reset; the self-tests in consensus and sim then assert that
// their checkers catch it within a bounded number of seeds.
//
// Known bugs (the name is the contract between product code and tests):
//
//	raft-vote-without-log-check   grant a vote without Raft's up-to-date check
//	raft-commit-prev-term         commit a previous-term entry by counting replicas
//	ack-before-quorum             answer acks=all once the leader appended
//	ack-before-fsync              answer acks=all before the leader's fsync
//	audit-stale-chain-head        an __audit_log leader links new records to the
//	                              head it kept from an earlier term of its own
//	txn-marker-before-decision    a transaction coordinator sends the markers
//	                              before its commit decision is durable
//	txn-lso-ignores-open          the last stable offset is not held back by
//	                              an open transaction
//	txn-fetch-serves-open         a read_committed Fetch reads up to the high
//	                              watermark, open transactions included
//	txn-verify-skipped            a partition leader appends the first
//	                              transactional batch of a producer without
//	                              asking a coordinator on another broker
//	share-ack-before-durable      answer a share fetch or acknowledgement before
//	                              its share-partition state is committed
//	share-in-flight-archived      the persisted share-partition image stores
//	                              acquired records as archived, so a failover
//	                              skips them instead of redelivering them
//	share-dlq-archive-before-copy a share coordinator archives a dead letter as it
//	                              sends the copy, not once the copy is committed
//	share-backoff-not-persisted   the persisted share-partition image drops what
//	                              is left of a record's redelivery backoff, so
//	                              after a failover it is redelivered at once
//	acl-allow-beats-deny          an ALLOW ACL wins over a matching DENY
//	acl-delete-missed-by-follower a broker other than the controller's leader
//	                              does not apply a DeleteAcls
//	no-read-lease                 a leader serves reads with no lease (issue 15)
//	raft-vote-not-persisted       the meta record never holds the Raft vote
//	fetch-past-high-watermark     Fetch reads up to the log end, uncommitted too
//	offset-commit-before-replicated  OffsetCommit answered once appended, not committed
//	idempotence-window-shrunk     a producer's dedup window keeps 1 batch, not 5
//	no-generation-fence           OffsetCommit ignores the member's generation
//	consumer-assign-before-revoke a KIP-848 member is given its whole target
//	                              before other members revoked those partitions
//	downgrade-replaced-hands-target  a downgrade by a classic static member
//	                              replacing the last consumer-protocol member
//	                              hands out targets others may still own
//	balancer-ignores-bound        the balancer proposes every move it finds at
//	                              once, past its bound on moves in flight
//	compact-aborted-shadows       compaction lets a record of an aborted
//	                              transaction shadow older records of its key
//	balancer-load-flaps           the load goal moves with no hysteresis: a
//	                              move that leaves the load gap as it was counts
//	quota-alter-missed-by-follower  a broker other than the controller's
//	                              leader does not apply an AlterClientQuota
//	raft-conf-two-pending         a leader accepts a membership change while
//	                              an earlier one is not applied
//	raft-conf-before-own-term     a new leader accepts a membership change
//	                              before its own term's first entry is applied
//	voter-ack-before-commit       a controller voter change is answered once
//	                              proposed, not once committed and applied
//	lost-disk-fence-off           a broker restarted on a new disk under its
//	                              old id opens its replicas unfenced
package plant

// Bug names.
const (
	VoteWithoutLogCheck   = "raft-vote-without-log-check"
	CommitPrevTerm        = "raft-commit-prev-term"
	AckBeforeQuorum       = "ack-before-quorum"
	AckBeforeFsync        = "ack-before-fsync"
	AuditStaleChainHead   = "audit-stale-chain-head"
	ShareAckBeforeDurable = "share-ack-before-durable"
	ShareInFlightArchived = "share-in-flight-archived"
	// ShareDLQArchiveBeforeCopy: node/share_dlq.go.
	ShareDLQArchiveBeforeCopy = "share-dlq-archive-before-copy"
	// ShareBackoffNotPersisted: node/share/state.go.
	ShareBackoffNotPersisted = "share-backoff-not-persisted"

	TxnMarkerBeforeDecision = "txn-marker-before-decision"
	TxnLSOIgnoresOpen       = "txn-lso-ignores-open"
	TxnFetchServesOpen      = "txn-fetch-serves-open"
	TxnVerifySkipped        = "txn-verify-skipped"
	// TxnEndNoBump: node/txn EndTxnV2 decides without the epoch bump.
	TxnEndNoBump = "txn-end-no-bump"
	// TxnVoidPreviousMarker: node/txn_verify.go voids a transaction
	// version 2 add for the previous transaction's marker (at the add's
	// epoch) and turns any answer of a voided call into INVALID_TXN_STATE
	// (the guard before issue 16's TV2 fix).
	TxnVoidPreviousMarker = "txn-void-previous-marker"
	ACLAllowBeatsDeny     = "acl-allow-beats-deny"
	ACLDeleteMissed       = "acl-delete-missed-by-follower"

	NoReadLease                  = "no-read-lease"
	VoteNotPersisted             = "raft-vote-not-persisted"
	FetchPastHighWatermark       = "fetch-past-high-watermark"
	OffsetCommitBeforeReplicated = "offset-commit-before-replicated"
	IdempotenceWindowShrunk      = "idempotence-window-shrunk"
	NoGenerationFence            = "no-generation-fence"
	// ConsumerAssignBeforeRevoke: node/group/consumer_heartbeat.go.
	ConsumerAssignBeforeRevoke = "consumer-assign-before-revoke"
	// MigrationForgetsClassicAssignment: node/group/migrate.go (a classic
	// group upgraded to a consumer group forgets what its members own).
	MigrationForgetsClassicAssignment = "migration-forgets-classic-assignment"
	// DowngradeReplacedHandsTarget: node/group/migrate.go (a downgrade
	// by a classic static member replacing the last consumer-protocol
	// member hands every member its target, Kafka's way, while others
	// may still own part of it, and does not rebalance).
	DowngradeReplacedHandsTarget = "downgrade-replaced-hands-target"
	// BalancerIgnoresBound: node/balance.go.
	BalancerIgnoresBound = "balancer-ignores-bound"
	// CompactAbortedShadows: logstore/compact.go.
	CompactAbortedShadows = "compact-aborted-shadows"
	// BalancerLoadFlaps: node/controller/balance.go (the load goal moves
	// with no hysteresis: a move that does not shrink the load gap counts).
	BalancerLoadFlaps = "balancer-load-flaps"
	// QuotaAlterMissed: node/controller.go.
	QuotaAlterMissed = "quota-alter-missed-by-follower"
	// ConfTwoPending, ConfBeforeOwnTerm: consensus/confchange.go, raft.go.
	ConfTwoPending    = "raft-conf-two-pending"
	ConfBeforeOwnTerm = "raft-conf-before-own-term"
	// VoterAckBeforeCommit: node/voters.go.
	VoterAckBeforeCommit = "voter-ack-before-commit"
	// LostDiskFenceOff: node/disk.go (a broker whose disk was replaced
	// opens its replicas without the lost-log fence).
	LostDiskFenceOff = "lost-disk-fence-off"
)
