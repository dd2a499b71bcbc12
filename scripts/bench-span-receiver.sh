#!/usr/bin/env bash
# The span receiver under a span bomb: a stampede run with --otlp-receiver
# against the mock, which exports its real spans over gRPC, while a sender
# posts four OTLP/HTTP exports at once, each 16 MiB of empty spans (~8 M)
# in ~16 kB of gzip, as soon as the receiver listens. Prints the client's
# peak RSS (/usr/bin/time), its wall time, and its span lines (how many
# requests joined, what was refused).
#
#   scripts/bench-span-receiver.sh                    # this tree's stampede
#   STAMPEDE=/path/to/stampede scripts/bench-span-receiver.sh   # another build
#   PROMPTS=1200 RATE=50 BOMBS=4 scripts/bench-span-receiver.sh
#
# Target: peak RSS within ~100 MB of a run without the bombs (BOMBS=0), every
# request joined.
set -euo pipefail
cd "$(dirname "$0")/.."

PROMPTS=${PROMPTS:-1200}
RATE=${RATE:-50}
BOMBS=${BOMBS:-4}
work=$(mktemp -d)
mock=""
cleanup() {
	if [[ -n "$mock" ]]; then kill -INT "$mock" 2>/dev/null || true; wait "$mock" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/" ./cmd/mockllm
stampede=${STAMPEDE:-}
if [[ -z "$stampede" ]]; then
	go build -o "$work/" ./cmd/stampede
	stampede=$work/stampede
fi
tok=datasets/tokenizer/testdata/tiny/tokenizer.json

# One ExportTraceServiceRequest of empty spans (two bytes each) just under
# the receiver's 16 MiB body limit, gzipped.
python3 - "$work/bomb" <<'PY'
import sys
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)
n = ((16 << 20) - 16) // 2
scope = b"\x12\x00" * n
rs = b"\x12" + varint(len(scope)) + scope
export = b"\x0a" + varint(len(rs)) + rs
open(sys.argv[1], "wb").write(export)
PY
gzip -9 "$work/bomb"
echo "bomb: $(stat -c %s "$work/bomb.gz") bytes of gzip, $(( (16 << 20) / 2 )) spans"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$work/mockllm" --port 0 --tokenizer "$tok" --ttft-ms 20 --itl-ms 5 \
	--otlp-traces-endpoint "127.0.0.1:$port" >"$work/mock.log" 2>&1 &
mock=$!
for _ in $(seq 100); do
	grep -q 'listening on' "$work/mock.log" && break
	sleep 0.1
done
url=$(sed -n 's/^mockllm listening on \(http:[^ ]*\)$/\1/p' "$work/mock.log")

bomber() {
	# The receiver listens once the ready check is done.
	until curl -s -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null; do sleep 0.01; done
	for _ in $(seq "$BOMBS"); do
		curl -s -o /dev/null -w 'bomb answered %{http_code}\n' -H 'Content-Type: application/x-protobuf' \
			-H 'Content-Encoding: gzip' --data-binary @"$work/bomb.gz" "http://127.0.0.1:$port/v1/traces" &
	done
	wait
}
bomber_pid=""
if [[ "$BOMBS" -gt 0 ]]; then
	bomber >"$work/bombs" &
	bomber_pid=$!
fi
start=$(date +%s.%N)
/usr/bin/time -f '%M' -o "$work/rss" "$stampede" serve --base-url "$url" --model mock-llm --tokenizer "$tok" \
	--dataset-name random --random-input-len 32 --random-output-len 32 --num-prompts "$PROMPTS" \
	--request-rate "$RATE" --disable-tqdm --otlp-receiver "127.0.0.1:$port" >"$work/out" 2>"$work/err"
end=$(date +%s.%N)
if [[ -n "$bomber_pid" ]]; then
	wait "$bomber_pid" || true
	sort "$work/bombs" | uniq -c
fi
grep -E '^(Server spans|stampede:)' "$work/err" | sed 's/^stampede: .*\(span receiver[^;]*\).*/health: \1/'
awk -v s="$start" -v e="$end" -v k="$(cat "$work/rss")" 'BEGIN{printf "client peak RSS %.0f MB, wall %.1f s\n", k/1024, e-s}'
