// Package wire is a tiny binary encoder for Floe's internal records
// (snapshots, checkpoints, node-to-node messages): varints, fixed-width
// integers and length-prefixed bytes, with a Reader that records the first
// error instead of panicking, so malformed input is an error, never a crash.
package wire
