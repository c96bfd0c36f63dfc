package node

// The Kafka APIs the node serves: one table, keyed by kmsg's API keys, and
// the only place that says which keys are served, at which versions and by
// which handler. Everything else reads it:
//
//   - Versions, which node/runtime hands to the protocol server (node/kafka):
//     it is what ApiVersions advertises, next to the server's own APIs
//     (kafka.ServerAPIs: ApiVersions, SaslHandshake), and what every
//     request's version is checked against before its body is decoded;
//   - HandleRequest, which routes a request to its handler;
//   - the tests that every served API has an expiry answer (expire.go,
//     TestEveryAPIHasAnExpiryAnswer), an authorization case
//     (TestEveryAPIIsAuthorized) and a majority-loss case, and that this
//     table matches the api_*.go files (TestAPITable).
//
// Adding an API: its file node/api_<name>.go (one API per file, its header
// "Name (key N), versions A-B." and why), and one line here. An API the
// protocol server answers itself (ApiVersions, the SASL APIs) is not listed
// here: it is the server's (node/kafka/versions.go).
//
// Why some ranges are what they are (each file says more): Produce starts
// at 0 and includes 3 and 7 because librdkafka (kcat) enables compression,
// idempotence and zstd only when they are in range; Fetch 4 and 10 and
// ListOffsets 1 are librdkafka's; librdkafka also enables lz4 only when
// FindCoordinator v0 is advertised. Versions tied to topic IDs (Fetch 13+,
// Produce 13+) or KIP-890 transactions (Produce 12+, InitProducerId 5+) are
// not served.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// api is one served Kafka API: the versions served and its handler.
// Invariant (TestAPITable): 0 <= min <= max <= what kmsg decodes.
type api struct {
	min, max int16
	serve    handler
}

// apis is the table, indexed by API key; a zero entry is not served.
var apis = [kmsg.MaxKey + 1]api{
	kmsg.Produce:                      {0, 12, serveProduce},
	kmsg.Fetch:                        {4, 12, serveFetch},
	kmsg.ListOffsets:                  {1, 10, serveListOffsets},
	kmsg.Metadata:                     {0, 12, serveMetadata},
	kmsg.OffsetCommit:                 {0, 9, serveOffsetCommit},
	kmsg.OffsetFetch:                  {0, 9, serveOffsetFetch},
	kmsg.FindCoordinator:              {0, 4, serveFindCoordinator},
	kmsg.JoinGroup:                    {0, 9, serveJoinGroup},
	kmsg.Heartbeat:                    {0, 4, serveHeartbeat},
	kmsg.LeaveGroup:                   {0, 5, serveLeaveGroup},
	kmsg.SyncGroup:                    {0, 5, serveSyncGroup},
	kmsg.DescribeGroups:               {0, 5, serveDescribeGroups},
	kmsg.ListGroups:                   {0, 5, serveListGroups},
	kmsg.CreateTopics:                 {0, 7, serveCreateTopics},
	kmsg.DeleteTopics:                 {0, 6, serveDeleteTopics},
	kmsg.DeleteRecords:                {0, 2, serveDeleteRecords},
	kmsg.InitProducerID:               {0, 4, serveInitProducerID},
	kmsg.OffsetForLeaderEpoch:         {0, 4, serveOffsetForLeaderEpoch},
	kmsg.DescribeACLs:                 {0, 3, serveDescribeACLs},
	kmsg.CreateACLs:                   {0, 3, serveCreateACLs},
	kmsg.DeleteACLs:                   {0, 3, serveDeleteACLs},
	kmsg.DescribeConfigs:              {0, 4, serveDescribeConfigs},
	kmsg.AlterConfigs:                 {0, 2, serveAlterConfigs},
	kmsg.CreatePartitions:             {0, 3, serveCreatePartitions},
	kmsg.DeleteGroups:                 {0, 2, serveDeleteGroups},
	kmsg.IncrementalAlterConfigs:      {0, 1, serveIncrementalAlterConfigs},
	kmsg.AlterPartitionAssignments:    {0, 0, serveAlterPartitionReassignments},
	kmsg.ListPartitionReassignments:   {0, 0, serveListPartitionReassignments},
	kmsg.OffsetDelete:                 {0, 0, serveOffsetDelete},
	kmsg.DescribeUserSCRAMCredentials: {0, 0, serveDescribeUserScramCredentials},
	kmsg.AlterUserSCRAMCredentials:    {0, 0, serveAlterUserScramCredentials},
	kmsg.DescribeClientQuotas:         {0, 1, serveDescribeClientQuotas},
	kmsg.AlterClientQuotas:            {0, 1, serveAlterClientQuotas},
	kmsg.DescribeCluster:              {0, 1, serveDescribeCluster},
	kmsg.UnregisterBroker:             {0, 0, serveUnregisterBroker},
	kmsg.DescribeQuorum:               {0, 2, serveDescribeQuorum},
	kmsg.AddRaftVoter:                 {0, 1, serveAddRaftVoter},
	kmsg.RemoveRaftVoter:              {0, 0, serveRemoveRaftVoter},
	kmsg.AddPartitionsToTxn:           {0, 4, serveAddPartitionsToTxn},
	kmsg.AddOffsetsToTxn:              {0, 3, serveAddOffsetsToTxn},
	kmsg.EndTxn:                       {0, 5, serveEndTxn},
	kmsg.WriteTxnMarkers:              {0, 1, serveWriteTxnMarkers},
	kmsg.TxnOffsetCommit:              {0, 5, serveTxnOffsetCommit},
	kmsg.DescribeTransactions:         {0, 0, serveDescribeTransactions},
	kmsg.ListTransactions:             {0, 1, serveListTransactions},
	kmsg.DescribeProducers:            {0, 0, serveDescribeProducers},
	kmsg.ShareGroupHeartbeat:          {0, 1, serveShareGroupHeartbeat},
	kmsg.ShareGroupDescribe:           {0, 1, serveShareGroupDescribe},
	kmsg.ShareFetch:                   {0, 2, serveShareFetch},
	kmsg.ShareAcknowledge:             {0, 2, serveShareAcknowledge},
	kmsg.DescribeShareGroupOffsets:    {0, 1, serveDescribeShareGroupOffsets},
	kmsg.AlterShareGroupOffsets:       {0, 0, serveAlterShareGroupOffsets},
	kmsg.DeleteShareGroupOffsets:      {0, 0, serveDeleteShareGroupOffsets},
	kmsg.ConsumerGroupHeartbeat:       {0, 1, serveConsumerGroupHeartbeat},
	kmsg.ConsumerGroupDescribe:        {0, 1, serveConsumerGroupDescribe},
	kmsg.GetTelemetrySubscriptions:    {0, 0, serveGetTelemetrySubscriptions},
	kmsg.PushTelemetry:                {0, 0, servePushTelemetry},
	kmsg.DescribeLogDirs:              {0, 4, serveDescribeLogDirs},
	kmsg.ElectLeaders:                 {0, 2, serveElectLeaders},
	kmsg.DescribeTopicPartitions:      {0, 0, serveDescribeTopicPartitions},
}

// apiFor returns key's entry; its serve is nil when key is not served.
func apiFor(key int16) api {
	if key < 0 || int(key) >= len(apis) {
		return api{}
	}
	return apis[key]
}

// Versions returns the served version ranges, in key order. It does not
// list the protocol server's own APIs (kafka.ServerAPIs).
func Versions() []APIRange {
	var out []APIRange
	for key, a := range apis {
		if a.serve != nil {
			out = append(out, APIRange{Key: int16(key), Min: a.min, Max: a.max})
		}
	}
	return out
}
