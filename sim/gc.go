package sim

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// SimGCPercent is the garbage collector's target the simulator runs with
// (UseSimGC): a default seed's live heap is small (tens of MB) and it
// allocates fast, so collecting at 4x the live heap instead of 2x takes
// about a quarter less CPU per seed (docs/testing.md, Cost per seed) for
// about 20 MB more resident memory per seed in flight. The collector never
// changes a trace.
const SimGCPercent = 400

// SimMemoryShare is the share of the machine's memory the simulator's heap
// may take before the collector works harder than SimGCPercent asks. A
// long seed's live heap is not small: it keeps every fetched record for
// the checkers, about 1.5 GB at the end of seed 3500029 `--long
// --all-faults` (8 simulated minutes, 5 million events). At 4x that, two
// such seeds in flight took 24 GB and the kernel killed the campaign
// (2026-12-04). A soft limit keeps the cheap target while the heap is
// small and bounds it when it is not.
const SimMemoryShare = 0.5

// UseSimGC sets the collector's target to SimGCPercent unless the GOGC
// environment variable chose one, and a soft memory limit of
// SimMemoryShare of the machine's memory unless GOMEMLIMIT chose one (none
// where the machine's memory is unknown).
func UseSimGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(SimGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if limit := simMemoryLimitBytes(); limit > 0 {
			debug.SetMemoryLimit(limit)
		}
	}
}

// simMemoryLimitBytes is SimMemoryShare of the machine's memory, 0 where
// /proc/meminfo does not say.
func simMemoryLimitBytes() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return int64(float64(memTotalBytes(string(b))) * SimMemoryShare)
}

// memTotalBytes reads the MemTotal line of a /proc/meminfo text
// ("MemTotal:       24576000 kB"); 0 if there is none or it does not parse.
func memTotalBytes(meminfo string) int64 {
	for _, line := range strings.Split(meminfo, "\n") {
		rest, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || kb <= 0 {
			return 0
		}
		return kb * 1024
	}
	return 0
}
