#!/usr/bin/env bash
# Measures the mock server's efficiency against a floor: CONNS streams at
# 1000/ITL_MS tokens/s each (default 10,000 × 5 = 50k events/s), the server
# pinned to CPU 0 and the load client to CPU 1.
#
#   1. floor: a loop of write(2)s of the same chunk to the same sockets;
#   2. mockllm --mode per-stream: CPU per event vs the floor, lateness;
#   3. mockllm --mode decode-step: CPU per event, burst length per step.
#
# The first requests are spread over SPREAD (default 5 s) so that the
# ramp-up does not swamp the server; truth-log statistics skip the ramp
# and the last second, when the clients close their connections.
#
# Usage: scripts/bench-mock.sh   (env: CONNS, ITL_MS, TTFT_MS, SPREAD, WARMUP,
#        DURATION, TIMER_SLACK_US, SERVER_CPU, CLIENT_CPU, MODES, MOCKLLM)
#
# MODES picks the runs (default "floor per-stream decode-step"); MOCKLLM runs
# a prebuilt mockllm binary instead of building this tree's, to compare
# builds side by side. TIMER_SLACK_US, when set, is passed as
# --timer-slack-us; unset, the server's default applies.
set -euo pipefail
cd "$(dirname "$0")/.."

CONNS=${CONNS:-10000}
ITL_MS=${ITL_MS:-200}
TTFT_MS=${TTFT_MS:-100}
SPREAD=${SPREAD:-5s}
WARMUP=${WARMUP:-3s}
DURATION=${DURATION:-20s}
TIMER_SLACK_US=${TIMER_SLACK_US:-}
MODES=${MODES:-floor per-stream decode-step}
MOCKLLM=${MOCKLLM:-}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}

work=$(mktemp -d)
server_pid=""
cleanup() {
	if [[ -n "$server_pid" ]]; then kill -INT "$server_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

if [[ -n "$MOCKLLM" ]]; then
	cp "$MOCKLLM" "$work/mockllm"
else
	go build -o "$work/mockllm" ./cmd/mockllm
fi
go build -o "$work/mockbench" ./cmd/mockllm/internal/mockbench

# start_server NAME CMD... runs CMD pinned to SERVER_CPU and waits for its
# "... listening on [http://]HOST:PORT" line; sets server_pid and addr.
start_server() {
	local name=$1
	shift
	taskset -c "$SERVER_CPU" "$@" >"$work/$name.out" 2>"$work/$name.err" &
	server_pid=$!
	for _ in $(seq 100); do
		if grep -q 'listening on' "$work/$name.out" 2>/dev/null; then break; fi
		sleep 0.1
	done
	addr=$(sed -n 's/.*listening on \(http:\/\/\)\{0,1\}//p' "$work/$name.out")
	[[ -n "$addr" ]] || { echo "$name did not start:"; cat "$work/$name.err"; exit 1; }
}

stop_server() {
	kill -INT "$server_pid"
	wait "$server_pid" || true
	server_pid=""
}

run_load() {
	taskset -c "$CLIENT_CPU" "$work/mockbench" load --addr "$addr" --pid "$server_pid" \
		--conns "$CONNS" --spread "$SPREAD" --warmup "$WARMUP" --duration "$DURATION"
}

cpu_per_event() { sed -n 's/.*cpu_per_event_us=\([0-9.]*\).*/\1/p' <<<"$1"; }

want() { [[ " $MODES " == *" $1 "* ]]; }

slack=()
if [[ -n "$TIMER_SLACK_US" ]]; then slack=(--timer-slack-us "$TIMER_SLACK_US"); fi

ratio() {
	if [[ -n "$1" && -n "$2" ]]; then
		awk -v a="$1" -v b="$2" 'BEGIN{printf " (%.2f× floor)", a/b}'
	fi
}

echo "== load: $CONNS streams, one token every ${ITL_MS} ms each; server on CPU $SERVER_CPU, client on CPU $CLIENT_CPU"
floor="" perstream="" decodestep=""
if want floor; then
	echo "== floor (plain write(2) loop)"
	start_server floor "$work/mockbench" floor --itl-ms "$ITL_MS" --ttft-ms "$TTFT_MS"
	floor=$(run_load)
	echo "$floor"
	stop_server
	cat "$work/floor.err"
fi

if want per-stream; then
	echo "== mockllm --mode per-stream"
	start_server perstream "$work/mockllm" --port 0 --mode per-stream "${slack[@]}" --max-model-len 1000000 --itl-ms "$ITL_MS" --ttft-ms "$TTFT_MS" \
		--truth-log "$work/perstream.truth"
	perstream=$(run_load)
	echo "$perstream"
	stop_server
	cat "$work/perstream.err"
	"$work/mockbench" truthstats --skip "$SPREAD" --tail 1s --file "$work/perstream.truth" | grep -v '^burst\|^tokens_per_step'
fi

if want decode-step; then
	echo "== mockllm --mode decode-step"
	start_server decodestep "$work/mockllm" --port 0 --mode decode-step "${slack[@]}" --max-model-len 1000000 --itl-ms "$ITL_MS" --ttft-ms "$TTFT_MS" \
		--truth-log "$work/decodestep.truth"
	decodestep=$(run_load)
	echo "$decodestep"
	stop_server
	cat "$work/decodestep.err"
	"$work/mockbench" truthstats --skip "$SPREAD" --tail 1s --file "$work/decodestep.truth"
fi

f=$(cpu_per_event "$floor")
p=$(cpu_per_event "$perstream")
d=$(cpu_per_event "$decodestep")
line="== CPU per event:"
if want floor; then line+=" floor ${f} µs"; fi
if want per-stream; then line+=" per-stream ${p} µs$(ratio "$p" "$f")"; fi
if want decode-step; then line+=" decode-step ${d} µs$(ratio "$d" "$f")"; fi
echo "$line"
