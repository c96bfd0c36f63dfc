// Package audit is the format of Floe's audit log and its hash chain.
//
// Every audited event (an authentication, an authorization decision, a
// change to cluster state) becomes one Record: an OCSF-shaped JSON
// document (OCSF 1.0 classes 3002 Authentication and 6003 API Activity)
// with the event's time, principal, client address, listener, action,
// resource, outcome and reason, and Floe's own fields under
// "unmapped.floe". Records are the values of the internal topic
// __audit_log.
//
// The chain: each record carries, in unmapped.floe.prev_sha256, the
// SHA-256 of the value of the record before it in its partition (hex; 64
// zeros for a partition's first record). A record changed, removed,
// inserted or reordered after it was written breaks the chain at the next
// record, which Verifier reports. The hash covers the whole value,
// prev_sha256 included, so rewriting one record means rewriting every
// record after it; Verifier.Heads gives the last hash of each partition for
// an operator to keep elsewhere (what a chain alone cannot prove is that its
// tail was not cut off, or rewritten whole).
//
// Pure and deterministic: the broker supplies times and identities.
package audit
