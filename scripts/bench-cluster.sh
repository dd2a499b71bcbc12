#!/usr/bin/env bash
# Cluster benchmark: AGENTS stampede agents (separate processes, on this
# host's loopback, started by one --cluster-local command, each pinned to
# its share of the CPUs) run one benchmark of AGENTS × STREAMS concurrent
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
echo "mock: $MOCKS processes on port $port; agents: $AGENTS × $STREAMS streams = $TOTAL; results in $OUT"

# Each agent draws its own request id prefix; clusterbench reads the
# index from the ids' trailing digits.
status=0
"$BIN/stampede" serve --base-url "http://127.0.0.1:$port" --model mock-llm --tokenizer "$TOKENIZER" \
	--dataset-name random --random-input-len 16 --random-output-len "$TOKENS" --ignore-eos \
	--num-prompts "$TOTAL" --max-concurrency "$TOTAL" --request-rate inf --disable-tqdm \
	--save-result --save-detailed --result-dir "$OUT" --result-filename cluster.json \
	--cluster-size "$AGENTS" --cluster-local --cluster-timeout-sec 300 >"$OUT/agent0.out" 2>"$OUT/agents.err" ||
	{ echo "the agents failed:"; tail -10 "$OUT/agents.err"; status=1; }
cleanup
wait "${pids[@]}" 2>/dev/null || true # the mocks flush their truth logs as they exit
pids=()
[[ $status == 0 ]] || exit $status

cat "$OUT/agent0.out" | sed -n '/Serving Benchmark Result/,$p'
grep -E '^agent [0-9]+: stampede: ' "$OUT/agents.err"
truths=$(ls "$OUT"/truth*.log | paste -sd, -)
"$BIN/clusterbench" -result "$OUT/cluster.json" -truth "$truths" -agent-log "$OUT/agents.err"
