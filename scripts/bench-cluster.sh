#!/usr/bin/env bash
# Cluster benchmark: AGENTS stampede agents (separate processes, on this
# host's loopback) run one benchmark of AGENTS × STREAMS concurrent
# streams against the mock. 20,000 sockets are beyond one process's
# open-files limit here, so the mock runs as MOCKS processes sharing one
# port through SO_REUSEPORT (mockllm --reuse-port), each with its own truth
# log. Agent 0 merges the partials and saves the whole run; clusterbench
# merges the truth logs and reports the token error (each token's client
# stamp on CLOCK_MONOTONIC − the mock's write) and each agent's clock
# offset bound.
#
#   scripts/bench-cluster.sh                         # 4 agents × 5,000 streams
#   AGENTS=3 STREAMS=1000 scripts/bench-cluster.sh   # smaller
#
# The vCPUs of shared machines stall for 10 ms and more; run it on an
# otherwise idle machine (it takes the benchmark lock).
set -euo pipefail
cd "$(dirname "$0")/.."

AGENTS=${AGENTS:-4}
STREAMS=${STREAMS:-5000}
MOCKS=${MOCKS:-2}
TOKENS=${TOKENS:-20}
ITL_MS=${ITL_MS:-200}
BIN=${BIN:-bin}
OUT=${OUT:-$(mktemp -d /tmp/stampede-cluster.XXXXXX)}
TOKENIZER=${TOKENIZER:-datasets/tokenizer/testdata/tiny/tokenizer.json}
TOTAL=$((AGENTS * STREAMS))

mkdir -p "$BIN"
go build -o "$BIN/" ./cmd/stampede ./cmd/mockllm ./cmd/clusterbench

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

exec 9>/tmp/stampede-bench.lock
flock 9

# Each mock holds about TOTAL / MOCKS sockets.
ulimit -n "$(ulimit -Hn)"
port=""
for m in $(seq 1 "$MOCKS"); do
	"$BIN/mockllm" --port "${port:-0}" --reuse-port --mode decode-step --itl-ms "$ITL_MS" --ttft-ms 50 \
		--tokenizer "$TOKENIZER" --truth-log "$OUT/truth$m.log" >"$OUT/mock$m.out" 2>"$OUT/mock$m.err" &
	pids+=($!)
	for _ in $(seq 1 100); do [[ -s "$OUT/mock$m.out" ]] && break; sleep 0.1; done
	if [[ -z "$port" ]]; then port=$(head -1 "$OUT/mock1.out" | sed -E 's/.*:([0-9]+)\/?$/\1/'); fi
done
coordinator="127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
echo "mock: $MOCKS processes on port $port; agents: $AGENTS × $STREAMS streams = $TOTAL; results in $OUT"

agent_pids=()
for i in $(seq 0 $((AGENTS - 1))); do
	"$BIN/stampede" serve --base-url "http://127.0.0.1:$port" --model mock-llm --tokenizer "$TOKENIZER" \
		--dataset-name random --random-input-len 16 --random-output-len "$TOKENS" --ignore-eos \
		--num-prompts "$TOTAL" --max-concurrency "$TOTAL" --request-rate inf --disable-tqdm \
		--save-result --save-detailed --result-dir "$OUT" --result-filename cluster.json \
		--cluster-size "$AGENTS" --cluster-index "$i" --coordinator "$coordinator" --cluster-timeout-sec 300 \
		--request-id-prefix "agent$i-" >"$OUT/agent$i.out" 2>"$OUT/agent$i.err" &
	agent_pids+=($!)
done
status=0
for i in "${!agent_pids[@]}"; do
	wait "${agent_pids[$i]}" || { echo "agent $i failed:"; tail -5 "$OUT/agent$i.err"; status=1; }
done
cleanup
wait "${pids[@]}" 2>/dev/null || true # the mocks flush their truth logs as they exit
pids=()
[[ $status == 0 ]] || exit $status

cat "$OUT/agent0.out" | sed -n '/Serving Benchmark Result/,$p'
grep -h '^stampede: ' "$OUT"/agent*.err
truths=$(ls "$OUT"/truth*.log | paste -sd, -)
"$BIN/clusterbench" -result "$OUT/cluster.json" -truth "$truths" -agent-log "$OUT/agent0.err"
