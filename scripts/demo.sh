#!/usr/bin/env bash
# Runs what exists of stampede end to end. Until the drop-in CLI lands this
# runs the wire-layer benchmarks and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "stampede demo: the drop-in CLI is not built yet; running the wire-layer parser benchmarks instead"
go test -run='^$' -bench=. -benchmem -benchtime=200ms ./httpwire/ ./sse/
