// Package ui is the broker's management web UI, served by the admin HTTP
// server at / (node/runtime/admin.go mounts it).
//
// The UI holds no privileged path into the broker: every page is built
// from Kafka requests (franz-go's kgo and kadm) sent to one of the broker's
// own Kafka listeners, exactly as an external console would send them.
// When that listener uses SASL, the login form's user name and password are
// the SASL credentials (PLAIN or SCRAM) of the Kafka client each request
// of that session builds, so the broker's ACLs apply to the UI unchanged:
// a page an ACL denies answers 403 with the broker's error.
//
// One exception, read-only: the Raft health page shows the serving
// broker's own Raft replicas (Config.RaftLocal, node.Reactor.RaftHealth:
// role, log range, fences), which no Kafka API carries. It reads them only
// after the broker has answered the session's DescribeLogDirs, i.e.
// granted it DESCRIBE on the cluster, and labels them as local to that
// broker. Every partition's members' lag comes through the Kafka API:
// DescribeQuorum, asked of each leader broker (raft_members.go).
//
// Sessions are a random cookie (HttpOnly, SameSite=Strict, Secure over
// HTTPS) that expires after an idle time and an absolute lifetime; the
// password lives only in the session's memory. Every state-changing
// request (POST) carries the session's CSRF token, checked in constant
// time; a request without it is refused with 403 before any Kafka work.
//
// A Kafka client is built per HTTP request and closed at its end: an
// admin UI makes few requests, and nothing outlives the request, so the
// handler needs no shutdown. The consumer-lag chart comes from a small
// in-memory ring of samples per (user, group), taken when a group page or
// its JSON endpoint is read; no background sampler runs.
//
// Pages are server-rendered html/template with a little plain JavaScript
// (the group page's refresh), charts are inline SVG, and every asset is
// embedded with go:embed: no CDN, no build step.
//
// This is runtime code: it may use goroutines, the OS clock, sockets.
package ui
