#!/usr/bin/env bash
# scripts/bench/run.sh: `make bench`. In one run on this machine, measure side
# by side the disk's fsync'd write bandwidth (the physical limit), Floe single
# node (RF=1), a local 3-node Floe cluster (RF=3) and NATS JetStream (R1, R3)
# in matched durability modes, then write the "Broker benchmarks" section of
# docs/benchmarks.md and its plots in docs/img/.
#
# Everything listens on 127.0.0.1 and is stopped on exit (trap). Budget:
# about 8 minutes of runs on a 2-core machine, plus the builds (about 1
# minute with warm caches; nats-server's first build up to 8 more). With
# nats-server: 65 runs, 7 headlines of WARMUP+DURATION (12 s) and 58 points
# of SWEEP_WARMUP+SWEEP (5 s), plus 1-1.5 s each to start: 440-470 s. The
# last run with one run a load point took 398 s, builds included; the 3
# runs of each Floe load point (BENCH_LAT_RUNS) add 20 runs, about 130 s.
#
# Knobs (environment):
#   BENCH_DURATION=10s        length of each headline run (after a 2s warmup)
#   BENCH_SWEEP_DURATION=4s   length of each size / offered-load sweep point
#   BENCH_LAT_RUNS=3          runs of each Floe offered-load point (issue 21:
#       the report gives their median and min..max, and the broker stages)
#   BENCH_NATS_LAT_RUNS=1     runs of each NATS offered-load point
#   BENCH_QUICK=1             short everything (for testing the script)
#   BENCH_WORK=dir            where data and raw results go (default: a temp dir)
#   BENCH_KEEP=1              keep BENCH_WORK afterwards
#   NATS_SERVER_VERSION=v2.12.15  nats-server built from the Go module proxy
#       when Debian's (2.9.10) lacks `sync_interval: always`; "none" skips it
#   BENCH_DOC=docs/benchmarks.md BENCH_IMG=docs/img   where the report goes
#   FLOE_BENCH_PARTITIONS=8 FLOE_BENCH_PRODUCERS=2   client shape of Floe runs
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
START_SECS=$SECONDS

DURATION=${BENCH_DURATION:-10s}
SWEEP=${BENCH_SWEEP_DURATION:-4s}
WARMUP=2s
SWEEP_WARMUP=1s
SIZES="100 1000 10000 100000"
LOADS="10 25 50 75 90"          # percent of each system's measured maximum
DISK_MB=512
if [[ ${BENCH_QUICK:-0} == 1 ]]; then
	DURATION=2s SWEEP=1s WARMUP=500ms SWEEP_WARMUP=200ms SIZES="100 10000" LOADS="25 50 90" DISK_MB=64
fi
LAT_RUNS=${BENCH_LAT_RUNS:-3}
NATS_LAT_RUNS=${BENCH_NATS_LAT_RUNS:-1}
PARTITIONS=${FLOE_BENCH_PARTITIONS:-8}
PRODUCERS=${FLOE_BENCH_PRODUCERS:-2}
NATS_SERVER_VERSION=${NATS_SERVER_VERSION:-v2.12.15}
WORK=${BENCH_WORK:-$(mktemp -d /tmp/floe-bench.XXXXXX)}
mkdir -p "$WORK"
RESULTS=$WORK/results.jsonl
FAILURES=$WORK/failures.tsv
: >"$RESULTS"
: >"$FAILURES"
: >"$WORK/commands.tsv"
FLOE=$ROOT/bin/floe
REPORT=$WORK/report
PIDS=()

log() { printf '%s [%4ds] %s\n' "$(date +%H:%M:%S)" $((SECONDS - START_SECS)) "$*" >&2; }

stop_all() {
	local pid
	for pid in "${PIDS[@]:-}"; do
		[[ -n $pid ]] && kill "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]:-}"; do
		[[ -n $pid ]] && wait "$pid" 2>/dev/null || true
	done
	PIDS=()
}

cleanup() {
	local rc=$?
	stop_all
	if [[ ${BENCH_KEEP:-0} != 1 && -z ${BENCH_WORK:-} ]]; then
		rm -rf "$WORK"
	else
		log "raw results kept in $WORK"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_port HOST:PORT: until something accepts connections (30 s at most).
wait_port() {
	local host=${1%:*} port=${1##*:} i
	for ((i = 0; i < 300; i++)); do
		if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	log "nothing listening on $1 after 30s"
	return 1
}

# ports_free HOST:PORT...: true when nothing listens on any of them. A
# benchmark must never measure somebody else's server that happens to hold
# the port (other engineers' clusters run on this machine too).
ports_free() {
	local a
	for a in "$@"; do
		if (exec 3<>"/dev/tcp/${a%:*}/${a##*:}") 2>/dev/null; then
			log "port ${a##*:} is already in use: skipping this system"
			printf '%s\t%s\n' "ports" "${a} in use by another process; runs needing it were skipped" >>"$FAILURES"
			return 1
		fi
	done
}

# record LABEL CMD...: run one bench command, append its JSON result; a run
# that prints nothing is noted in failures.tsv and the script goes on.
record() {
	local label=$1 out
	shift
	log "bench $label: $*"
	printf '%s\t%s\n' "$label" "${*/#$ROOT\//}" >>"$WORK/commands.tsv"
	if out=$(timeout 300 "$@" --json --progress 0 --label "$label" 2>"$WORK/last.err"); then :; fi
	if [[ -n $out ]]; then
		printf '%s\n' "$out" >>"$RESULTS"
		printf '%s\n' "$out" | "$REPORT" summary
	fi
	if [[ -z $out ]] || grep -q . "$WORK/last.err"; then
		local why
		why=$(grep -v '^ *$' "$WORK/last.err" | tail -1 | tr '\t' ' ')
		[[ -z $out ]] && printf '%s\t%s\n' "$label" "${why:-no result}" >>"$FAILURES"
		[[ -n $why ]] && log "  $label: $why"
	fi
	return 0
}

# --- builds and tools -------------------------------------------------------
log "building bin/floe and the report tool"
mkdir -p "$ROOT/bin"
go build -o "$FLOE" ./cmd/floe
go build -o "$REPORT" ./scripts/bench/report

APT_SUDO=""
[[ $(id -u) == 0 ]] || APT_SUDO=sudo
if ! command -v nats-server >/dev/null && [[ ! -x /usr/sbin/nats-server ]]; then
	log "installing Debian's nats-server"
	DEBIAN_FRONTEND=noninteractive $APT_SUDO apt-get install -y -q nats-server >/dev/null ||
		{ $APT_SUDO apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive $APT_SUDO apt-get install -y -q nats-server >/dev/null; } ||
		log "could not install nats-server: NATS rows will be missing"
fi
NATS_DEBIAN=$(command -v nats-server || echo /usr/sbin/nats-server)

# supports_sync_always BIN: does this nats-server accept `sync_interval: always`?
supports_sync_always() {
	local conf=$WORK/probe.conf
	printf 'listen: 127.0.0.1:34299\njetstream { store_dir: "%s", sync_interval: always }\n' "$WORK/probe" >"$conf"
	"$1" -c "$conf" -t >/dev/null 2>&1
}

NATS_SYNC=""
if [[ -x $NATS_DEBIAN ]] && supports_sync_always "$NATS_DEBIAN"; then
	NATS_SYNC=$NATS_DEBIAN
elif [[ $NATS_SERVER_VERSION != none ]]; then
	cached=$ROOT/bin/tools/nats-server-$NATS_SERVER_VERSION
	if [[ ! -x $cached ]]; then
		log "Debian's nats-server lacks sync_interval: always; building nats-server $NATS_SERVER_VERSION (Go module)"
		mkdir -p "$ROOT/bin/tools"
		if GOBIN=$WORK/gobin GOFLAGS= timeout 480 go install "github.com/nats-io/nats-server/v2@$NATS_SERVER_VERSION" >&2; then
			mv "$WORK/gobin/nats-server" "$cached"
		fi
	fi
	[[ -x $cached ]] && supports_sync_always "$cached" && NATS_SYNC=$cached
fi
[[ -n $NATS_SYNC ]] || log "no nats-server with sync_interval: always; the fsync-per-write NATS rows will be missing"

# --- the machine and its disk ----------------------------------------------
machine_info() {
	local dev fstype
	dev=$(findmnt -n -o SOURCE -T "$WORK" 2>/dev/null || echo unknown)
	fstype=$(findmnt -n -o FSTYPE -T "$WORK" 2>/dev/null || echo unknown)
	cat <<JSON
{"nproc": $(nproc),
 "cpu": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//;s/"//g')",
 "mem_gib": $(awk '/MemTotal/ {printf "%.1f", $2/1048576}' /proc/meminfo),
 "kernel": "$(uname -sr)",
 "disk": "$dev ($fstype, $(lsblk -ndo ROTA "$dev" 2>/dev/null | tr -d ' ' | sed 's/^1$/rotational/;s/^0$/non-rotational/' || true))",
 "go": "$(go env GOVERSION)",
 "commit": "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo +dirty)",
 "nats_debian": "$("$NATS_DEBIAN" --version 2>/dev/null || echo missing)",
 "nats_sync": "$([[ -n $NATS_SYNC ]] && "$NATS_SYNC" --version || echo missing)",
 "loadavg": "$(cut -d' ' -f1-3 /proc/loadavg)",
 "date": "$(date -u +%Y-%m-%dT%H:%MZ)"}
JSON
}
machine_info >"$WORK/machine.json"

# dd_rate ARGS...: bytes and seconds of one dd run, as "bytes seconds".
dd_rate() {
	dd if=/dev/zero of="$WORK/dd.bin" "$@" 2>&1 | awk '/copied/ {print $1, $(NF-3)}'
	rm -f "$WORK/dd.bin"
}
log "disk: ${DISK_MB} MiB of 1 MiB O_DSYNC writes, 1 fdatasync'd stream, 4 KiB O_DSYNC writes"
read -r b1 s1 < <(dd_rate bs=1M count="$DISK_MB" oflag=dsync)
read -r b2 s2 < <(dd_rate bs=1M count=$((DISK_MB * 2)) conv=fdatasync)
read -r b3 s3 < <(dd_rate bs=4k count=2000 oflag=dsync)
cat >"$WORK/disk.json" <<JSON
{"dsync_1m_mb_per_sec": $(awk -v b="$b1" -v s="$s1" 'BEGIN {printf "%.1f", b/s/1e6}'),
 "fdatasync_stream_mb_per_sec": $(awk -v b="$b2" -v s="$s2" 'BEGIN {printf "%.1f", b/s/1e6}'),
 "dsync_4k_writes_per_sec": $(awk -v b="$b3" -v s="$s3" 'BEGIN {printf "%.0f", b/4096/s}'),
 "commands": ["dd if=/dev/zero of=F bs=1M count=$DISK_MB oflag=dsync", "dd if=/dev/zero of=F bs=1M count=$((DISK_MB * 2)) conv=fdatasync", "dd if=/dev/zero of=F bs=4k count=2000 oflag=dsync"]}
JSON
cat "$WORK/disk.json" >&2

# --- the runs ---------------------------------------------------------------
# load_sweep LABEL MAX RUNS CMD...: the offered-load points, each RUNS times,
# labelled LABEL/load-PCT/run-I (the report's median and range); the
# point's destination name (CMD's last flag, --topic or --stream) gets the
# load and run appended.
load_sweep() {
	local label=$1 max=$2 runs=$3 pct i
	shift 3
	for pct in $LOADS; do
		for ((i = 1; i <= runs; i++)); do
			record "$label/load-$pct/run-$i" "${@:1:$#-1}" "${*: -1}$pct-$i" --size 100 \
				--duration "$SWEEP" --warmup "$SWEEP_WARMUP" --rate $((max * pct / 100 + 1))
		done
	done
}

# kafka_suite LABEL BROKERS RF PROFILE_PID: headline, sizes, offered load.
kafka_suite() {
	local label=$1 brokers=$2 rf=$3 pid=$4 common size max pct
	common=(--brokers "$brokers" --partitions "$PARTITIONS" --replication-factor "$rf" --producers "$PRODUCERS"
		--acks all --linger 1ms --max-buffered 100000 ${ADMINS:+--broker-metrics "$ADMINS"})
	profile_start "$label" "$pid"
	record "$label" "$FLOE" bench produce "${common[@]}" --topic "$label-headline" --size 100 \
		--duration "$DURATION" --warmup "$WARMUP"
	profile_stop
	for size in $SIZES; do
		record "$label/size-$size" "$FLOE" bench produce "${common[@]}" --topic "$label-size-$size" --size "$size" \
			--duration "$SWEEP" --warmup "$SWEEP_WARMUP"
	done
	max=$("$REPORT" maxrate --results "$RESULTS" --label "$label")
	load_sweep "$label" "$max" "$LAT_RUNS" "$FLOE" bench produce "${common[@]}" --topic "$label-load-"
	record "$label/e2e-50" "$FLOE" bench e2e "${common[@]}" --topic "$label-e2e" --size 100 --consumers 2 \
		--duration "$SWEEP" --warmup "$SWEEP_WARMUP" --rate $((max / 2 + 1))
}

# nats_suite LABEL URL REPLICAS FULL: headline and, when FULL, the sweeps.
nats_suite() {
	local label=$1 url=$2 replicas=$3 full=$4 common size max pct
	common=(--nats-url "$url" --replicas "$replicas" --publishers "$PRODUCERS" --window 1000)
	record "$label" "$FLOE" bench nats-produce "${common[@]}" --stream "headline" --size 100 \
		--duration "$DURATION" --warmup "$WARMUP"
	[[ $full == 1 ]] || return 0
	for size in $SIZES; do
		record "$label/size-$size" "$FLOE" bench nats-produce "${common[@]}" --stream "size$size" --size "$size" \
			--duration "$SWEEP" --warmup "$SWEEP_WARMUP"
	done
	max=$("$REPORT" maxrate --results "$RESULTS" --label "$label")
	load_sweep "$label" "$max" "$NATS_LAT_RUNS" "$FLOE" bench nats-produce "${common[@]}" --stream "load"
}

# CPU profile of a broker during the headline run: pprof when its admin
# endpoint serves it, else perf when installed.
PROFILE_PID=""
profile_start() {
	local label=$1 pid=$2 admin=${ADMIN_ADDR:-}
	PROFILE_PID=""
	local secs=${DURATION%s}
	[[ $secs =~ ^[0-9]+$ ]] || secs=2
	if [[ -n $admin ]] && curl -sf -o /dev/null "http://$admin/debug/pprof/" 2>/dev/null; then
		curl -sf -o "$WORK/$label.pprof" "http://$admin/debug/pprof/profile?seconds=$secs" &
		PROFILE_PID=$!
	elif command -v perf >/dev/null && [[ -n $pid ]]; then
		perf record -F 999 -g -o "$WORK/$label.perf" -p "$pid" -- sleep "$secs" >/dev/null 2>&1 &
		PROFILE_PID=$!
	fi
}
profile_stop() {
	[[ -n $PROFILE_PID ]] && wait "$PROFILE_PID" 2>/dev/null || true
	PROFILE_PID=""
}
profile_text() {
	local label=$1
	local out=$WORK/$label.profile.txt
	if [[ -s $WORK/$label.pprof ]]; then
		go tool pprof -top -nodecount=30 "$FLOE" "$WORK/$label.pprof" >"$out" 2>/dev/null || true
	elif [[ -s $WORK/$label.perf ]]; then
		perf report -i "$WORK/$label.perf" --stdio --no-children --sort dso,symbol --percent-limit 1 2>/dev/null |
			awk '/^ +[0-9.]+%/ {sub(/ +- +- *$/, ""); print}' | head -30 >"$out" || true
	fi
}

floe_serve() { # NAME ARGS...: start one broker in the background
	local name=$1
	shift
	"$FLOE" serve --log-level warn "$@" >"$WORK/$name.log" 2>&1 &
	PIDS+=($!)
}

log "Floe single node (RF=1)"
ports_free 127.0.0.1:39092 127.0.0.1:39644 &&
	floe_serve floe1 --data-dir "$WORK/floe1" --kafka-addr 127.0.0.1:39092 --admin-addr 127.0.0.1:39644
FLOE1_PID=${PIDS[-1]:-}
if [[ -n $FLOE1_PID ]] && wait_port 127.0.0.1:39092; then
	ADMIN_ADDR=127.0.0.1:39644 ADMINS=127.0.0.1:39644 kafka_suite floe-rf1 127.0.0.1:39092 1 "$FLOE1_PID"
	profile_text floe-rf1
fi
stop_all
rm -rf "$WORK/floe1"

log "Floe 3-node cluster (RF=3)"
PEERS=1@127.0.0.1:39201,2@127.0.0.1:39202,3@127.0.0.1:39203
ports_free 127.0.0.1:3919{1,2,3} 127.0.0.1:3920{1,2,3} 127.0.0.1:3929{1,2,3} &&
for i in 1 2 3; do
	floe_serve "floe3-n$i" --node-id "$i" --data-dir "$WORK/floe3/n$i" --kafka-addr "127.0.0.1:3919$i" \
		--admin-addr "127.0.0.1:3929$i" --raft-addr "127.0.0.1:3920$i" --peers "$PEERS"
done
FLOE3_PID=${PIDS[0]:-}
if [[ -n $FLOE3_PID ]] && wait_port 127.0.0.1:39191 && wait_port 127.0.0.1:39192 && wait_port 127.0.0.1:39193; then
	ADMIN_ADDR=127.0.0.1:39291 ADMINS=127.0.0.1:39291,127.0.0.1:39292,127.0.0.1:39293 kafka_suite floe-rf3 127.0.0.1:39191,127.0.0.1:39192,127.0.0.1:39193 3 "$FLOE3_PID"
	profile_text floe-rf3
fi
stop_all
rm -rf "$WORK/floe3"

# nats_single BIN SYNC NAME: one JetStream server; SYNC is "always" or "".
nats_single() {
	local bin=$1 sync=$2 name=$3 dir=$WORK/$3
	ports_free 127.0.0.1:34222 || return 1
	mkdir -p "$dir"
	{
		echo "listen: 127.0.0.1:34222"
		echo "jetstream { store_dir: \"$dir/js\"${sync:+, sync_interval: $sync} }"
	} >"$dir/nats.conf"
	"$bin" -c "$dir/nats.conf" >"$dir/log" 2>&1 &
	PIDS+=($!)
	wait_port 127.0.0.1:34222
}

# nats_cluster BIN SYNC NAME: three JetStream servers routed together.
nats_cluster() {
	local bin=$1 sync=$2 name=$3 i dir
	ports_free 127.0.0.1:3423{1,2,3} 127.0.0.1:3424{1,2,3} || return 1
	for i in 1 2 3; do
		dir=$WORK/$name/n$i
		mkdir -p "$dir"
		cat >"$dir/nats.conf" <<CONF
server_name: n$i
listen: 127.0.0.1:3423$i
jetstream { store_dir: "$dir/js"${sync:+, sync_interval: $sync} }
cluster {
  name: bench
  listen: 127.0.0.1:3424$i
  routes: [nats-route://127.0.0.1:34241, nats-route://127.0.0.1:34242, nats-route://127.0.0.1:34243]
}
CONF
		"$bin" -c "$dir/nats.conf" >"$dir/log" 2>&1 &
		PIDS+=($!)
	done
	wait_port 127.0.0.1:34231 && wait_port 127.0.0.1:34232 && wait_port 127.0.0.1:34233
}

NATS_R3_URL=nats://127.0.0.1:34231,nats://127.0.0.1:34232,nats://127.0.0.1:34233
if [[ -n $NATS_SYNC ]]; then
	log "NATS JetStream R1, sync_interval: always"
	nats_single "$NATS_SYNC" always nats-r1-sync && nats_suite nats-r1-sync nats://127.0.0.1:34222 1 1
	stop_all
	log "NATS JetStream R1, default sync"
	nats_single "$NATS_SYNC" "" nats-r1-default && nats_suite nats-r1-default nats://127.0.0.1:34222 1 0
	stop_all
	log "NATS JetStream R3 (3 servers), sync_interval: always"
	nats_cluster "$NATS_SYNC" always nats-r3-sync && nats_suite nats-r3-sync "$NATS_R3_URL" 3 1
	stop_all
	log "NATS JetStream R3 (3 servers), default sync"
	nats_cluster "$NATS_SYNC" "" nats-r3-default && nats_suite nats-r3-default "$NATS_R3_URL" 3 0
	stop_all
fi
if [[ -x $NATS_DEBIAN ]]; then
	log "NATS JetStream R1, Debian's nats-server, default sync"
	nats_single "$NATS_DEBIAN" "" nats-debian-r1 && nats_suite nats-debian-r1-default nats://127.0.0.1:34222 1 0
	stop_all
fi
rm -rf "$WORK"/nats-*

# --- the report -------------------------------------------------------------
log "writing docs/benchmarks.md and docs/img/"
"$REPORT" write --results "$RESULTS" --failures "$FAILURES" --machine "$WORK/machine.json" --disk "$WORK/disk.json" \
	--profiles "$WORK" --doc "${BENCH_DOC:-$ROOT/docs/benchmarks.md}" --img "${BENCH_IMG:-$ROOT/docs/img}" \
	--settings "duration=$DURATION warmup=$WARMUP sweep=$SWEEP load-runs=$LAT_RUNS (NATS $NATS_LAT_RUNS) partitions=$PARTITIONS producers=$PRODUCERS" \
	--elapsed "$((SECONDS - START_SECS))"
log "done in $((SECONDS - START_SECS))s"
