// Package share is the deterministic core of KIP-932 share groups (queues):
// the share-partition state machine and the share group's membership.
//
// A Partition tracks, for one share group on one topic partition, which
// records the group has finished with and which are in flight:
//
//   - Start (Kafka's SPSO): every offset below it is finished (accepted or
//     archived) and never delivered again.
//   - End (SPEO): the first offset never acquired. Offsets in [Start, End)
//     are in flight, each Available, Acquired (by one member, with a lock
//     that expires), Acknowledged or Archived, with a delivery count.
//
// Acquire hands Available records (released or expired ones first, then
// new ones up to the log's readable end) to a member and bumps their
// delivery counts; Acknowledge accepts, releases, rejects or renews them.
// A record whose lock expired, or that was released, becomes Available
// again unless its delivery count reached the limit, in which case it is
// Archived.
//
// Dead letters (Floe's, after KIP-1191): with Config.DeadLetter, a
// rejected record, or one that reaches the delivery limit, becomes
// DeadLettering instead of Archived: persisted, never acquired, holding
// Start. The node copies it to the group's dead-letter topic
// (NextDeadLetter), and only once the copy is committed archives it
// (DeadLettered), so a failover between the two re-sends the copy rather
// than losing it. The copies are written under an idempotent producer
// (Producer) kept in the persisted image with the next sequence, so a
// re-sent copy is a duplicate the dead-letter partition drops.
//
// Time comes in as an argument (the node's monotonic clock), so
// the machine is a pure function of its calls.
//
// Invariants (checked by the property test against a naive model):
//   - a record is held by at most one member while its lock is valid;
//   - an acknowledged or archived record is never handed out again;
//   - delivery counts never go down;
//   - Start only moves forward, and End - Start <= Config.MaxInFlight.
//
// Durability: State is the persistent image (Acquired is stored as
// Available with its delivery count, so after a failover records in
// flight are redelivered, never skipped). The node writes it through Raft
// after every change and answers only once it is committed; Restore
// rebuilds a Partition from it. A record backing off (Config.Backoff) is
// stored with the rest of its delay (Batch.WaitMs), which Restore starts
// again, so a failover does not cut a backoff short. With Config.Settle a
// released record's backoff is not drawn at once: the record waits
// unsettled (never acquired, persisted as such) until the node, knowing
// its config current, calls Settle (node/share_backoff.go). EncodeKey/EncodeState are the record
// formats (see node/shares.go for where they are stored).
//
// Group is a share group's membership: members join with a client-chosen
// id, heartbeat, leave or time out; assignment is server side and every
// member subscribed to a topic is given every partition of it (share
// groups allow many consumers per partition).
package share
