#!/usr/bin/env bash
# Scale benchmark: one run per row of ROWS concurrent streams, each stream
# a lockstep decode step of the mock (--mode decode-step), judged token by
# token against the mocks' truth logs (cmd/clusterbench). It prints
# docs/scale.md's table for this machine, after the machine's description.
#
#   scripts/bench-scale.sh                       # 1,000 10,000 50,000 100,000
#   ROWS="1000 10000" scripts/bench-scale.sh     # some rows
#   TOKENS=30 scripts/bench-scale.sh             # longer streams
#
# A row of S streams runs N = max(2, ⌈S / PER_AGENT⌉) stampede agents (one
# cluster on loopback; one process holds at most ~19,900 sockets here) and
# N mocks, mock k on its own address 127.0.0.(k+1), each with its truth
# log; the agents get every mock in --server-urls, and request i goes to
# agent i mod N and to mock i mod N, so each agent talks to one mock and no
# destination takes more than S / N connections (28,000 ephemeral ports
# each). The step period of each row (ITL_MS_<S>, else 1000 ms) keeps the
# token events per second within what two cores carry, the mocks' writes
# and the agents' reads together: 1,000 streams at 20 tokens/s, 10,000 at
# 5, 50,000 and 100,000 at 1 (20,000 to 100,000 events/s). The mocks run
# with MOCK_FLAGS (default --arrival-stamps=false: each mock's packet tap
# would see every packet on loopback, its cost paid by every token write);
# MOCK_WRAP prefixes each mock's command (e.g. "chrt -f 10"). SOURCES
# (default 16) loopback source addresses per agent spread its connections
# over that many 4-tuple spaces.
#
# Client CPU per token event is the agents' shard CPU time (the sidecar's
# client_cpu_s) over their token events. Client RSS is split in two: after
# its run, each row runs the same agents and requests again with HELD
# (default 64) streams open per agent, against mocks of 1 ms steps; the
# sum of the agents' peak RSS less that second run's, over the streams
# not open in it, is the RSS per open stream; the second run's less one
# fixed base per agent (the peak RSS of an agent running one request,
# measured first), over the requests, is the RSS per request of the run
# (the prompts, the results, agent 0's merge). Each row takes the
# benchmark lock; run it on an otherwise idle machine.
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

# sources I: agent I's --source-addresses, SOURCES loopback addresses of
# its own (127.1.I.1 on), or nothing with SOURCES=0. With one source
# address, connect(2) looks for a free port among the ones the address
# already uses towards that mock, a search that grows with every
# connection; at 17,000 connections it took half the agents' CPU.
sources() {
	((SOURCES > 0)) && echo --source-addresses "127.1.$1.1-127.1.$1.$SOURCES"
}

# start_agents N STREAMS DIR [CONCURRENCY]: N agents of one cluster on
# this host, each under /usr/bin/time (peak RSS in DIR/agentI.time); sets
# agent_pids.
start_agents() {
	local i coordinator
	coordinator="127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
	agent_pids=()
	for i in $(seq 0 $(($1 - 1))); do
		/usr/bin/time -f '%M' -o "$3/agent$i.time" $(agent_cmd "$2" "${4:-}") \
			--save-result --save-detailed --result-dir "$3" --result-filename run.json \
			--cluster-size "$1" --cluster-index "$i" --coordinator "$coordinator" --cluster-timeout-sec 300 \
			--request-id-prefix "agent$i-" $(sources "$i") >"$3/agent$i.out" 2>"$3/agent$i.err" &
		agent_pids+=($!)
	done
}

wait_agents() {
	local i status=0
	for i in "${!agent_pids[@]}"; do
		wait "${agent_pids[$i]}" || { echo "agent $i failed:"; tail -5 "$1/agent$i.err"; status=1; }
	done
	return $status
}

exec 9>/tmp/stampede-bench.lock

# The fixed base: one agent, one request.
dir="$OUT/base"
mkdir -p "$dir"
itl_ms=50
flock 9
start_mocks 1 "$dir"
/usr/bin/time -f '%M' -o "$dir/agent.time" $(agent_cmd 1) >"$dir/agent.out" 2>"$dir/agent.err"
stop_mocks
flock -u 9
base_kb=$(tail -1 "$dir/agent.time")

rows=()
for streams in $ROWS; do
	agents=$(((streams + PER_AGENT - 1) / PER_AGENT))
	((agents >= 2)) || agents=2
	var="ITL_MS_$streams"
	itl_ms=${!var:-1000}
	dir="$OUT/$streams"
	mkdir -p "$dir"
	echo "row $streams: $agents agents, $agents mocks, $itl_ms ms steps, $TOKENS tokens a stream; files in $dir" >&2
	flock 9
	start_mocks "$agents" "$dir"
	start_agents "$agents" "$streams" "$dir"
	status=0
	wait_agents "$dir" || status=$?
	stop_mocks "$dir/mock-cpu-s"
	flock -u 9
	[[ $status == 0 ]] || exit $status
	# The same agents and requests, HELD streams open per agent.
	held=$((HELD * agents))
	mkdir -p "$dir/held"
	itl_ms=1 ttft_ms=1
	flock 9
	start_mocks "$agents" "$dir/held"
	start_agents "$agents" "$streams" "$dir/held" "$held"
	wait_agents "$dir/held" || status=$?
	stop_mocks
	flock -u 9
	itl_ms=${!var:-1000} ttft_ms=50
	[[ $status == 0 ]] || exit $status
	held_rss=$(for i in $(seq 0 $((agents - 1))); do tail -1 "$dir/held/agent$i.time"; done | paste -sd, -)
	sed -n '/Serving Benchmark Result/,$p' "$dir/agent0.out" >"$dir/block.txt"
	grep -h '^stampede: ' "$dir"/agent*.err >"$dir/health.txt" || true
	truths=$(ls "$dir"/truth*.log | sort -V | paste -sd, -)
	rss=$(for i in $(seq 0 $((agents - 1))); do tail -1 "$dir/agent$i.time"; done | paste -sd, -)
	"$BIN/clusterbench" -result "$dir/run.json" -truth "$truths" -agent-log "$dir/agent0.err" -mock-cpu-s "$(cat "$dir/mock-cpu-s")" | tee "$dir/clusterbench.txt" >&2
	rows+=("$("$BIN/clusterbench" -result "$dir/run.json" -truth "$truths" -agent-log "$dir/agent0.err" \
		-row -mock-cpu-s "$(cat "$dir/mock-cpu-s")" -rss-kb "$rss" -held-rss-kb "$held_rss" -held-streams "$held" -base-rss-kb "$base_kb" -tok-per-s "$(python3 -c "print(1000/$itl_ms)")")")
done

{
	echo "Machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, Linux $(uname -r)," \
		"$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(go env GOVERSION);" \
		"$TOKENS tokens a stream; agent base RSS $base_kb KiB."
	echo
	"$BIN/clusterbench" -header
	printf '%s\n' "${rows[@]}"
} | tee "$OUT/table.md"
echo "files in $OUT" >&2
