#!/usr/bin/env bash
# The report screenshot of docs/report.md (docs/report.png): a benchmark against the
# mock server with --server-metrics and --report, rendered by headless
# Chromium. Rerun with `make report-screenshot`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=${BIN:-bin}
out=${OUT:-docs/report.png}
go build -o "$bin/" ./cmd/stampede ./cmd/mockllm

browser=""
for b in chromium chromium-browser google-chrome; do
	if command -v "$b" >/dev/null; then browser=$b; break; fi
done
if [[ -z $browser ]]; then
	echo "report-screenshot: no chromium (apt-get install -y chromium)" >&2
	exit 1
fi

tok=datasets/tokenizer/testdata/tiny/tokenizer.json
work=$(mktemp -d)
log=$work/mock.log
"$bin/mockllm" --port 0 --model mock-llm --tokenizer "$tok" --ttft-ms 40 --itl-ms 10 --jitter-ms 2 \
	--mode decode-step --max-num-seqs 48 >"$log" 2>&1 &
mock=$!
trap 'kill -INT "$mock" 2>/dev/null || true; wait "$mock" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do
	grep -q 'listening on' "$log" && break
	sleep 0.1
done
url=$(sed -n 's/^mockllm listening on \(http:[^ ]*\)$/\1/p' "$log")
"$bin/stampede" serve --backend vllm --base-url "$url" --model mock-llm --tokenizer "$tok" \
	--dataset-name random --random-input-len 128 --random-output-len 48 --random-range-ratio 0.5 \
	--num-prompts 600 --request-rate 120 --seed 1 \
	--percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99 \
	--server-metrics --server-metrics-interval 0.25 --disable-tqdm \
	--report "$work/report.html" >/dev/null
mkdir -p "$(dirname "$out")"
"$browser" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
	--user-data-dir="$work/profile" --window-size=1280,1900 --screenshot="$root/$out" \
	"file://$work/report.html" 2>/dev/null
echo "report-screenshot: wrote $out"
