#!/usr/bin/env bash
# Runs the docs' examples of sweep, --num-runs, slo, compare and
# --steady-state against two local mocks (ITL 10 ms and 12 ms; 32
# sequences at once, TTFT 20 ms) and prints each command's output.
# Usage: bash scripts/analysis-examples.sh [WORKDIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
go build -o "$work/stampede" "$root/cmd/stampede"
go build -o "$work/mockllm" "$root/cmd/mockllm"
cd "$work"
./mockllm --port 18411 --ttft-ms 20 --itl-ms 10 --max-num-seqs 32 >mock10.log 2>&1 & m10=$!
./mockllm --port 18412 --ttft-ms 20 --itl-ms 12 --max-num-seqs 32 >mock12.log 2>&1 & m12=$!
trap 'kill $m10 $m12' EXIT
sleep 1
common=(--model mock-llm --dataset-name random --random-input-len 32 --random-output-len 16 --disable-tqdm)
show() { echo; echo "\$ stampede $*" | sed "s|--base-url http://127.0.0.1:1841[12] ||"; }

show sweep --base-url http://127.0.0.1:18411 "${common[@]}" --num-prompts 200 --goodput ttft:100 --result-dir sweep-out --sweep max-concurrency=8,32,128
./stampede sweep --base-url http://127.0.0.1:18411 "${common[@]}" --num-prompts 200 --goodput ttft:100 --result-dir sweep-out --sweep max-concurrency=8,32,128 2>/dev/null
ls sweep-out

show serve --base-url http://127.0.0.1:18411 "${common[@]}" --num-prompts 200 --max-concurrency 16 --num-runs 3
./stampede serve --base-url http://127.0.0.1:18411 "${common[@]}" --num-prompts 200 --max-concurrency 16 --num-runs 3 2>/dev/null | sed -n '/Repeated runs/,$p'

show slo --base-url http://127.0.0.1:18411 "${common[@]}" --num-prompts 200 --goodput ttft:100 --slo-start 8
./stampede slo --base-url http://127.0.0.1:18411 "${common[@]}" --num-prompts 200 --goodput ttft:100 --slo-start 8 2>/dev/null

for r in a:18411 b:18411 slow:18412; do
	./stampede serve --base-url "http://127.0.0.1:${r#*:}" "${common[@]}" --num-prompts 200 --max-concurrency 16 \
		--save-result --save-detailed --result-filename "${r%%:*}.json" >/dev/null 2>&1
done
show compare a.json b.json slow.json
./stampede compare a.json b.json slow.json

show serve --base-url http://127.0.0.1:18411 "${common[@]}" --num-prompts 400 --max-concurrency 32 --steady-state
./stampede serve --base-url http://127.0.0.1:18411 "${common[@]}" --num-prompts 400 --max-concurrency 32 --steady-state 2>/dev/null | sed -n '/Steady State/,$p'
