// Package txn is Floe's transaction coordinator as a pure state machine:
// Kafka's transactional ids, their producer id and epoch, and the state of
// each one's current transaction (InitProducerId, AddPartitionsToTxn,
// AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions).
//
// One Coordinator serves the transactional ids of one partition of the
// internal topic __transaction_state (PartitionFor says which, with the same
// hash as Kafka and as consumer groups). The node creates it when its
// replica of that partition becomes a ready leader, replays the partition's
// committed records into it (Replay, then Start) and drops it (Close) when
// leadership is lost — the way node/group is hosted on __consumer_offsets.
//
// The state machine (Kafka's TransactionState):
//
//	Empty ──AddPartitions──▶ Ongoing ──EndTxn(commit)──▶ PrepareCommit ──markers──▶ CompleteCommit
//	  ▲                        │  └──EndTxn(abort), timeout,──▶ PrepareAbort ──markers──▶ CompleteAbort
//	  │                        │      InitProducerId (fence)
//	  └──InitProducerId────────┴── from Empty, CompleteCommit, CompleteAbort
//
// Every transition is written to Env.Log (a TxnMetadataKey/Value record,
// Kafka's format) and takes effect only once the log says it committed;
// while a write of a transactional id is in flight, other requests for it
// get CONCURRENT_TRANSACTIONS. The decision is durable before any marker:
// the markers of a transaction (Env.Markers) are sent only after its
// PrepareCommit or PrepareAbort record committed, and the Complete record
// is written only after every marker was acknowledged. A coordinator that
// loads a PrepareCommit or PrepareAbort (failover, restart) sends the
// markers again, so a decided transaction always completes; markers are
// idempotent on the partitions.
//
// Fencing: InitProducerId bumps the epoch (a new producer id once the
// epoch is exhausted); an Ongoing transaction is then aborted at the bumped
// epoch, so the markers fence the old producer on every partition. A
// transaction older than its timeout (transaction.timeout.ms as the
// producer asked, capped by Config.MaxTimeout) is aborted the same way.
//
// It is deterministic core code: time is passed in (a monotonic duration),
// timeouts are scheduled through Env.Timers, new producer ids come from
// Env.ProducerIDs, and no map order reaches an output. Every method must be
// called on the owner's single thread.
//
// Transaction version 2 (KIP-890 part 2): EndTxnV2 bumps the epoch with
// every decision; the implicit adds are AddPartitions called by partition
// leaders (node/txn_verify.go).
//
// Not done: transactional id expiry
// (transactional.id.expiration.ms) and the Dead state, KIP-360 recovery of
// a producer whose answer to a bump was lost (it is fenced instead).
package txn
