// Package records reads, checks and writes Kafka's v2 record batch, the unit
// Floe receives from producers, stores in its log (one batch per Raft data
// entry) and serves to consumers. batch.go draws the layout.
//
// It is the one copy of the format in the broker: the node checks produced
// batches with it, and logstore reads and rewrites stored batches with it
// (append checks, OffsetForTime, compaction). So it is a leaf package: it
// imports nothing from Floe (TestLeafPackage). sim/batch.go decodes batches
// on its own, on purpose: the simulator's checkers stay an independent
// reading of the format.
//
// It is pure, deterministic core code: no I/O, clock, goroutines or global
// randomness. Decoders are pooled with sync.Pool, which changes no output.
//
// What each part is for:
//
//   - ParseHeader, Header: the fixed 61-byte header and its attribute bits.
//   - Split: cut a produce partition's Records into batches; framing only.
//   - Validate, ValidateWith: everything a client batch must satisfy before
//     it may be appended (see ValidateWith for the rules and their Kafka
//     error codes; ErrorCode maps an error to the code). It decompresses as
//     a stream and walks every record; one small allocation per call.
//   - Verify: framing and CRC only, for batches validated before (read back
//     from disk, received from a peer). ParseBatch: framing only, no CRC
//     (the log's append check).
//   - SetBaseOffset, SetPartitionLeaderEpoch: in place, CRC untouched (it
//     does not cover them). SetLogAppendTime, SetMaxTimestamp: in place,
//     CRC recomputed.
//   - Records: iterate the records of a batch, any codec. Header.Timestamp:
//     a record's timestamp under the batch's timestamp type.
//   - Filter: drop records from a batch, keeping its offsets, timestamps,
//     producer fields, codec and snappy framing (log compaction).
//   - Build: make a batch (tests, control batches, the CLI, compaction).
//   - MarkerRecord, ParseMarker, BuildMarker: transaction markers.
//
// Codecs: gzip, snappy (both the xerial framing Java clients send and the
// raw block other clients send; blocks are decoded strictly, so nothing a
// Kafka client cannot read is accepted), lz4 (frame format) and zstd, via
// github.com/klauspost/compress and github.com/pierrec/lz4/v4. Build writes
// snappy in xerial framing, which every client reads.
//
// Batch bytes passed in are never modified except by the Set functions, and
// are never retained.
package records
