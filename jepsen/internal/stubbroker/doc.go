// Command stubbroker is a stand-in for floe in the Docker suite's own
// tests: franz-go's kfake (an in-memory Kafka) behind floe's command line.
// It also answers `probe host:port` (can this container reach that
// address?) for the partition tests. It lets the harness's plumbing (image, containers, nemeses, workload,
// history, checkers, plot) run end to end before Floe's cluster mode
// exists. It is not replicated: every node is its own one-broker cluster,
// so use it with one node. Without --sync it acknowledges before fsync,
// so kill -9 loses acknowledged writes: a run under kill must report
// lost writes, which is what makes it a useful self-test of the suite.
package main
