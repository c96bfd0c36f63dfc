// Package runtime runs a node.Reactor in production: one goroutine owns the
// reactor and runs its events in order; the Kafka protocol server, the
// peer transport and timers post events to it; an fsync worker group-commits
// the logs' syncs and posts their completions back; an HTTP endpoint serves
// metrics and health.
//
// Security (security.go, tls.go, oauth.go): one Kafka protocol server per
// listener (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), TLS certificates and
// the OAuth key set reloaded from their files when they change, SCRAM
// credentials looked up in the reactor's applied metadata, the peer
// transport over mutual TLS, and the admin endpoint over HTTPS.
//
// This is runtime code: it may use goroutines, channels, the OS clock,
// sockets and files. The determinism lint does not cover it, and nothing in
// it decides anything a Raft group or a partition depends on.
package runtime
