#!/usr/bin/env bash
# Measures durable append against the disk's fsync'd sequential write speed
# in one run and prints medians and ratios as a markdown table for
# docs/benchmarks.md.
#
#   logstore/benchratio.sh [count] [benchtime]     (defaults: 5, 2s)
#
# BenchmarkAppendVsDisk alternates, inside each iteration, one log round
# (appends + Sync) and a plain-file write of the same bytes + fsync, so both
# see the same moments of a noisy shared disk. dd gives a second, coarser
# baseline. Set FLOE_BENCH_DIR to test another file system than $TMPDIR's.
set -euo pipefail
count=${1:-5}
benchtime=${2:-2s}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go test -c -o "$work/logstore.test" ./logstore
"$work/logstore.test" -test.run '^$' -test.bench 'AppendVsDisk|SequentialRead' \
	-test.benchtime "$benchtime" -test.count "$count" >"$work/out"
ddfile=${FLOE_BENCH_DIR:-${TMPDIR:-/tmp}}/floe-dd.$$
dd if=/dev/zero of="$ddfile" bs=1M count=256 conv=fdatasync 2>&1 | tail -1 | sed 's/^/dd bs=1M count=256 conv=fdatasync: /'
rm -f "$ddfile"
grep -m1 '^cpu:' "$work/out" || true
awk '
/^Benchmark/ {
	name = $1; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
	if (!(name in seen)) { seen[name] = 1; order[++n] = name }
	for (i = 2; i < NF; i++) vals[name, $(i+1)] = vals[name, $(i+1)] " " $i
}
function median(s,   a, k, i, j, t) {
	k = split(s, a, " ")
	for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
END {
	print "| benchmark | log MB/s | disk MB/s | log/disk (median) | log/disk (min..max) |"
	print "|---|---|---|---|---|"
	for (i = 1; i <= n; i++) {
		k = order[i]
		if ((k, "log/disk-%") in vals) {
			split(vals[k, "log/disk-%"], r, " "); lo = hi = r[1]
			for (j in r) { if (r[j] + 0 < lo + 0) lo = r[j]; if (r[j] + 0 > hi + 0) hi = r[j] }
			printf "| %s | %.0f | %.0f | %.0f%% | %.0f..%.0f%% |\n", k, median(vals[k, "log-MB/s"]), median(vals[k, "disk-MB/s"]), median(vals[k, "log/disk-%"]), lo, hi
		} else {
			printf "| %s | %.0f (read) | | | |\n", k, median(vals[k, "MB/s"])
		}
	}
}' "$work/out"
