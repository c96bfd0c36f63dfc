package kafka

// ApiVersions (key 18), v0-4, answered by the server itself: it needs
// nothing but the advertised table.
//
// Behaviour:
//   - A request newer than v4 is answered without decoding its body, with a
//     v0 response (error UNSUPPORTED_VERSION, and only ApiVersions' own
//     range, as Kafka does); the client retries with the newest version in
//     it. This is how franz-go (which opens with v5) meets Floe.
//   - v3+: ClientSoftwareName and ClientSoftwareVersion must match
//     [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? or the answer is
//     INVALID_REQUEST with no keys. Valid ones are recorded in ConnInfo.
//   - The response header is v0 whatever the version: never a tag byte
//     (the writer knows; clients parse the header before knowing whether
//     the response is flexible).
//   - v3+ advertises one feature, transaction.version, supported 0-2 and
//     finalized at 2 (epoch 1, as a cluster whose brokers all serve it):
//     clients that know KIP-890 part 2 (franz-go 1.18+, the Java client
//     4.0+) then use its flow (Produce v12 and TxnOffsetCommit v5 add
//     implicitly, EndTxn v5 bumps the epoch; docs/transactions.md).
//     Clients that do not keep the classic flow, which is still served.
//     (It was finalized at 1 for a while: the marker guard voided the
//     next transaction's implicit add when a new coordinator resent the
//     previous transaction's marker, node/txn_verify.go.)
//
// Version notes: v1 adds ThrottleMillis; v3 is flexible and adds the
// client software fields and features; v4 lets SupportedFeatures' minimum
// be 0.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// answerApiVersions builds the response to an ApiVersions request, and
// returns the client software it names when valid ("" otherwise).
func answerApiVersions(req request, t *versionTable) (resp *kmsg.ApiVersionsResponse, name, version string) {
	if req.kreq == nil { // newer than served
		resp = kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: apiVersionsKey, MinVersion: 0, MaxVersion: apiVersionsVersionMax}}
		return resp, "", ""
	}
	r := req.kreq.(*kmsg.ApiVersionsRequest)
	resp = r.ResponseKind().(*kmsg.ApiVersionsResponse)
	if r.Version >= 3 {
		if !validSoftwareField(r.ClientSoftwareName) || !validSoftwareField(r.ClientSoftwareVersion) {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, "", ""
		}
		name, version = r.ClientSoftwareName, r.ClientSoftwareVersion
	}
	resp.ApiKeys = t.apiKeys
	if r.Version >= 3 {
		addTxnVersionFeature(resp)
	}
	return resp, name, version
}

// The transaction.version feature (KIP-890 part 2): the highest level
// Floe serves and the level it finalizes.
const (
	txnVersionFeature   = "transaction.version"
	txnVersionSupported = 2
	txnVersionFinalized = 2
)

// addTxnVersionFeature advertises transaction.version, finalized at
// txnVersionFinalized.
func addTxnVersionFeature(resp *kmsg.ApiVersionsResponse) {
	sf := kmsg.NewApiVersionsResponseSupportedFeature()
	sf.Name, sf.MinVersion, sf.MaxVersion = txnVersionFeature, 0, txnVersionSupported
	if resp.Version < 4 {
		sf.MinVersion = 1 // v3 does not allow a minimum of 0
	}
	ff := kmsg.NewApiVersionsResponseFinalizedFeature()
	ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = txnVersionFeature, txnVersionFinalized, txnVersionFinalized
	resp.SupportedFeatures = []kmsg.ApiVersionsResponseSupportedFeature{sf}
	resp.FinalizedFeatures = []kmsg.ApiVersionsResponseFinalizedFeature{ff}
	resp.FinalizedFeaturesEpoch = 1
}

// validSoftwareField reports whether s matches
// [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?, by hand: it runs on every
// connection.
func validSoftwareField(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
