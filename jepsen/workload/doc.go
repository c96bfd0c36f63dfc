// Package workload is the Docker suite's client side: franz-go clients on
// the host that drive a cluster through its published loopback addresses
// and record every operation in a history.Recorder.
//
//   - producers write unique values, one record per operation, to a chosen
//     partition, with acks=all and idempotence (franz-go's defaults); an
//     error or timeout is recorded as info, and the producer goes on with a
//     fresh client under a new process id;
//   - consumers in groups poll and commit the offsets they polled (eager
//     rebalancing, auto-commit off); every assignment change is recorded;
//   - an offset reader per group fetches the group's committed offsets;
//   - fetchers send direct Fetch requests to partition leaders, recording
//     the records and the high watermark of one response (the operations
//     the linearizability checker reads);
//   - after healing, consumers drain to the end offsets and a final read
//     fetches every partition from offset 0 to its high watermark.
//   - with Config.TxnProducers, the transactional workload (txn.go):
//     transactional producers over several partitions of their own topic
//     (commits and aborts, read_committed reads inside transactions), a
//     read_committed and a read_uncommitted reader, and a final
//     read_committed read once every last stable offset reaches its high
//     watermark.
//
// Harness code: it uses real time and goroutines, and is not part of the
// deterministic core.
package workload
