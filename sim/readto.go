package sim

import "github.com/floe-broker/floe/netx"

// readStep is what a read of a partition to its high watermark does after
// one fetch's answer.
type readStep int

const (
	readOn    readStep = iota // go on at the answer's next offset
	readAgain                 // ask again at the same offset after a backoff, keeping what was read
	readOver                  // start over from offset 0, dropping what was read
	readDone                  // the high watermark is reached
)

// nextReadStep is the rule the simulator's final reads share (the plain
// workload's finalReadWith, simtxc's readAll and simtxn's finishTxnWith):
// a read asked at off got an answer (ok: no error) from the broker
// answered, whose next offset to read is next and whose high watermark is
// hw; src is the broker the read so far came from (0: none yet), and open
// says the answer shows a transaction still open (its last stable offset
// below the high watermark, for a read_committed read that must wait).
//
// A failed fetch is retried at the offset reached, and so is an empty
// answer below the high watermark (BUGGIFY's fetch-empty, a wait that ended
// first): what was read is kept. Only an answer from another broker than
// the read's (a log is read from one replica, never stitched from two), or
// an open transaction, starts the read over from offset 0. (Starting over
// on every error could not finish a long seed's log: seeds 3500098 and
// 3800026, where BUGGIFY fails some 2-5% of fetches.)
func nextReadStep(off int64, ok bool, answered, src netx.NodeID, open bool, next, hw int64) readStep {
	switch {
	case !ok:
		return readAgain
	case off > 0 && answered != src, open:
		return readOver
	case next >= hw:
		return readDone
	case next <= off:
		return readAgain
	}
	return readOn
}
