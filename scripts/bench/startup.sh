#!/usr/bin/env bash
# scripts/bench/startup.sh: `make bench-startup` (issue 21). Start-up and
# recovery time of one broker: from process start to /readyz (200) and to
# the first acknowledged produce (acks=all), for an empty data directory, a
# directory holding START_LOG_MIB of logs, and one holding a topic of
# START_PARTITIONS partitions. Each case builds its data once with a
# broker that is then killed (SIGKILL), and `floe bench startup` starts,
# times and kills it START_RUNS times (so each timed start is a crash
# recovery; the empty case empties the directory before every start).
# Prints a Markdown table (median and min..max) to stdout; logs stay in
# START_WORK.
#
# Knobs (environment):
#   START_RUNS=3
#   START_CASES="empty logs partitions"
#   START_LOG_MIB=1024 START_LOG_PARTITIONS=4   the logs case (1 KiB records)
#   START_PARTITIONS=10000                      the partitions case (RF=1)
#   START_SERVE_FLAGS=                          more `floe serve` flags
#   START_WORK=dir                              data and logs (default: a temp dir, removed unless START_KEEP=1)
#   START_FLOE=path                             run this floe binary (not built) instead of bin/floe
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
RUNS=${START_RUNS:-3}
CASES=${START_CASES:-empty logs partitions}
LOG_MIB=${START_LOG_MIB:-1024}
LOG_PARTITIONS=${START_LOG_PARTITIONS:-4}
PARTITIONS=${START_PARTITIONS:-10000}
SERVE_FLAGS=${START_SERVE_FLAGS:-}
WORK=${START_WORK:-$(mktemp -d /tmp/floe-startup.XXXXXX)}
mkdir -p "$WORK"
FLOE=${START_FLOE:-$ROOT/bin/floe}
KAFKA=127.0.0.1:29392
ADMIN=127.0.0.1:29744
PID=

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

cleanup() {
	[[ -n $PID ]] && kill -9 "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
	[[ ${START_KEEP:-} == 1 || -n ${START_WORK:-} ]] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for addr in $KAFKA $ADMIN; do
	if (exec 3<>"/dev/tcp/${addr%:*}/${addr##*:}") 2>/dev/null; then
		log "port ${addr##*:} is in use (someone else's server?): stopping"
		exit 1
	fi
done

if [[ -z ${START_FLOE:-} ]]; then
	log "building bin/floe"
	go build -o bin/floe ./cmd/floe
fi

# serve DIR: start a broker in the background on DIR, wait for /readyz.
serve() {
	# shellcheck disable=SC2086 # START_SERVE_FLAGS is a list of flags
	"$FLOE" serve --data-dir "$1" --kafka-addr $KAFKA --admin-addr $ADMIN $SERVE_FLAGS >>"$WORK/build.log" 2>&1 &
	PID=$!
	local i
	for ((i = 0; i < 6000; i++)); do
		curl -fsS -o /dev/null "http://$ADMIN/readyz" 2>/dev/null && return 0
		sleep 0.1
	done
	log "the broker on $1 was not ready after 10 minutes"
	return 1
}

# crash: SIGKILL the broker serve started, as the timed starts are recoveries.
crash() {
	kill -9 "$PID"
	wait "$PID" 2>/dev/null || true
	PID=
}

# timed LABEL DIR TOPIC [FLAGS...]: floe bench startup, JSON appended.
timed() {
	local label=$1 dir=$2 topic=$3
	shift 3
	log "timing $RUNS starts: $label"
	"$FLOE" bench startup --data-dir "$dir" --topic "$topic" --runs "$RUNS" --label "$label" \
		--kafka-addr $KAFKA --admin-addr $ADMIN --serve-flags "$SERVE_FLAGS" \
		--log "$WORK/startup.log" --json "$@" >>"$WORK/results.jsonl"
}

: >"$WORK/results.jsonl"
for c in $CASES; do
	case $c in
	empty)
		timed "empty data directory" "$WORK/empty" floe-startup --fresh
		;;
	logs)
		log "writing $LOG_MIB MiB of 1 KiB records in $LOG_PARTITIONS partitions"
		rm -rf "$WORK/logs"
		serve "$WORK/logs"
		"$FLOE" bench produce --brokers $KAFKA --topic fill --partitions "$LOG_PARTITIONS" --size 1024 \
			--count $((LOG_MIB * 1024)) --linger 5ms --progress 0 >>"$WORK/build.log" 2>&1
		crash
		log "data: $(du -sh "$WORK/logs" | cut -f1)"
		timed "$LOG_MIB MiB of logs ($LOG_PARTITIONS partitions)" "$WORK/logs" fill
		;;
	partitions)
		log "creating a topic of $PARTITIONS partitions"
		rm -rf "$WORK/parts"
		serve "$WORK/parts"
		local_start=$(date +%s.%N)
		# The creation answers REQUEST_TIMED_OUT when not every partition
		# had a leader within the request's timeout; it was created all the
		# same, and /readyz below waits for the leaders.
		"$FLOE" topic create --brokers $KAFKA --timeout 30m --partitions "$PARTITIONS" --replication-factor 1 many >>"$WORK/build.log" 2>&1 ||
			grep -q "many was created" "$WORK/build.log"
		# /readyz waits for every local replica's leader.
		until curl -fsS -o /dev/null "http://$ADMIN/readyz" 2>/dev/null; do sleep 0.1; done
		log "created and every partition led in $(echo "$(date +%s.%N) - $local_start" | bc) s"
		crash
		timed "$PARTITIONS partitions (RF=1)" "$WORK/parts" many
		;;
	*)
		log "unknown case $c (want empty, logs or partitions)"
		exit 2
		;;
	esac
done

# The table: one row per case.
echo "| data directory | /readyz median (min..max) | first produce median (min..max) | load average (1 min) during the runs |"
echo "|---|---|---|---|"
python3 - "$WORK/results.jsonl" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    loads = [x["load_before"].split()[0] for x in r["runs"]] + [x["load_after"].split()[0] for x in r["runs"]]
    f = lambda s: "%.2f s (%.2f..%.2f)" % (s["median"], s["min"], s["max"])
    print("| %s | %s | %s | %s..%s |" % (r["label"], f(r["ready_s"]), f(r["first_produce_s"]),
          min(loads, key=float), max(loads, key=float)))
EOF
