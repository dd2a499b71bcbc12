#!/usr/bin/env bash
# Scale benchmark: one run per row of ROWS concurrent streams, each stream
# a lockstep decode step of the mock (--mode decode-step), judged token by
# token against the mocks' truth logs (cmd/clusterbench). It prints
# docs/scale.md's table for this machine, after the machine's description.
#
#   scripts/bench-scale.sh                       # 1,000 10,000 50,000 100,000
#   ROWS=1000,10000 scripts/bench-scale.sh       # some rows (commas or spaces)
#   TOKENS=30 scripts/bench-scale.sh             # longer streams
#
# A row of S streams runs N = max(2, ⌈S / PER_AGENT⌉) stampede agents (one
# --cluster-local command, as scripts/bench-cluster.sh runs them; one
# process holds at most ~19,900 sockets here) and N mocks, mock k on its
# own address 127.0.0.(k+1), each with its truth log; the agents get every
# mock in --server-urls, and request i goes to agent i mod N and to mock
# i mod N, so each agent talks to one mock and no destination takes more
# than S / N connections (28,000 ephemeral ports each). The step period of each row (ITL_MS_<S>, else 1000 ms) keeps the
# token events per second within what two cores carry, the mocks' writes
# and the agents' reads together: 1,000 streams at 20 tokens/s, 10,000 at
# 5, 50,000 and 100,000 at 1 (20,000 to 100,000 events/s). The mocks run
# with MOCK_FLAGS (default --arrival-stamps=false: each mock's packet tap
# would see every packet on loopback, its cost paid by every token write);
# MOCK_WRAP prefixes each mock's command (e.g. "chrt -f 10"). SOURCES
# (default 16) loopback source addresses per agent (127.1.I.1 on, every
# agent given all of them in --source-addresses; each agent's connections
# go to its own mock) spread the connections over that many 4-tuple spaces.
#
# Client CPU per token event is the agents' shard CPU time (the sidecar's
# client_cpu_s) over their token events. Client RSS comes from each
# agent's own memory (the sidecar's health.agents). Per open stream is
# measured while the streams are open: each agent samples its resident
# set every 200 ms with the streams open at that instant and keeps the
# sample with the most open; the agents' RSS at that sample, less the
# base's at its own for each agent (the mean of two agents running one
# request each, measured first), over the streams open then. Per request
# of the run comes from the peaks: after its run, each row runs the same
# agents and requests again with HELD (default 64; 0 skips it and the
# column) streams open per agent, against mocks of 1 ms steps; that run's
# peaks (VmHWM as each agent's share ended, before agent 0's merge) less
# the base's peak per agent, over the requests (the requests, the results,
# the partial). $STAMPEDE_CLUSTER_PIN reaches the launcher (docs/scale.md
# "Pinning"). Each run takes the benchmark lock, and each row's uptime at
# its start and end goes to its load.txt; run it on an otherwise idle
# machine.
set -euo pipefail
cd "$(dirname "$0")/.."

ROWS=${ROWS:-"1000 10000 50000 100000"}
TOKENS=${TOKENS:-20}
PER_AGENT=${PER_AGENT:-17000}
ITL_MS_1000=${ITL_MS_1000:-50}
ITL_MS_10000=${ITL_MS_10000:-200}
ITL_MS_50000=${ITL_MS_50000:-1000}
ITL_MS_100000=${ITL_MS_100000:-1000}
BIN=${BIN:-bin}
OUT=${OUT:-$(mktemp -d /tmp/stampede-scale.XXXXXX)}
TOKENIZER=${TOKENIZER:-datasets/tokenizer/testdata/tiny/tokenizer.json}
MOCK_FLAGS=${MOCK_FLAGS:---arrival-stamps=false}
SOURCES=${SOURCES:-16}
HELD=${HELD:-64}

mkdir -p "$BIN" "$OUT"
go build -o "$BIN/" ./cmd/stampede ./cmd/mockllm ./cmd/clusterbench
ulimit -n "$(ulimit -Hn)"

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# start_mocks K DIR: K mocks, mock k on 127.0.0.(k+1) with DIR/truthk.log;
# sets urls to their comma-separated base URLs.
start_mocks() {
	local k url list=""
	for k in $(seq 1 "$1"); do
		${MOCK_WRAP:-} "$BIN/mockllm" --host "127.0.0.$((k + 1))" --port 0 --mode decode-step --itl-ms "$itl_ms" --ttft-ms "${ttft_ms:-50}" $MOCK_FLAGS \
			--tokenizer "$TOKENIZER" --truth-log "$2/truth$k.log" >"$2/mock$k.out" 2>"$2/mock$k.err" &
		pids+=($!)
		for _ in $(seq 1 100); do [[ -s "$2/mock$k.out" ]] && break; sleep 0.1; done
		url=$(grep -oE 'http://[0-9.]+:[0-9]+' "$2/mock$k.out" | head -1)
		[[ -n "$url" ]] || { echo "mock $k did not start:"; cat "$2/mock$k.err"; exit 1; }
		list+="${list:+,}$url"
	done
	urls=$list
}

# stop_mocks [FILE]: stop the mocks, first writing their CPU seconds to FILE.
stop_mocks() {
	if [[ -n "${1:-}" ]]; then
		local p ticks=0
		for p in "${pids[@]}"; do
			ticks=$((ticks + $(awk '{print $14 + $15}' "/proc/$p/stat")))
		done
		python3 -c "print($ticks / $(getconf CLK_TCK))" >"$1"
	fi
	cleanup
	wait "${pids[@]}" 2>/dev/null || true # the mocks flush their truth logs as they exit
	pids=()
}

# agent_cmd REQUESTS [CONCURRENCY]: the benchmark every agent runs, all
# its requests open at once unless CONCURRENCY caps them.
agent_cmd() {
	echo "$BIN/stampede" serve --base-url "${urls%%,*}" --server-urls "$urls" --model mock-llm --tokenizer "$TOKENIZER" \
		--dataset-name random --random-input-len 16 --random-output-len "$TOKENS" --ignore-eos \
		--num-prompts "$1" --max-concurrency "${2:-$1}" --request-rate inf --disable-tqdm
}

# sources N: the --source-addresses list of a cluster of N agents, SOURCES
# loopback addresses for each (127.1.I.1 on). Every agent gets the whole
# list and binds its connections to all of it round-robin: with one
# source address, connect(2) looks for a free port among the ones the
# address already uses towards that mock, a search that grows with every
# connection; at 17,000 connections it took half the agents' CPU. An
# agent talks to its own mock alone, so the agents never share a 4-tuple
# space.
sources() {
	local i list=""
	for i in $(seq 0 $(($1 - 1))); do
		list+="${list:+,}127.1.$i.1-127.1.$i.$SOURCES"
	done
	echo "$list"
}

# run_agents N STREAMS DIR [CONCURRENCY]: one cluster of N agents started
# by --cluster-local; agent 0 saves DIR/run.json and its sidecar, whose
# health holds every agent's own memory; every agent's stderr goes to
# DIR/agents.err, each line prefixed "agent I: ".
run_agents() {
	local src=()
	if ((SOURCES > 0)); then src=(--source-addresses "$(sources "$1")"); fi
	# shellcheck disable=SC2046 # agent_cmd's words are the command's
	$(agent_cmd "$2" "${4:-}") --save-result --save-detailed --result-dir "$3" --result-filename run.json \
		--cluster-size "$1" --cluster-local --cluster-timeout-sec 300 "${src[@]}" >"$3/agent0.out" 2>"$3/agents.err" ||
		{ echo "the agents failed:"; tail -10 "$3/agents.err"; return 1; }
}

# base_kib: the base run's mean agent RSS at its most open sample and
# mean peak, KiB.
base_kib() {
	python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))["health"]["agents"]; print("%d KiB with its stream open (peak %d KiB)" % (sum(x["sampled"]["rss_at_most_open_bytes"] for x in a) // len(a) // 1024, sum(x["peak_rss_bytes"] for x in a) // len(a) // 1024))' "$OUT/base/run.stampede.json"
}

exec 9>/tmp/stampede-bench.lock

# The fixed base: two agents, one request each.
dir="$OUT/base"
mkdir -p "$dir"
itl_ms=50
flock 9
start_mocks 1 "$dir"
status=0
run_agents 2 2 "$dir" || status=$?
stop_mocks
flock -u 9
[[ $status == 0 ]] || exit $status

rows=()
for streams in ${ROWS//,/ }; do
	agents=$(((streams + PER_AGENT - 1) / PER_AGENT))
	((agents >= 2)) || agents=2
	var="ITL_MS_$streams"
	itl_ms=${!var:-1000}
	dir="$OUT/$streams"
	mkdir -p "$dir"
	echo "row $streams: $agents agents, $agents mocks, $itl_ms ms steps, $TOKENS tokens a stream; files in $dir" >&2
	flock 9
	echo "start $(uptime)" >"$dir/load.txt"
	start_mocks "$agents" "$dir"
	status=0
	run_agents "$agents" "$streams" "$dir" || status=$?
	stop_mocks "$dir/mock-cpu-s"
	echo "end $(uptime)" >>"$dir/load.txt"
	flock -u 9
	[[ $status == 0 ]] || exit $status
	held_args=()
	if ((HELD > 0)); then
		# The same agents and requests, HELD streams open per agent.
		held=$((HELD * agents))
		mkdir -p "$dir/held"
		itl_ms=1 ttft_ms=1
		flock 9
		start_mocks "$agents" "$dir/held"
		run_agents "$agents" "$streams" "$dir/held" "$held" || status=$?
		stop_mocks
		flock -u 9
		itl_ms=${!var:-1000} ttft_ms=50
		[[ $status == 0 ]] || exit $status
		held_args=(-held-result "$dir/held/run.json")
	fi
	sed -n '/Serving Benchmark Result/,$p' "$dir/agent0.out" >"$dir/block.txt"
	grep -E '^agent [0-9]+: stampede: ' "$dir/agents.err" >"$dir/health.txt" || true
	truths=$(ls "$dir"/truth*.log | sort -V | paste -sd, -)
	"$BIN/clusterbench" -result "$dir/run.json" -truth "$truths" -agent-log "$dir/agents.err" -mock-cpu-s "$(cat "$dir/mock-cpu-s")" | tee "$dir/clusterbench.txt" >&2
	rows+=("$("$BIN/clusterbench" -result "$dir/run.json" -truth "$truths" -agent-log "$dir/agents.err" \
		-row -mock-cpu-s "$(cat "$dir/mock-cpu-s")" "${held_args[@]}" -base-result "$OUT/base/run.json" -tok-per-s "$(python3 -c "print(1000/$itl_ms)")")")
done

{
	echo "Machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, Linux $(uname -r)," \
		"$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(go env GOVERSION);" \
		"$TOKENS tokens a stream; agent base RSS $(base_kib); load average $(cut -d' ' -f1-3 /proc/loadavg)."
	echo
	"$BIN/clusterbench" -header
	printf '%s\n' "${rows[@]}"
} | tee "$OUT/table.md"
echo "files in $OUT" >&2
