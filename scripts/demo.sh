#!/usr/bin/env bash
# make demo: build stampede and the mock server, start the mock on a free
# local port, run a real `vllm bench serve`-style benchmark against it, print
# the result block, stop the server. Needs only Go (and the Go module proxy
# once, for the Llama-3 tokenizer file that ships inside a Go module).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=${BIN:-bin}
echo "demo: building $bin/stampede and $bin/mockllm (a first build downloads modules and compiles for a few minutes)"
make --no-print-directory BIN="$bin" build >/dev/null

# The Llama-3 tokenizer.json ships inside github.com/daulet/tokenizers'
# test data; download that module into the cache (not into go.mod) and use
# its file. Without it the tiny committed tokenizer keeps the demo offline.
tok=testdata/tokenizers/llama3.json
if [[ ! -f $tok ]]; then
	work=$(mktemp -d)
	dir=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json github.com/daulet/tokenizers@v1.24.0 2>/dev/null |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' || true)
	rm -rf "$work"
	if [[ -n "$dir" && -f "$dir/test/data/Meta-Llama-3-8B-Instruct.json" ]]; then
		mkdir -p testdata/tokenizers
		install -m 0644 "$dir/test/data/Meta-Llama-3-8B-Instruct.json" "$tok"
	else
		tok=datasets/tokenizer/testdata/tiny/tokenizer.json
	fi
fi
echo "demo: tokenizer $tok"

log=$(mktemp)
"$bin/mockllm" --port 0 --model mock-llm --tokenizer "$tok" --ttft-ms 40 --itl-ms 10 \
	--mode decode-step >"$log" 2>&1 &
mock=$!
stop_mock() {
	kill -INT "$mock" 2>/dev/null || true
	wait "$mock" 2>/dev/null || true
}
trap 'stop_mock; rm -f "$log"' EXIT
for _ in $(seq 100); do
	grep -q 'listening on' "$log" && break
	sleep 0.1
done
url=$(sed -n 's/^mockllm listening on \(http:[^ ]*\)$/\1/p' "$log")
if [[ -z "$url" ]]; then
	echo "demo: the mock server did not start:" >&2
	cat "$log" >&2
	exit 1
fi
echo "demo: mock server at $url"
cmd=("$bin/stampede" serve --backend vllm --base-url "$url" --model mock-llm --tokenizer "$tok" \
	--dataset-name random --random-input-len 256 --random-output-len 64 \
	--num-prompts 1000 --max-concurrency 200 --request-rate inf \
	--percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99)
echo "demo: ${cmd[*]}"
"${cmd[@]}"
stop_mock
echo
echo "demo: the mock server's own account of what it sent (true TTFT/ITL, its lateness):"
grep -v 'listening on' "$log" || true
