// Package kadmin builds the admin requests Floe's own clients send, the
// CLI (cmd/floe) and the web UI (node/runtime/ui), for roles, ACLs and SCRAM
// users, and reads the broker's answers to them: one copy, so that the two
// clients cannot drift apart on what they ask the broker.
//
// It wires requests and checks answers only. Validating what a user typed,
// and wording the errors for a terminal or a page, stay with each client: a
// code the broker answered comes back as a *Refused, which carries the
// code's error and the broker's message for the client to word.
package kadmin
