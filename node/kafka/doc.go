// Package kafka is Floe's Kafka protocol server: it owns the client
// sockets and turns bytes into kmsg requests for a Handler, and the
// Handler's kmsg responses back into bytes, using
// github.com/twmb/franz-go/pkg/kmsg for the codec. It implements no Kafka
// API itself except ApiVersions (18_api_versions.go) and, for a handler
// without SASL, SaslHandshake's refusal (probe.go): ServerAPIs lists them.
// The node implements the rest behind Handler, at the versions
// Config.Versions gives (node.Versions, the node's one table).
//
// Per connection (conn.go) a reader goroutine reads frames, checks each
// size prefix against MaxRequestBytes, checks the API key and version
// against the advertised table before decoding (decode.go), and calls the
// Handler in arrival order; a writer goroutine writes responses strictly
// in request order, however the Handler orders its respond calls, batching
// them in a bufio.Writer and flushing when no ready response is left.
// Several requests may be in flight per connection (idempotent producers
// keep five); at MaxInFlightPerConn the reader stops reading.
//
// The ordering itself is InOrder (inorder.go), a type with no goroutines,
// locks or clocks: a slot is reserved per request in arrival order (at
// most MaxInFlightPerConn), filled in any order as the Handler responds,
// and released only as the filled prefix. conn.go calls it under its
// mutex; the simulator's pipelined connections (sim/pipeconn.go) call the
// same type, so the seeds test production's ordering, and the mutation
// response-released-out-of-order (scripts/mutate) checks that they do.
//
// Bad input never crashes the server: a frame that cannot be served
// (size prefix out of range, unknown key, unsupported version, undecodable
// header or body) closes that connection, as Kafka does; ApiVersions newer
// than served is answered so the client can retry lower. A panic in a
// connection's goroutines (the Handler runs on the reader) is recovered,
// logged and counted, and closes that connection only.
//
// A server is one listener (Config.Listener). With Config.TLS its
// connections are TLS (the handshake first, bounded; a client certificate
// may become the principal); with Config.SASL they must authenticate
// before anything but ApiVersions and the SASL APIs, which the server
// answers itself (auth.go, mechanisms in node/sasl). ConnInfo carries the
// listener and the principal to the Handler.
//
// This is runtime code (goroutines, sockets, the wall clock), outside the
// deterministic core; see internal/lint/core.go.
package kafka
