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
# ramp-up does not swamp the server; truth-log statistics skip the ramp.
#
# Usage: scripts/bench-mock.sh   (env: CONNS, ITL_MS, TTFT_MS, SPREAD, WARMUP,
#        DURATION, TIMER_SLACK_US, SERVER_CPU, CLIENT_CPU)
set -euo pipefail
cd "$(dirname "$0")/.."

CONNS=${CONNS:-10000}
ITL_MS=${ITL_MS:-200}
TTFT_MS=${TTFT_MS:-100}
SPREAD=${SPREAD:-5s}
WARMUP=${WARMUP:-3s}
DURATION=${DURATION:-20s}
TIMER_SLACK_US=${TIMER_SLACK_US:-0}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}

work=$(mktemp -d)
server_pid=""
cleanup() {
	if [[ -n "$server_pid" ]]; then kill -INT "$server_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/mockllm" ./cmd/mockllm
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

echo "== load: $CONNS streams, one token every ${ITL_MS} ms each; server on CPU $SERVER_CPU, client on CPU $CLIENT_CPU"
echo "== floor (plain write(2) loop)"
start_server floor "$work/mockbench" floor --itl-ms "$ITL_MS" --ttft-ms "$TTFT_MS"
floor=$(run_load)
echo "$floor"
stop_server
cat "$work/floor.err"

echo "== mockllm --mode per-stream"
start_server perstream "$work/mockllm" --port 0 --mode per-stream --timer-slack-us "$TIMER_SLACK_US" --max-model-len 1000000 --itl-ms "$ITL_MS" --ttft-ms "$TTFT_MS" \
	--truth-log "$work/perstream.truth"
perstream=$(run_load)
echo "$perstream"
stop_server
cat "$work/perstream.err"
"$work/mockbench" truthstats --skip "$SPREAD" --file "$work/perstream.truth" | grep -v '^burst\|^tokens_per_step'

echo "== mockllm --mode decode-step"
start_server decodestep "$work/mockllm" --port 0 --mode decode-step --timer-slack-us "$TIMER_SLACK_US" --max-model-len 1000000 --itl-ms "$ITL_MS" --ttft-ms "$TTFT_MS" \
	--truth-log "$work/decodestep.truth"
decodestep=$(run_load)
echo "$decodestep"
stop_server
cat "$work/decodestep.err"
"$work/mockbench" truthstats --skip "$SPREAD" --file "$work/decodestep.truth"

f=$(cpu_per_event "$floor")
p=$(cpu_per_event "$perstream")
d=$(cpu_per_event "$decodestep")
echo "== CPU per event: floor ${f} µs, per-stream ${p} µs ($(awk -v a="$p" -v b="$f" 'BEGIN{printf "%.2f", a/b}')× floor), decode-step ${d} µs ($(awk -v a="$d" -v b="$f" 'BEGIN{printf "%.2f", a/b}')× floor)"
