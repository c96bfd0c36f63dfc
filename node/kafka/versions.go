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

// ServerAPIs are the APIs the server answers itself, whatever the handler
// serves: ApiVersions (18_api_versions.go), and the SASL APIs
// SaslHandshake and SaslAuthenticate (auth.go; on a listener without SASL
// the handshake is refused, probe.go). The handler's APIs come in
// Config.Versions; Floe's node lists them in one table (node/apis.go). An
// API the server answers is added here, in key order.
func ServerAPIs() []ApiRange {
	return []ApiRange{
		{Key: saslHandshakeKey, MinVersion: 0, MaxVersion: saslHandshakeVersionMax},
		{Key: apiVersionsKey, MinVersion: 0, MaxVersion: apiVersionsVersionMax},
		{Key: saslAuthenticateKey, MinVersion: 0, MaxVersion: saslAuthenticateVersionMax},
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
	for _, r := range ServerAPIs() {
		t.byKey[r.Key] = versionRange{min: r.MinVersion, max: r.MaxVersion, advertised: true}
	}
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
