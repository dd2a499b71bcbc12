#!/usr/bin/env bash
# Hostile servers: stampede against the mock's answers that never end
# (flood, endless-line, huge-headers), N streams at once (default 1,000),
# the mock pinned to CPU 0 and stampede to CPU 1. For each fault, one run
# with --request-timeout-sec 3 and one stopped by SIGINT; cmd/hostile
# reports from the mock's truth log how long after its deadline (or the
# signal) the client closed each connection, the client's peak RSS, the
# failures it counted and the requests the mock saw twice.
#
#   scripts/bench-hostile.sh                 # 1,000 streams
#   STREAMS=200 scripts/bench-hostile.sh
#   TLS=1 scripts/bench-hostile.sh           # the same over https:// (mock --tls)
#
# Targets: deadline and Ctrl-C honoured within 100 ms p99; peak RSS
# <= 200 MB with 1,000 endless lines; zero requests sent twice.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
mkdir -p "$BIN"
go build -o "$BIN/" ./cmd/stampede ./cmd/mockllm ./cmd/hostile

cpus=()
if [[ $(nproc) -ge 2 ]]; then
	cpus=(-server-cpu 0 -client-cpu 1)
fi
"$BIN/hostile" -stampede "$BIN/stampede" -mockllm "$BIN/mockllm" \
	-streams "${STREAMS:-1000}" "${cpus[@]}" ${TLS:+-tls} "$@"
