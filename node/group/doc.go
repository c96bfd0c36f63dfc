// Package group is Floe's consumer group coordinator as a pure state
// machine: Kafka's classic group protocol (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup), committed offsets (OffsetCommit, OffsetFetch, OffsetDelete)
// and the group admin APIs (ListGroups, DescribeGroups, DeleteGroups).
//
// One Coordinator serves the groups of one partition of the internal topic
// __consumer_offsets (PartitionFor says which). The node creates it when its
// replica of that partition becomes a ready leader, replays the partition's
// committed records into it (Replay, then Start), and drops it (Close) when
// leadership is lost. Everything the coordinator must make durable — each
// offset commit, each generation's membership and assignment, deletions —
// goes through Env.Log as records in Kafka's own formats
// (kmsg.OffsetCommitKey/Value, kmsg.GroupMetadataKey/Value; a nil value is a
// tombstone), and is answered only once the log says it committed.
//
// It is deterministic core code: time is passed in (now, a monotonic
// duration), timeouts are scheduled through Env.Timers, randomness (member
// ids) comes from Env.Rand, and no map order reaches an output. Every method
// must be called on the owner's single thread. Requests and responses are
// kmsg types; the node's api_*.go files route them here.
//
// The rebalance follows Apache Kafka's GroupCoordinator, file by file:
//
//   - join.go: JoinGroup — new, pending (KIP-394) and static (KIP-345)
//     members, protocol checks, rejoin rules per state.
//   - rebalance.go: PreparingRebalance → CompletingRebalance → Stable, the
//     delayed initial rebalance, leader election among joined members,
//     protocol selection, and the pending-sync timeout.
//   - sync.go: SyncGroup and Heartbeat.
//   - leave.go: LeaveGroup (batched, by member or instance id) and session
//     expiry.
//   - offsets.go: OffsetCommit (generation and member checks), OffsetFetch
//     (requireStable), OffsetDelete.
//   - admin.go: ListGroups, DescribeGroups, DeleteGroups, lag inputs.
//   - records.go: the __consumer_offsets record formats and Replay.
//
// KIP-848 consumer groups live beside the classic ones (a group is one or
// the other):
//
//   - consumer.go: the group and member state, reconciliation.
//   - consumer_heartbeat.go: ConsumerGroupHeartbeat, fencing, timers.
//   - assign.go: the uniform and range server-side assignors.
//   - consumer_records.go: the group's durable image.
//   - consumer_describe.go: ConsumerGroupDescribe.
//   - migrate.go: online migration between the two protocols (classic
//     members inside a consumer group, upgrade and downgrade).
//
// What the broker does not do: offsets never expire
// (offsets.retention.minutes is not applied). See docs/consumer-groups.md.
package group
