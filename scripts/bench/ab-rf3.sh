#!/usr/bin/env bash
# scripts/bench/ab-rf3.sh LABEL FLOE_BIN [serve flags...]: one A/B point of
# docs/benchmarks.md's "What remains" runs. Starts a 3-node Floe cluster of
# FLOE_BIN on 127.0.0.1 (Kafka 3919x, Raft 3920x, admin 3929x; set PORT_BASE
# to move them, default 39), runs a closed-loop RF=3 headline (10 s after a
# 2 s warmup), then an open-loop run at RATE msg/s (default 400000, 4 s),
# prints both summaries, scrapes node 1's and node 2's /metrics into
# $AB_WORK/LABEL (default /tmp/floe-ab) and stops the cluster. The client is
# CLIENT_BIN (default FLOE_BIN), so alternating server binaries keep one
# client. Alternate binaries (old, new, old, new) to compare on a noisy
# machine.
set -euo pipefail
label=$1 bin=$2
shift 2
base=${PORT_BASE:-39}
client=${CLIENT_BIN:-$bin}
work=${AB_WORK:-/tmp/floe-ab}/$label
rm -rf "$work" && mkdir -p "$work"
peers=1@127.0.0.1:${base}201,2@127.0.0.1:${base}202,3@127.0.0.1:${base}203
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null' EXIT
for i in 1 2 3; do
	"$bin" serve --log-level info --node-id "$i" --data-dir "$work/n$i" \
		--kafka-addr "127.0.0.1:${base}19$i" --admin-addr "127.0.0.1:${base}29$i" \
		--raft-addr "127.0.0.1:${base}20$i" --peers "$peers" "$@" >"$work/n$i.log" 2>&1 &
	pids+=($!)
done
for i in 1 2 3; do
	for _ in $(seq 100); do
		(echo >"/dev/tcp/127.0.0.1/${base}19$i") 2>/dev/null && break
		sleep 0.1
	done
done
brokers=127.0.0.1:${base}191,127.0.0.1:${base}192,127.0.0.1:${base}193
common=(--brokers "$brokers" --partitions 8 --replication-factor 3 --producers 2 --acks all
	--linger 1ms --max-buffered 100000 --size 100)
echo "$label headline: $("$client" bench produce "${common[@]}" --topic h --duration 10s --warmup 2s 2>&1 | grep -E 'msgs in|ack latency' | tr '\n' ' ')"
echo "$label rate ${RATE:-400000}: $("$client" bench produce "${common[@]}" --topic l --duration 4s --warmup 1s --rate "${RATE:-400000}" 2>&1 | grep -E 'msgs in|ack latency' | tr '\n' ' ')"
for i in 1 2; do curl -s "127.0.0.1:${base}29$i/metrics" >"$work/metrics-n$i.txt" || true; done
