// Package itest runs real Kafka clients (franz-go, sarama, kcat) against
// real `floe serve` processes.
//
// The harness (harness.go) is the reusable part: Build compiles the floe
// binary once per test binary, StartBroker starts one `floe serve` on free
// local ports with a temporary data directory and stops it when the test
// ends, and Broker.Kill, Stop and Restart crash, stop and restart it on the
// same data and addresses. StartCluster starts N brokers as one Raft
// cluster with the same API.
//
// The tests (*_test.go) cover issue 5's "Done when" list: every codec with
// every client (clients_test.go), idempotent retries through a proxy that
// drops responses (idempotence_test.go), the admin API (admin_test.go),
// ListOffsets by time (list_offsets_test.go), kill -9 during acks=all
// produces (crash_test.go), bad input on raw connections
// (bad_input_test.go), the README's client instructions as printed
// (readme_test.go), and producing through a staggered cluster restart with
// /readyz's meaning (restart_test.go); with the floe_bugs tag (make planted),
// planted_test.go shows the crash checks catch a planted lost-write bug.
// docs/testing.md says how to run them and what each proves.
// FLOE_ITEST_LONG=1 turns on the heavier variants.
//
// Nothing here asserts a speed: every wait is bounded so a hang fails the
// test instead of stalling it, and the bounds are generous for a noisy
// two-core machine.
package itest
