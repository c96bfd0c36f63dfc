#!/usr/bin/env bash
# Starts, stops or shows a local three-broker Floe cluster on 127.0.0.1:
# broker N listens for Kafka on 2919N, for peers on 2929N and serves
# /metrics on 2939N, with its data in cluster-data/N. Logs go to
# cluster-data/N.log. Used by `make cluster` and `make cluster-stop`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BIN="${BIN:-bin/floe}"
DIR="${CLUSTER_DIR:-cluster-data}"
NODES="${NODES:-3}"
peers=""
for i in $(seq 1 "$NODES"); do peers+="${peers:+,}$i@127.0.0.1:2929$i"; done

start() {
	mkdir -p "$DIR"
	for i in $(seq 1 "$NODES"); do
		if [ -f "$DIR/$i.pid" ] && kill -0 "$(cat "$DIR/$i.pid")" 2>/dev/null; then
			echo "broker $i already running (pid $(cat "$DIR/$i.pid"))"
			continue
		fi
		"$BIN" serve --node-id "$i" --data-dir "$DIR/$i" \
			--kafka-addr "127.0.0.1:2919$i" --admin-addr "127.0.0.1:2939$i" \
			--raft-addr "127.0.0.1:2929$i" --peers "$peers" >"$DIR/$i.log" 2>&1 &
		echo $! >"$DIR/$i.pid"
		echo "broker $i: kafka 127.0.0.1:2919$i, metrics http://127.0.0.1:2939$i/metrics, log $DIR/$i.log"
	done
	for i in $(seq 1 "$NODES"); do
		for _ in $(seq 1 100); do
			curl -sf "http://127.0.0.1:2939$i/readyz" >/dev/null 2>&1 && break
			sleep 0.1
		done
		curl -sf "http://127.0.0.1:2939$i/readyz" >/dev/null || { echo "broker $i not ready; see $DIR/$i.log" >&2; exit 1; }
	done
	echo "cluster ready: bootstrap servers 127.0.0.1:29191,127.0.0.1:29192,127.0.0.1:29193"
	echo "stop it with: make cluster-stop"
}

stop() {
	for i in $(seq 1 "$NODES"); do
		[ -f "$DIR/$i.pid" ] || continue
		pid="$(cat "$DIR/$i.pid")"
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid"
			for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
			echo "broker $i stopped"
		fi
		rm -f "$DIR/$i.pid"
	done
}

status() {
	for i in $(seq 1 "$NODES"); do
		if [ -f "$DIR/$i.pid" ] && kill -0 "$(cat "$DIR/$i.pid")" 2>/dev/null; then
			echo "broker $i: running (pid $(cat "$DIR/$i.pid")), ready: $(curl -s "http://127.0.0.1:2939$i/readyz" || echo no)"
		else
			echo "broker $i: stopped"
		fi
	done
}

case "${1:-start}" in
start) start ;;
stop) stop ;;
status) status ;;
*) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
