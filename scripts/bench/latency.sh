#!/usr/bin/env bash
# scripts/bench/latency.sh: `make bench-latency` (issue 21). Latency against
# offered load, open loop, for Floe RF=1 (one broker) and RF=3 (three
# brokers on this machine), each load point run LAT_RUNS times, with the
# brokers' produce stage histograms (floe_produce_stage_seconds, scraped by
# `floe bench produce --broker-metrics`). Prints Markdown tables (median and
# min..max of the runs) to stdout; raw JSON lines stay in LAT_WORK.
#
# Knobs (environment):
#   LAT_DURATION=4s LAT_WARMUP=1s   each load point
#   LAT_MAX_DURATION=5s            the closed-loop run that measures the maximum
#   LAT_LOADS="10 50 75 90"        percent of the measured maximum ("" : the maximum only)
#   LAT_RUNS=3                     runs per point
#   LAT_SETUPS="rf1 rf3"
#   LAT_MAX_RF1= LAT_MAX_RF3=      use this maximum instead of measuring it
#   LAT_SERVE_FLAGS=               extra `floe serve` flags (e.g. to compare a knob)
#   LAT_WORK=dir                   raw results (default: a temp dir, kept)
#   LAT_FLOE=path                  run this floe binary (not built) instead of bin/floe
#   FLOE_BENCH_PARTITIONS=8 FLOE_BENCH_PRODUCERS=2  client shape (as make bench)
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
DURATION=${LAT_DURATION:-4s}
WARMUP=${LAT_WARMUP:-1s}
MAX_DURATION=${LAT_MAX_DURATION:-5s}
LOADS=${LAT_LOADS-10 50 75 90}
RUNS=${LAT_RUNS:-3}
SETUPS=${LAT_SETUPS:-rf1 rf3}
PARTITIONS=${FLOE_BENCH_PARTITIONS:-8}
PRODUCERS=${FLOE_BENCH_PRODUCERS:-2}
WORK=${LAT_WORK:-$(mktemp -d /tmp/floe-latency.XXXXXX)}
mkdir -p "$WORK"
RESULTS=$WORK/results.jsonl
: >"$RESULTS"
FLOE=${LAT_FLOE:-$ROOT/bin/floe}
REPORT=$WORK/report
PIDS=()

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

stop_all() {
	local pid
	for pid in "${PIDS[@]:-}"; do [[ -n $pid ]] && kill "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]:-}"; do [[ -n $pid ]] && wait "$pid" 2>/dev/null || true; done
	PIDS=()
}
trap 'stop_all' EXIT
trap 'exit 130' INT TERM

wait_port() {
	local host=${1%:*} port=${1##*:} i
	for ((i = 0; i < 300; i++)); do
		if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	log "nothing listening on $1 after 30s"
	return 1
}

port_free() {
	if (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; then
		log "port ${1##*:} is in use (someone else's server?): stopping"
		exit 1
	fi
}

# run LABEL ARGS...: one bench run, its JSON appended to the results.
run() {
	local label=$1 out
	shift
	log "bench $label"
	local try
	for try in 1 2 3 4 5 6; do
		out=$(timeout 300 "$FLOE" bench produce "$@" --json --progress 0 --label "$label" 2>"$WORK/last.err") || true
		# A cluster just started may not have every broker registered yet.
		[[ -z $out ]] && grep -q INVALID_REPLICATION_FACTOR "$WORK/last.err" || break
		log "  not every broker registered yet; retrying in 2s"
		sleep 2
	done
	if [[ -n $out ]]; then
		printf '%s\n' "$out" >>"$RESULTS"
		printf '%s\n' "$out" | "$REPORT" summary
	else
		log "  $label: no result: $(tail -1 "$WORK/last.err")"
	fi
}

# suite SETUP BROKERS RF ADMINS MAX: the maximum (closed loop), then every
# load point RUNS times.
suite() {
	local setup=$1 brokers=$2 rf=$3 admins=$4 max=$5 pct i common
	common=(--brokers "$brokers" --partitions "$PARTITIONS" --replication-factor "$rf" --producers "$PRODUCERS"
		--acks all --linger 1ms --max-buffered 100000 --size 100 --broker-metrics "$admins")
	if [[ -z $max ]]; then
		run "$setup/max" "${common[@]}" --topic "$setup-max" --duration "$MAX_DURATION" --warmup 2s
		max=$(jq -r 'select(.label == "'"$setup/max"'") | .produce.msgs_per_sec | floor' "$RESULTS" | tail -1)
	fi
	log "$setup: maximum $max msg/s"
	[[ -n $max && $max -gt 0 ]] || return 0
	for pct in $LOADS; do
		for ((i = 1; i <= RUNS; i++)); do
			run "$setup/load-$pct/run-$i" "${common[@]}" --topic "$setup-load-$pct-$i" --duration "$DURATION" \
				--warmup "$WARMUP" --rate $((max * pct / 100 + 1))
		done
	done
}

log "building bin/floe and the report tool; load average $(cut -d' ' -f1-3 /proc/loadavg)"
mkdir -p "$ROOT/bin"
[[ -n ${LAT_FLOE:-} ]] || go build -o "$FLOE" ./cmd/floe
go build -o "$REPORT" ./scripts/bench/report
# shellcheck disable=SC2086
serve() { # NAME ARGS...
	local name=$1
	shift
	"$FLOE" serve --log-level warn ${LAT_SERVE_FLAGS:-} "$@" >"$WORK/$name.log" 2>&1 &
	PIDS+=($!)
}

for setup in $SETUPS; do
	case $setup in
	rf1)
		port_free 127.0.0.1:41092
		port_free 127.0.0.1:41644
		rm -rf "$WORK/rf1"
		serve rf1 --data-dir "$WORK/rf1" --kafka-addr 127.0.0.1:41092 --admin-addr 127.0.0.1:41644
		wait_port 127.0.0.1:41092
		suite floe-rf1 127.0.0.1:41092 1 127.0.0.1:41644 "${LAT_MAX_RF1:-}"
		;;
	rf3)
		peers=1@127.0.0.1:41201,2@127.0.0.1:41202,3@127.0.0.1:41203
		for n in 1 2 3; do
			port_free "127.0.0.1:4119$n"
			port_free "127.0.0.1:4120$n"
			port_free "127.0.0.1:4129$n"
		done
		rm -rf "$WORK/rf3"
		for n in 1 2 3; do
			serve "rf3-n$n" --node-id "$n" --data-dir "$WORK/rf3/n$n" --kafka-addr "127.0.0.1:4119$n" \
				--admin-addr "127.0.0.1:4129$n" --raft-addr "127.0.0.1:4120$n" --peers "$peers"
		done
		wait_port 127.0.0.1:41191 && wait_port 127.0.0.1:41192 && wait_port 127.0.0.1:41193
		suite floe-rf3 127.0.0.1:41191,127.0.0.1:41192,127.0.0.1:41193 3 \
			127.0.0.1:41291,127.0.0.1:41292,127.0.0.1:41293 "${LAT_MAX_RF3:-}"
		;;
	*) log "unknown setup $setup" ;;
	esac
	stop_all
	rm -rf "${WORK:?}/$setup"
done

log "load average $(cut -d' ' -f1-3 /proc/loadavg); raw results in $RESULTS"
"$REPORT" latency --results "$RESULTS"
