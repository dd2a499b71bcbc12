#!/usr/bin/env bash
# The figures of issue 15, each next to its target, through the CLI and the
# Go benchmarks: tokenizer load, random prompts (sampling alone, via
# `stampede dataset`), and the per-event client CPU and RSS at 10,000
# streams (scripts/bench-fidelity.sh, QUICK). Run it on an idle machine;
# on a shared one compare the CPU figures, not wall time.
#
#   scripts/bench-cli.sh                 # everything (~2 minutes idle)
#   PROMPTS=20000 scripts/bench-cli.sh   # fewer random prompts
#   SKIP_FIDELITY=1 scripts/bench-cli.sh
#   SKIP_RSS=1 scripts/bench-cli.sh      # no 10k-stream serve run
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
PROMPTS=${PROMPTS:-100000}
TOKDIR=${STAMPEDE_TOKENIZERS_DIR:-testdata/tokenizers}
mkdir -p "$BIN"
go build -o "$BIN/" ./cmd/stampede ./cmd/mockllm
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

row() { printf '%-52s %-34s %s\n' "$1" "$2" "$3"; }
row "figure" "measured" "target"

# 1. Tokenizer load: CPU per load (and wall) from the Go benchmark.
if [[ -f $TOKDIR/llama3.json ]]; then
	# Each tokenizer twice: the first load (binary cache off) and a load
	# from the binary cache (datasets/tokenizer/bincache.go).
	STAMPEDE_TOKENIZERS_DIR=$(cd "$TOKDIR" && pwd) go test -run '^$' -bench 'Load/(llama3|qwen3)(-cached)?$' -benchtime 10x -count 1 \
		./datasets/tokenizer/ >"$tmp/load" 2>&1 || { cat "$tmp/load"; exit 1; }
	while read -r name _ ns _ cpu _; do
		name=${name#BenchmarkLoad/}
		name=${name%-[0-9]*}
		case $name in
		*-cached) name="${name%-cached} (cached)" ;;
		*) name="$name (first load, no cache)" ;;
		esac
		row "tokenizer load $name" "$(awk -v n="$ns" -v c="$cpu" 'BEGIN{printf "%.0f ms wall, %.0f ms CPU", n/1e6, c}')" "<= 100 ms"
	done < <(grep '^BenchmarkLoad/' "$tmp/load")

	# RSS of the process holding the Llama-3 tokenizer alone: the first
	# load (which writes the binary cache) and one from the cache, which
	# the serve run below uses too.
	export STAMPEDE_TOKENIZER_CACHE=$tmp/tokcache
	for load in "first load" cached; do
		echo '"x"' | /usr/bin/time -f '%M' -o "$tmp/tokrss" "$BIN/stampede" tokenize --tokenizer "$TOKDIR/llama3.json" >/dev/null
		row "RSS with the Llama-3 tokenizer loaded ($load)" "$(awk '{printf "%.1f MB", $1/1024}' "$tmp/tokrss")" "(part of <= 64 MB at 10k streams)"
	done

	# 2. Random prompts: sampling alone.
	/usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$BIN/stampede" dataset --model m --tokenizer "$TOKDIR/llama3.json" \
		--dataset-name random --random-input-len 1024 --num-prompts "$PROMPTS" --seed 0 -o "$tmp/prompts.jsonl" 2>"$tmp/log"
	read -r wall user sys rss <"$tmp/time"
	text=$(sed -n 's/.*(\([0-9]*\) bytes of prompt text).*/\1/p' "$tmp/log")
	row "$PROMPTS x 1,024-token random prompts" "$(awk -v w="$wall" -v u="$user" -v s="$sys" 'BEGIN{printf "%.1f s wall, %.1f s CPU (%.1fx)", w, u+s, (u+s)/w}')" "<= 10 s wall (100,000 prompts)"
	# A completions body is the prompt JSON-escaped plus ~200 bytes of
	# fields: the bound is 2 × (text + body) per prompt.
	row "  RSS per prompt (sampling)" "$(awk -v r="$rss" -v n="$PROMPTS" 'BEGIN{printf "%.1f KB", r*1024/n/1000}')" \
		"$(awk -v t="$text" -v n="$PROMPTS" 'BEGIN{printf "<= %.1f KB (2 x (text + body))", 2*(2*t/n+200)/1000}')"

	# 4. Peak RSS of `stampede serve` at 10,000 streams holding the Llama-3
	# tokenizer (from the binary cache the loads above filled), against
	# mockllm stepping every 200 ms, 20 tokens a stream: the QUICK
	# fidelity shape, through the CLI.
	if [[ -z ${SKIP_RSS:-} ]]; then
		ulimit -n 20000 2>/dev/null || true
		port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 18733)
		"$BIN/mockllm" -port "$port" -mode decode-step -itl-ms 200 >"$tmp/mock.log" 2>&1 &
		mock=$!
		for _ in $(seq 50); do
			(echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
			sleep 0.1
		done
		/usr/bin/time -f '%M' -o "$tmp/serverss" "$BIN/stampede" serve --base-url "http://127.0.0.1:$port" --model mock-llm \
			--tokenizer "$TOKDIR/llama3.json" --dataset-name random --random-input-len 32 --random-output-len 20 --ignore-eos \
			--num-prompts 10000 --max-concurrency 10000 --request-rate inf >"$tmp/serve.out" 2>"$tmp/serve.err" || {
			kill "$mock"
			tail -5 "$tmp/serve.err"
			exit 1
		}
		kill "$mock"
		ok=$(sed -n 's/^Successful requests: *\([0-9]*\).*/\1/p' "$tmp/serve.out")
		row "peak RSS, 10k streams, Llama-3 tokenizer (serve)" "$(awk -v r="$(cat "$tmp/serverss")" 'BEGIN{printf "%.1f MB", r/1024}') ($ok ok)" "<= 64 MB"
	fi
else
	echo "bench-cli: $TOKDIR/llama3.json absent (make tokenizers); tokenizer and prompt figures skipped" >&2
fi

# 3 and 4. Per-event CPU and RSS at 10,000 streams, decode-step.
if [[ -z ${SKIP_FIDELITY:-} ]]; then
	QUICK=1 bash scripts/bench-fidelity.sh >"$tmp/fid" 2>&1 || { cat "$tmp/fid"; exit 1; }
	line=$(grep 'client CPU' "$tmp/fid" | head -1)
	row "client CPU per token event, 10k streams" "$(sed -n 's/.*= \([0-9.]*\) µs\/event.*/\1 µs/p' <<<"$line")" "<= 7 µs (kernel included)"
	row "peak RSS, 10k streams (no tokenizer loaded)" "$(sed -n 's/.*peak RSS \([0-9.]* MB\).*/\1/p' <<<"$line")" "<= 64 MB with the tokenizer"
fi
