package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiRange is one advertised API: its key and the versions served.
type ApiRange struct {
	Key        int16
	MinVersion int16
	MaxVersion int16
}

// The server answers ApiVersions itself, at these versions. v4 differs
// from v3 only in what SupportedFeatures may hold (Floe sends none); v5
// (cluster and node IDs in the request) is not served, so a client opening
// with v5, as franz-go does, gets the v0 UNSUPPORTED_VERSION answer and
// retries with v4.
const (
	apiVersionsKey        = 18
	apiVersionsVersionMax = 4
)

// DefaultVersions is the table Floe's node is meant to advertise once every
// listed API has its handler; the node passes the table of what it
// actually implements in Config.Versions. Why each range (see
// docs kafka-notes.md):
//
//   - Produce 0-11: minimum 0 because librdkafka up to 2.11 (kcat)
//     compresses only when Produce 0 is in range (librdkafka issue 4956,
//     KAFKA-18659); as Kafka 4 does, the handler answers v0-2 (message
//     format v0/v1) with UNSUPPORTED_VERSION.
//     3 and 7 must be in range for librdkafka's idempotence and zstd. v12
//     is tied to KIP-890 transactions (transaction.version 2, which Floe
//     does not advertise), v13 to topic IDs.
//   - Fetch 4-12: 4 and 10 for librdkafka (10 enables zstd consumption);
//     9+ carries leader epochs, so OffsetForLeaderEpoch is listed too and
//     the node must answer both correctly (epoch = Raft term). v13 uses
//     topic IDs.
//   - ListOffsets 1-6 (librdkafka needs 1; v7 adds max-timestamp lookup).
//   - Metadata 0-12 (v10+ carry topic IDs, which may be zero; v13 is KIP-1102).
//   - CreateTopics 0-7, DeleteTopics 0-5 (v6 may name topics by ID only),
//     CreatePartitions 0-3, DescribeConfigs 0-4, AlterConfigs 0-2,
//     IncrementalAlterConfigs 0-1, DeleteRecords 0-2.
//   - InitProducerId 0-4 (librdkafka needs 0; v3+ may ask to bump an
//     existing producer's epoch, KIP-360; v5+ is KIP-890).
//   - OffsetForLeaderEpoch 0-4.
//   - ApiVersions 0-4, answered by the server whatever the table says.
//
// Group APIs are not listed here (the node advertises what it serves).
// The SASL APIs (17, 36) are the server's own, like ApiVersions, and are
// always in the table (auth.go). Beware: librdkafka also enables lz4
// only when FindCoordinator v0 is advertised (its feature map takes it as
// "broker >= 0.8.2"); until FindCoordinator is served, kcat sends batches
// it was asked to lz4-compress uncompressed (TestKcat shows both ways).
func DefaultVersions() []ApiRange {
	return []ApiRange{
		{Key: 0, MinVersion: 0, MaxVersion: 11}, // Produce
		{Key: 1, MinVersion: 4, MaxVersion: 12}, // Fetch
		{Key: 2, MinVersion: 1, MaxVersion: 6},  // ListOffsets
		{Key: 3, MinVersion: 0, MaxVersion: 12}, // Metadata
		{Key: 18, MinVersion: 0, MaxVersion: 4}, // ApiVersions
		{Key: 19, MinVersion: 0, MaxVersion: 7}, // CreateTopics
		{Key: 20, MinVersion: 0, MaxVersion: 5}, // DeleteTopics
		{Key: 21, MinVersion: 0, MaxVersion: 2}, // DeleteRecords
		{Key: 22, MinVersion: 0, MaxVersion: 4}, // InitProducerId
		{Key: 23, MinVersion: 0, MaxVersion: 4}, // OffsetForLeaderEpoch
		{Key: 32, MinVersion: 0, MaxVersion: 4}, // DescribeConfigs
		{Key: 33, MinVersion: 0, MaxVersion: 2}, // AlterConfigs
		{Key: 37, MinVersion: 0, MaxVersion: 3}, // CreatePartitions
		{Key: 44, MinVersion: 0, MaxVersion: 1}, // IncrementalAlterConfigs
	}
}

// versionRange is one key's entry in a versionTable.
type versionRange struct {
	min, max   int16
	advertised bool
}

// versionTable is the advertised table, checked on every request before
// the body is decoded: kmsg decodes any version by "version >= N" tests, so
// a version above what was advertised would be silently misparsed.
type versionTable struct {
	byKey [kmsg.MaxKey + 1]versionRange
	// apiKeys is the ApiVersions response's list, in key order. It is
	// shared by every response and never modified.
	apiKeys []kmsg.ApiVersionsResponseApiKey
}

// newVersionTable builds the table from ranges, dropping what cannot be
// served: keys kmsg does not know, inverted or negative ranges (a problem
// each), and clamping maxima to what kmsg can decode. Keys 18, 17 and 36
// (ApiVersions and the SASL APIs, auth.go) are always the server's own
// ranges. A key listed twice keeps its last entry.
func newVersionTable(ranges []ApiRange) (*versionTable, []string) {
	t := new(versionTable)
	var problems []string
	for _, r := range ranges {
		req := kmsg.RequestForKey(r.Key)
		switch {
		case req == nil:
			problems = append(problems, fmt.Sprintf("api key %d is unknown: not advertised", r.Key))
			continue
		case r.MinVersion < 0 || r.MaxVersion < r.MinVersion:
			problems = append(problems, fmt.Sprintf("%s: bad range %d-%d: not advertised", kmsg.NameForKey(r.Key), r.MinVersion, r.MaxVersion))
			continue
		case r.MinVersion > req.MaxVersion():
			problems = append(problems, fmt.Sprintf("%s: v%d is beyond this build's decoder: not advertised", kmsg.NameForKey(r.Key), r.MinVersion))
			continue
		case r.MaxVersion > req.MaxVersion():
			problems = append(problems, fmt.Sprintf("%s: max v%d clamped to v%d, the decoder's limit", kmsg.NameForKey(r.Key), r.MaxVersion, req.MaxVersion()))
			r.MaxVersion = req.MaxVersion()
		}
		t.byKey[r.Key] = versionRange{min: r.MinVersion, max: r.MaxVersion, advertised: true}
	}
	t.byKey[apiVersionsKey] = versionRange{min: 0, max: apiVersionsVersionMax, advertised: true}
	t.byKey[saslHandshakeKey] = versionRange{min: 0, max: saslHandshakeVersionMax, advertised: true}
	t.byKey[saslAuthenticateKey] = versionRange{min: 0, max: saslAuthenticateVersionMax, advertised: true}
	for key, r := range t.byKey {
		if r.advertised {
			t.apiKeys = append(t.apiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: int16(key), MinVersion: r.min, MaxVersion: r.max})
		}
	}
	return t, problems
}

// lookup returns key's range, or advertised=false for a key that is not in
// the table (including keys kmsg does not know).
func (t *versionTable) lookup(key int16) versionRange {
	if key < 0 || int(key) >= len(t.byKey) {
		return versionRange{}
	}
	return t.byKey[key]
}
