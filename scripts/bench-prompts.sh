#!/usr/bin/env bash
# Measures what a run's prompts cost in memory and CPU (docs/scale.md,
# "Prompt memory"), with the Llama-3 tokenizer of testdata/tokenizers/:
#
#   1. --dry-run of DRY_SMALL and DRY_LARGE random prompts of 8,192 tokens
#      (default 20,000 and 100,000): peak RSS and CPU, by /usr/bin/time -v;
#   2. the encode floor: BenchmarkSampleRandom8192 (streaming
#      FLOOR_PROMPTS such prompts) against BenchmarkEncodeFloor (one encode
#      pass of the same text on every core), their CPU per prompt and the
#      ratio;
#   3. real runs against bin/mockllm of MOCK_RUNS requests each (default
#      "50000 200000"; concurrency 500, input 64, output 4, --ignore-eos):
#      peak RSS, and the health line's split of it.
#
# Usage: scripts/bench-prompts.sh   (env: DRY_SMALL, DRY_LARGE,
#        FLOOR_PROMPTS, MOCK_RUNS, STEPS="dry floor mock")
set -euo pipefail
cd "$(dirname "$0")/.."

DRY_SMALL=${DRY_SMALL:-20000}
DRY_LARGE=${DRY_LARGE:-100000}
FLOOR_PROMPTS=${FLOOR_PROMPTS:-3000}
MOCK_RUNS=${MOCK_RUNS:-50000 200000}
STEPS=${STEPS:-dry floor mock}
TOKENIZER=testdata/tokenizers/llama3.json

if [[ ! -f "$TOKENIZER" ]]; then
	bash scripts/fetch-tokenizers.sh
fi
make build >/dev/null

work=$(mktemp -d)
server_pid=""
cleanup() {
	if [[ -n "$server_pid" ]]; then kill -INT "$server_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

# timed NAME CMD... runs CMD under /usr/bin/time -v and prints its peak RSS
# and CPU seconds.
timed() {
	local name=$1
	shift
	/usr/bin/time -v "$@" >"$work/$name.out" 2>"$work/$name.err"
	awk -v name="$name" '
		/Maximum resident set size/ { rss = $NF }
		/User time/ { user = $NF }
		/System time/ { sys = $NF }
		/Elapsed \(wall clock\)/ { wall = $NF }
		END { printf "%-24s peak RSS %7.1f MB, CPU %7.2f s (user %s, sys %s), wall %s\n", name, rss / 1024, user + sys, user, sys, wall }
	' "$work/$name.err"
}

if [[ " $STEPS " == *" dry "* ]]; then
	echo "== --dry-run, random prompts of 8,192 tokens"
	for n in "$DRY_SMALL" "$DRY_LARGE"; do
		timed "dry-run $n" bin/stampede --model m --tokenizer "$TOKENIZER" --dataset-name random \
			--random-input-len 8192 --num-prompts "$n" --dry-run
	done
fi

if [[ " $STEPS " == *" floor "* ]]; then
	echo "== sampling against the encode floor ($FLOOR_PROMPTS prompts of 8,192 tokens)"
	STAMPEDE_FLOOR_PROMPTS=$FLOOR_PROMPTS go test -run '^$' -bench 'SampleRandom8192|EncodeFloor' \
		-benchtime 3x -count 3 ./datasets/ | tee "$work/floor.txt" | grep '^Benchmark'
	awk '
		/^BenchmarkSampleRandom8192/ { s += $(NF-1); ns++ }
		/^BenchmarkEncodeFloor/ { f += $(NF-1); nf++ }
		END { if (ns && nf) printf "sampling %.1f cpu-µs/prompt, floor %.1f: %.2f× the floor\n", s/ns, f/nf, (s/ns)/(f/nf) }
	' "$work/floor.txt"
fi

if [[ " $STEPS " == *" mock "* ]]; then
	echo "== runs against bin/mockllm (concurrency 500, input 64, output 4)"
	bin/mockllm --port 0 --itl-ms 1 --model m >"$work/mock.out" 2>"$work/mock.err" &
	server_pid=$!
	for _ in $(seq 100); do
		if grep -q 'listening on' "$work/mock.out" 2>/dev/null; then break; fi
		sleep 0.1
	done
	url=$(grep -o 'http://[^ ]*' "$work/mock.out" | head -1)
	for n in $MOCK_RUNS; do
		timed "mock run $n" bin/stampede --base-url "$url" --model m --tokenizer "$TOKENIZER" \
			--dataset-name random --random-input-len 64 --random-output-len 4 --ignore-eos \
			--max-concurrency 500 --num-prompts "$n"
		grep -o 'peak RSS [^;]*' "$work/mock run $n.err" | sed 's/^/    during the run: /'
	done
fi
