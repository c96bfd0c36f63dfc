#!/usr/bin/env bash
# scripts/bench/rr.sh: `make bench-rr` (issue 18). Request/reply round
# trips (`floe bench rr`, package reqreply) against one `floe serve` on
# this machine: the at-least-once responder, then the transactional one
# (read_committed requester), at each concurrency level. Prints the two
# tables and the load average before and after; docs/benchmarks.md
# ("Request/reply round trip") holds a run.
#
# Knobs (environment):
#   RR_CONCURRENCY=1,4,16  requests in flight, one run each
#   RR_DURATION=10s RR_WARMUP=2s   per level
#   RR_FLOE=path           run this floe binary (not built) instead of bin/floe
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
WORK=$(mktemp -d /tmp/floe-rr.XXXXXX)
FLOE=${RR_FLOE:-$ROOT/bin/floe}
ADDR=127.0.0.1:39492
PID=
stop() { [[ -n $PID ]] && kill "$PID" 2>/dev/null || true; wait 2>/dev/null || true; }
trap stop EXIT
trap 'exit 130' INT TERM

[[ -n ${RR_FLOE:-} ]] || go build -o "$FLOE" ./cmd/floe
if (exec 3<>"/dev/tcp/${ADDR%:*}/${ADDR##*:}") 2>/dev/null; then
	echo "port ${ADDR##*:} is in use (someone else's server?): stopping" >&2
	exit 1
fi
"$FLOE" serve --log-level warn --data-dir "$WORK/data" --kafka-addr "$ADDR" --admin-addr 127.0.0.1:39494 >"$WORK/serve.log" 2>&1 &
PID=$!
for _ in $(seq 100); do
	(exec 3<>"/dev/tcp/${ADDR%:*}/${ADDR##*:}") 2>/dev/null && break
	sleep 0.1
done

flags=(--brokers "$ADDR" --concurrency "${RR_CONCURRENCY:-1,4,16}" --duration "${RR_DURATION:-10s}" --warmup "${RR_WARMUP:-2s}")
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; commit $(git rev-parse --short HEAD)"
"$FLOE" bench rr "${flags[@]}"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$FLOE" bench rr "${flags[@]}" --transactional-id floe-bench-rr
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
