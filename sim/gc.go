package sim

import (
	"os"
	"runtime/debug"
)

// SimGCPercent is the garbage collector's target the simulator runs with
// (UseSimGC): a seed's live heap is small (tens of MB) and it allocates
// fast, so collecting at 4x the live heap instead of 2x takes about a
// quarter less CPU per seed (docs/testing.md, Cost per seed) for about
// 20 MB more resident memory per seed in flight. The collector never
// changes a trace.
const SimGCPercent = 400

// UseSimGC sets the collector's target to SimGCPercent unless the GOGC
// environment variable chose one.
func UseSimGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(SimGCPercent)
	}
}
