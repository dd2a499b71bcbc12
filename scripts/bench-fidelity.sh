#!/usr/bin/env bash
# Timestamp fidelity benchmark: the mock server pinned to CPU 0 logs when
# every token left (its truth log); the client, pinned to CPU 1, stamps
# every token; cmd/fidelity matches the two and reports the per-token
# and TTFT error (client stamp − server send time), client CPU per event
# and peak RSS, with kernel receive timestamps on and off. Over plain HTTP
# it then runs the floor (a bare epoll + recvmsg loop, cmd/fidelity/floor.go)
# with the same streams against the same mock, and prints stampede's CPU
# per token event, the floor's and their ratio (-floor=false skips it).
#
#   scripts/bench-fidelity.sh            # the full matrix (~2 minutes)
#   QUICK=1 scripts/bench-fidelity.sh    # 10k × 5 tok/s decode-step only
#   TLS=1 scripts/bench-fidelity.sh      # decode-step, plain then https://
#                                        # (mock --tls) side by side
#                                        # (bin/fidelity ... -tls -heapprofile
#                                        # FILE: the heap at its peak, and the
#                                        # memory classes at the RSS peak)
#   ANTHROPIC=1 scripts/bench-fidelity.sh # decode-step, the completions API
#                                        # then the Anthropic Messages API
#                                        # (-backend anthropic-messages) side
#                                        # by side
#   TTFT=1 scripts/bench-fidelity.sh     # where TTFT goes: 1,000 and 10,000
#                                        # released together, cold, warm
#                                        # (-warm-connections) and with a
#                                        # busy loop on the client's CPU
#
# Targets (decode-step, 10k streams): p99 token error < 0.5 ms, client CPU
# < 10 µs/event and ≤ 1.5 × the floor's, RSS < 64 MB; over TLS, 1,000
# streams × 50 tokens, the whole client CPU ≤ 2 × plain HTTP's. The vCPUs of shared machines stall for 10 ms
# and more; run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
mkdir -p "$BIN"
go build -o "$BIN/" ./cmd/mockllm ./cmd/fidelity

run() {
	taskset -c 1 "$BIN/fidelity" -mockllm "$BIN/mockllm" -server-cpu 0 -client-cpu 1 "$@" 2>/dev/null
	echo
}

if [[ -n "${TLS:-}" ]]; then
	for args in "-streams 1000 -tok-per-s 50 -tokens 50" "-streams 10000 -tok-per-s 5 -tokens 20"; do
		run $args -mode decode-step
		run $args -mode decode-step -tls
	done
	exit 0
fi

if [[ -n "${ANTHROPIC:-}" ]]; then
	for args in "-streams 1000 -tok-per-s 50 -tokens 50" "-streams 10000 -tok-per-s 5 -tokens 20"; do
		run $args -mode decode-step
		run $args -mode decode-step -backend anthropic-messages
	done
	exit 0
fi

if [[ -n "${TTFT:-}" ]]; then
	for args in "-streams 1000 -tok-per-s 50 -tokens 100" "-streams 10000 -tok-per-s 5 -tokens 20"; do
		for extra in "" -warm-connections -busy "-busy -warm-connections"; do
			run $args -mode decode-step $extra
		done
	done
	exit 0
fi

if [[ -n "${QUICK:-}" ]]; then
	run -streams 10000 -tok-per-s 5 -tokens 20 -mode decode-step
	exit 0
fi

for mode in decode-step per-stream; do
	for stamps in true false; do
		run -streams 1000 -tok-per-s 50 -tokens 100 -mode "$mode" -kernel-stamps="$stamps"
		run -streams 10000 -tok-per-s 5 -tokens 20 -mode "$mode" -kernel-stamps="$stamps"
	done
done
