#!/usr/bin/env bash
# stampede against llama.cpp's llama-server, a real third-party server run
# as its authors ship it: built from the llama.cpp source that the npm
# package node-llama-cpp carries (llama/gitRelease.bundle), serving a tiny
# random-weight Llama-3-architecture GGUF with the real Llama-3 vocabulary
# (scripts/compat-gguf.py, through llama.cpp's own gguf-py).
#
# The server runs on 127.0.0.1 only, with --parallel 64 --metrics and
# continuous batching. Before the runs the script records what the server
# answers on its own terms: /v1/models, /tokenize and /detokenize in both
# llama.cpp's bodies and the ones stampede sends, the /metrics series, and
# how its connections keep alive (headers of a streamed answer, a second
# request on the same connection, the idle timeout, the request limit).
# Then one stampede run per concurrency (CONCS, default 64 and 256) with
# the random dataset, each checked from the result JSON and the server's
# /metrics counters (before and after):
#
#   exit        stampede exited 0
#   completed   every prompt completed; failed 0 (else the error texts)
#   output      every output length is OUT_LEN (random forces ignore_eos)
#   predicted   llamacpp:tokens_predicted_total grew by stampede's
#               total_output_tokens
#   prompt      llamacpp:prompt_tokens_total + prompt_tokens_cached_total
#               grew by stampede's input lengths plus one BOS for each
#               request the server took (the server tokenizes with
#               add_special)
#   idle        the server is idle afterwards (requests_processing and
#               requests_deferred 0)
#   connections how the requests met the server's connections, from the
#               sidecar: requests on a fresh connection, re-sent ones,
#               connections dropped before a response, shards that
#               stopped reusing (a count, never a failure: llama-server
#               closes each connection after a streamed answer)
#
# llama-server puts usage inside its last token chunk, where vllm bench
# serve, and so stampede, does not read it: output lengths come from
# tokenizing the answer's text, and a random model's text tokenizes to
# other tokens than it was sampled as. When the server generated exactly
# OUT_LEN for every request it took, output and predicted say "diff" with
# both counts instead of failing.
#
# One verdict line per check (ok, diff or FAIL); exit 1 if any fails. The server is
# stopped on exit (TERM, then KILL after STOP_SEC).
#
# What it needs, it installs: cmake, g++, git, jq, curl and python3-numpy
# (for /usr/bin/python3) with apt-get, node-llama-cpp with npm into the
# cache. llama-server is built once per llama.cpp commit (nice 19, one job:
# about 30 minutes of one core) into the cache, outside the repository:
# ${STAMPEDE_COMPAT_CACHE:-$HOME/.cache/stampede-compat}; the GGUF lives
# there too. The Llama-3 tokenizer comes from scripts/fetch-tokenizers.sh.
#
# Usage: scripts/compat-llamacpp.sh   (env: CONCS, PROMPTS_PER_CONC, IN_LEN,
#        OUT_LEN, SLOTS, SLOT_CTX, THREADS, RUN_TIMEOUT, JOBS, BIN,
#        STAMPEDE_COMPAT_CACHE, NODE_LLAMA_CPP_VERSION, WHOLE_CHARS, KEEP=1
#        keeps the work directory)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

CACHE=${STAMPEDE_COMPAT_CACHE:-$HOME/.cache/stampede-compat}
# 3.21.1 is the release whose lock npm resolves on this platform.
NODE_LLAMA_CPP_VERSION=${NODE_LLAMA_CPP_VERSION:-3.21.1}
CONCS=${CONCS:-64 256}
PROMPTS_PER_CONC=${PROMPTS_PER_CONC:-4}
IN_LEN=${IN_LEN:-128}
OUT_LEN=${OUT_LEN:-64}
SLOTS=${SLOTS:-64}
# Per-slot context: the model's training context. The server divides -c
# among its slots.
SLOT_CTX=${SLOT_CTX:-2048}
THREADS=${THREADS:-$(nproc)}
# A run on a busy machine can take many times its idle length.
RUN_TIMEOUT=${RUN_TIMEOUT:-1800}
STOP_SEC=${STOP_SEC:-10}
JOBS=${JOBS:-1}
BIN=${BIN:-bin}
# WHOLE_CHARS=1: the server never samples a token that is not a whole
# UTF-8 character. A random model draws them as often as any token, and a
# text ending inside a character makes llama-server's output parser fail
# the stream (an error event: "The model produced output that does not
# match the expected Content-only format"); WHOLE_CHARS=0 shows that.
WHOLE_CHARS=${WHOLE_CHARS:-1}
MODEL=stampede-compat-llama3-tiny
PY=/usr/bin/python3
LOCK=${LOCK:-/tmp/stampede-bench.lock}

say() { echo "compat: $*"; }
die() { echo "compat: $*" >&2; exit 1; }

# --- what the script needs -------------------------------------------------
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v make >/dev/null || need+=(make)
command -v g++ >/dev/null || need+=(g++)
command -v git >/dev/null || need+=(git)
command -v jq >/dev/null || need+=(jq)
command -v curl >/dev/null || need+=(curl)
command -v npm >/dev/null || need+=(npm)
[[ -x $PY ]] && "$PY" -c 'import numpy' 2>/dev/null || need+=(python3-numpy)
[[ -x $PY ]] && "$PY" -c 'import yaml' 2>/dev/null || need+=(python3-yaml)
if ((${#need[@]})); then
	say "installing ${need[*]} (apt-get)"
	sudo=()
	if (($(id -u) != 0)); then sudo=(sudo); fi
	"${sudo[@]}" apt-get update -q >/dev/null || die "apt-get update failed"
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q "${need[@]}" >/dev/null ||
		die "apt-get install ${need[*]} failed"
fi

# --- llama.cpp's source, from node-llama-cpp --------------------------------
mkdir -p "$CACHE"
npm_dir=$CACHE/node-llama-cpp-$NODE_LLAMA_CPP_VERSION
bundle=$npm_dir/node_modules/node-llama-cpp/llama/gitRelease.bundle
if [[ ! -f $bundle ]]; then
	say "npm install node-llama-cpp@$NODE_LLAMA_CPP_VERSION into $npm_dir"
	mkdir -p "$npm_dir"
	[[ -f $npm_dir/package.json ]] || echo '{"private":true}' >"$npm_dir/package.json"
	# --ignore-scripts: its install step would fetch or build binaries of
	# its own; only the bundle is wanted.
	(cd "$npm_dir" && npm install --no-audit --no-fund --ignore-scripts --silent -E \
		"node-llama-cpp@$NODE_LLAMA_CPP_VERSION") || die "npm install node-llama-cpp failed"
	[[ -f $bundle ]] || die "node-llama-cpp@$NODE_LLAMA_CPP_VERSION has no llama/gitRelease.bundle"
fi
commit=$(git bundle list-heads "$bundle" | awk '$2 == "HEAD" {print $1; exit}')
[[ -n $commit ]] || die "no HEAD in $bundle"
llama=$CACHE/llama.cpp-${commit:0:12}
server=$llama/build/bin/llama-server
if [[ ! -x $server ]]; then
	if [[ ! -d $llama/src/.git ]]; then
		rm -rf "$llama/src"
		mkdir -p "$llama"
		git clone -q "$bundle" "$llama/src" 2>/dev/null || die "git clone $bundle failed"
		git -C "$llama/src" checkout -q "$commit"
	fi
	say "building llama-server ${commit:0:12} in $llama/build (nice 19, -j$JOBS; log: $llama/build.log)"
	# No web UI (it would be built with npm or downloaded), no OpenSSL, no
	# tests or examples: the server and what it links.
	if ! {
		nice -n 19 cmake -S "$llama/src" -B "$llama/build" -DCMAKE_BUILD_TYPE=Release \
			-DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
			-DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_OPENSSL=OFF \
			-DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DGGML_CCACHE=OFF &&
			nice -n 19 cmake --build "$llama/build" --target llama-server -j"$JOBS"
	} >"$llama/build.log" 2>&1; then
		tail -n 30 "$llama/build.log" >&2
		die "building llama-server failed (log: $llama/build.log)"
	fi
	[[ -x $server ]] || die "the build left no $server"
else
	say "reusing $server (${commit:0:12})"
fi

# --- the model ---------------------------------------------------------------
tok=testdata/tokenizers/llama3.json
tok_config=testdata/tokenizers/meta-llama-3-8b-instruct/tokenizer_config.json
if [[ ! -f $tok || ! -f $tok_config ]]; then
	say "fetching the tokenizers (scripts/fetch-tokenizers.sh)"
	bash scripts/fetch-tokenizers.sh >/dev/null
fi
# A new writer or tokenizer writes a new file.
model_key=$(cat scripts/compat-gguf.py "$tok" "$tok_config" | sha256sum | cut -c1-12)
gguf=$CACHE/models/llama3-tiny-$model_key.gguf
if [[ ! -f $gguf ]]; then
	mkdir -p "$CACHE/models"
	say "writing $gguf"
	PYTHONPATH=$llama/src/gguf-py "$PY" scripts/compat-gguf.py "$tok" "$gguf.tmp" "$tok_config" >/dev/null ||
		die "compat-gguf.py failed"
	mv "$gguf.tmp.partial-utf8" "$gguf.partial-utf8"
	mv "$gguf.tmp" "$gguf"
fi

mkdir -p "$BIN"
go build -o "$BIN/" ./cmd/stampede

# --- the server ----------------------------------------------------------------
# One benchmark at a time on this machine; the build above ran outside it.
if [[ -z "${COMPAT_LOCKED:-}" ]]; then
	exec 9>"$LOCK"
	flock 9
fi

work=$(mktemp -d /tmp/compat-llamacpp.XXXXXX)
# shellcheck source=scripts/compat-lib.sh
source scripts/compat-lib.sh
trap cleanup EXIT
port=$(free_port)
url=http://127.0.0.1:$port
srv=(nice -n 10 "$server" -m "$gguf" --alias "$MODEL" --host 127.0.0.1 --port "$port"
	--parallel "$SLOTS" --cont-batching -c $((SLOTS * SLOT_CTX)) --metrics
	--threads "$THREADS" --no-webui)
say "${srv[*]}"
if [[ $WHOLE_CHARS == 1 ]]; then
	say "and --logit-bias ID-inf for the $(wc -l <"$gguf.partial-utf8") tokens that are not whole UTF-8 characters"
	while read -r id; do srv+=(--logit-bias "$id-inf"); done <"$gguf.partial-utf8"
fi
"${srv[@]}" >"$work/server.log" 2>&1 &
server_pid=$!
ready=""
for _ in $(seq 1200); do
	kill -0 "$server_pid" 2>/dev/null || break
	if [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url/health") == 200 ]]; then ready=1; break; fi
	sleep 0.1
done
if [[ -z $ready ]]; then
	tail -n 30 "$work/server.log" >&2
	die "llama-server did not become healthy on $url"
fi
say "llama-server healthy on $url ($(grep -m1 -o 'build: [^ ]* ([^)]*)' "$work/server.log" || echo "build ${commit:0:12}"))"

# --- what the server answers ---------------------------------------------------
post() { # post PATH BODY: prints the status and the body
	curl -sS --max-time 30 -H 'Content-Type: application/json' -w '  -> HTTP %{http_code}\n' -d "$2" "$url$1"
}
echo
echo "== /v1/models"
curl -sS --max-time 30 "$url/v1/models" | jq -c '.data[0] | {id, object, owned_by}'
echo "== /tokenize and /detokenize"
for body in \
	'{"content": "Hello, world", "add_special": false}' \
	'{"content": "Hello, world", "add_special": true, "with_pieces": true}' \
	"{\"model\": \"$MODEL\", \"prompt\": \"Hello, world\", \"add_special_tokens\": false}"; do
	echo "POST /tokenize $body"
	echo "  <- $(post /tokenize "$body")"
done
for body in '{"tokens": [9906, 11, 1917]}' "{\"model\": \"$MODEL\", \"tokens\": [9906, 11, 1917]}"; do
	echo "POST /detokenize $body"
	echo "  <- $(post /detokenize "$body")"
done
echo "== /metrics series"
curl -sS --max-time 30 "$url/metrics" | awk '$1 == "#" && $2 == "TYPE" {printf "  %s (%s)\n", $3, $4}'
echo "== keep-alive"
"$PY" - "$port" "$MODEL" <<'EOF'
import http.client, json, socket, sys, time

port, model = int(sys.argv[1]), sys.argv[2]


def peer_closed(sock, wait):
    """Whether the server closed the connection within wait seconds."""
    sock.settimeout(wait)
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except socket.timeout:
        return False
    except OSError:
        return True
    finally:
        sock.settimeout(None)


def completion(conn, stream):
    body = {"model": model, "prompt": "Hello", "max_tokens": 8, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    return resp, data


def second_request(conn, what):
    """Whether the server kept conn open after its last answer, and what a
    second request on it gets."""
    sock = conn.sock
    closed = sock is None or peer_closed(sock, 1.0)
    print("after %s: connection %s" % (what, "closed by the server" if closed else "kept open"))
    if closed:
        return
    resp, data = completion(conn, False)
    print("  a second request on it (not streamed): HTTP %d, Connection: %s" % (resp.status, resp.getheader("Connection")))


conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
resp, data = completion(conn, True)
print("streamed answer: HTTP %d" % resp.status)
for k, v in resp.getheaders():
    print("  %s: %s" % (k, v))
events = [l for l in data.decode("utf-8", "replace").split("\n") if l.startswith("data: ")]
print("  %d data lines; the last two:" % len(events))
for e in events[-2:]:
    print("    " + e[:400])
second_request(conn, "the streamed answer")
conn.close()

conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
resp, data = completion(conn, False)
print("answer not streamed: HTTP %d, Content-Length: %s, Connection: %s, Keep-Alive: %s" % (
    resp.status, resp.getheader("Content-Length"), resp.getheader("Connection"), resp.getheader("Keep-Alive")))
second_request(conn, "the answer not streamed")
if conn.sock is not None:
    start = time.monotonic()
    closed = peer_closed(conn.sock, 15.0)
    print("idle: %s" % ("closed by the server after %.1f s" % (time.monotonic() - start) if closed else "still open after 15 s"))
conn.close()

conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
n = 0
for n in range(1, 202):
    conn.request("GET", "/health")
    resp = conn.getresponse()
    resp.read()
    if resp.getheader("Connection", "").lower() == "close" or conn.sock is None:
        print("request limit: request %d on one connection is answered with Connection: close" % n)
        break
else:
    print("request limit: none seen in %d requests" % n)
conn.close()
EOF

# --- the runs --------------------------------------------------------------------
metric() { # metric FILE NAME: the value of one llamacpp: series, as an integer
	awk -v n="llamacpp:$2" '$1 == n {printf "%.0f\n", $2; f=1} END {if (!f) print "?"}' "$1"
}
scrape() { curl -sS --max-time 30 "$url/metrics" >"$1" || : >"$1"; }

status=0
verdicts=()
verdict() { # verdict CONC CHECK ok|diff|FAIL TEXT
	verdicts+=("$(printf '%-5s %-10s %-4s %s' "$1" "$2" "$3" "$4")")
	[[ $3 != FAIL ]] || status=1
}

for conc in $CONCS; do
	prompts=$((conc * PROMPTS_PER_CONC))
	res=$work/c$conc.json
	cmd=("$BIN/stampede" --backend openai --base-url "$url" --model "$MODEL" --tokenizer "$tok"
		--dataset-name random --random-input-len "$IN_LEN" --random-output-len "$OUT_LEN"
		--num-prompts "$prompts" --max-concurrency "$conc" --request-rate inf
		--save-result --save-detailed --result-dir "$work" --result-filename "c$conc.json")
	echo
	echo "== concurrency $conc: ${cmd[*]}"
	scrape "$work/c$conc.before"
	rc=0
	# SIGINT, as Ctrl-C: stampede stops and reports what finished.
	timeout -s INT -k 30 "$RUN_TIMEOUT" "${cmd[@]}" >"$work/c$conc.out" 2>"$work/c$conc.err" || rc=$?
	scrape "$work/c$conc.after"
	sed -n '/Serving Benchmark Result/,/^=*$/p' "$work/c$conc.out" | sed -n '1,40p'
	grep -v '%|' "$work/c$conc.err" | grep -i 'warn\|error\|stampede:' | head -n 10 || true

	if ((rc == 0)); then verdict "$conc" exit ok "0"; else verdict "$conc" exit FAIL "exit $rc$( ((rc == 124)) && echo " (timed out after ${RUN_TIMEOUT}s)")"; fi
	if [[ ! -f $res ]]; then
		verdict "$conc" result FAIL "no result file; stderr: $(grep -v '%|' "$work/c$conc.err" | tail -n 3 | tr '\n' ' ')"
		continue
	fi
	completed="?" failed="?" total_in="?" total_out="?" lens_ok="?"
	read -r completed failed total_in total_out lens_ok < <(jq -r --argjson n "$OUT_LEN" \
		'[.completed, .failed, .total_input_tokens, .total_output_tokens,
		  ((.output_lens|length) == .completed and all(.output_lens[]; . == $n))] | @tsv' "$res") || true
	if [[ $completed == "?" ]]; then
		verdict "$conc" result FAIL "$res is not a result JSON"
		continue
	fi
	if [[ $completed == "$prompts" && $failed == 0 ]]; then
		verdict "$conc" completed ok "$completed of $prompts, failed 0"
	else
		errs=$(jq -r '[.errors[] | select(. != "")] | group_by(.) | map("\(length)x \(.[0])") | join(" | ")' "$res" | cut -c1-400)
		verdict "$conc" completed FAIL "$completed of $prompts, failed $failed: $errs"
	fi
	b_pred=$(metric "$work/c$conc.before" tokens_predicted_total)
	a_pred=$(metric "$work/c$conc.after" tokens_predicted_total)
	b_prompt=$(metric "$work/c$conc.before" prompt_tokens_total)
	a_prompt=$(metric "$work/c$conc.after" prompt_tokens_total)
	b_cached=$(metric "$work/c$conc.before" prompt_tokens_cached_total)
	a_cached=$(metric "$work/c$conc.after" prompt_tokens_cached_total)
	if [[ "$b_pred$a_pred$b_prompt$a_prompt$b_cached$a_cached" == *"?"* ]]; then
		verdict "$conc" metrics FAIL "a llamacpp: token counter is missing from /metrics"
		continue
	fi
	d_pred=$((a_pred - b_pred))
	d_prompt=$((a_prompt - b_prompt))
	d_cached=$((a_cached - b_cached))
	# The server counts every request it took, failed ones too: all but
	# those lost on a connection it had closed already.
	reached=0 want_prompt=0
	read -r reached want_prompt < <(jq -r '[range(0; .input_lens | length) as $i
		| select((.errors[$i] // "") | test("before the response head") | not) | .input_lens[$i] + 1]
		| "\(length) \(add // 0)"' "$res") || true

	# When the server generated exactly OUT_LEN for each request it took,
	# a difference in stampede's counts is how it counts (usage inside a
	# token chunk is not read; the text is tokenized instead), not tokens
	# lost: "diff", which does not fail the run.
	server_exact=""
	if ((d_pred == reached * OUT_LEN)); then server_exact=1; fi
	lens=$(jq -c '.output_lens | group_by(.) | map({(.[0]|tostring): length}) | add' "$res")
	if [[ $lens_ok == true ]]; then
		verdict "$conc" output ok "every output length $OUT_LEN, total $total_out"
	elif [[ -n $server_exact && $completed == "$reached" ]]; then
		verdict "$conc" output diff "output lengths $lens, total $total_out; the server generated $OUT_LEN for each"
	else
		verdict "$conc" output FAIL "output lengths $lens, total $total_out"
	fi
	text="server $d_pred ($reached requests taken x $OUT_LEN = $((reached * OUT_LEN))), stampede $total_out (difference $((d_pred - total_out)))"
	if [[ $d_pred == "$total_out" ]]; then
		verdict "$conc" predicted ok "server $d_pred = stampede $total_out"
	elif [[ -n $server_exact ]]; then
		verdict "$conc" predicted diff "$text"
	else
		verdict "$conc" predicted FAIL "$text"
	fi
	# Its prompt counts include the BOS it adds.
	seen_prompt=$((d_prompt + d_cached))
	text="server $d_prompt processed + $d_cached cached = $seen_prompt; stampede's input lengths + BOS over the $reached requests the server took = $want_prompt (total_input_tokens $total_in)"
	if [[ $seen_prompt == "$want_prompt" ]]; then
		verdict "$conc" prompt ok "$text"
	else
		verdict "$conc" prompt FAIL "$text (difference $((seen_prompt - want_prompt)))"
	fi
	side=$work/c$conc.stampede.json
	if [[ -f $side ]]; then
		verdict "$conc" connections ok "$(jq -r --argjson n "$prompts" '"\(.breakdown.new_connections // "?") of \($n) requests on a fresh connection, \(.health.resent_after_server_close) re-sent, \(.health.dropped_before_response) dropped before a response, \(.health.stopped_reuse_shards) shards stopped reusing"' "$side")"
	fi
	busy=$(metric "$work/c$conc.after" requests_processing)
	deferred=$(metric "$work/c$conc.after" requests_deferred)
	if [[ $busy == 0 && $deferred == 0 ]]; then
		verdict "$conc" idle ok "requests_processing 0, requests_deferred 0"
	else
		verdict "$conc" idle FAIL "requests_processing $busy, requests_deferred $deferred"
	fi
done

stop_server
echo
echo "== compat-llamacpp: llama-server ${commit:0:12}, $SLOTS slots x $SLOT_CTX context, $IN_LEN in / $OUT_LEN out tokens, $PROMPTS_PER_CONC prompts per slot of concurrency"
printf '%-5s %-10s %-4s %s\n' conc check ok what
printf '%s\n' "${verdicts[@]}"
exit $status
