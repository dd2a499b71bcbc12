#!/usr/bin/env bash
# stampede against Ollama, a second real third-party server: built from
# the Go module proxy (github.com/ollama/ollama@OLLAMA_VERSION, cgo, CPU).
# The module zip drops vendor/ directories, so the C++ build takes the
# headers (nlohmann, stb, miniaudio) from the llama.cpp tree that
# scripts/compat-llamacpp.sh fetches; the same tiny random-weight Llama-3
# GGUF (scripts/compat-gguf.py) becomes the model "tiny" (`ollama create`
# from a Modelfile FROM the GGUF).
#
# The server runs on 127.0.0.1 with its own OLLAMA_MODELS in the cache.
# For each backend (openai, openai-chat, openai-responses,
# anthropic-messages) and concurrency (CONCS, default 8 and 64): one
# stampede run with the random dataset, checked from the result JSON:
#
#   exit       stampede exited 0
#   completed  every prompt completed; failed 0 (else the error texts)
#   server     the sidecar's usage: the sum of Ollama's own final
#              usage counts (a usage chunk, message_delta or
#              response.completed) against stampede's total_output_tokens
#
# Ollama serves no /metrics and no /tokenize: the runs say so once and go
# on, as Python does. Its model ids carry a tag (tiny:latest).
#
# The binary is built once per version (nice 19, go build -p 1: about 20
# minutes here) into ${STAMPEDE_COMPAT_CACHE:-$HOME/.cache/stampede-compat}
# beside llama-server; run scripts/compat-llamacpp.sh once first for the
# llama.cpp tree and the GGUF, or this script runs its setup part.
#
# Usage: scripts/compat-ollama.sh  (env: OLLAMA_VERSION, CONCS, BACKENDS,
#        PROMPTS_PER_CONC, IN_LEN, OUT_LEN, RUN_TIMEOUT, BIN,
#        STAMPEDE_COMPAT_CACHE, KEEP=1 keeps the work directory)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

CACHE=${STAMPEDE_COMPAT_CACHE:-$HOME/.cache/stampede-compat}
OLLAMA_VERSION=${OLLAMA_VERSION:-v0.17.4}
CONCS=${CONCS:-8 64}
BACKENDS=${BACKENDS:-openai openai-chat openai-responses anthropic-messages}
PROMPTS_PER_CONC=${PROMPTS_PER_CONC:-2}
IN_LEN=${IN_LEN:-128}
OUT_LEN=${OUT_LEN:-32}
RUN_TIMEOUT=${RUN_TIMEOUT:-1800}
STOP_SEC=${STOP_SEC:-10}
BIN=${BIN:-bin}
MODEL=tiny
LOCK=${LOCK:-/tmp/stampede-bench.lock}

say() { echo "compat-ollama: $*"; }
die() { echo "compat-ollama: $*" >&2; exit 1; }

command -v jq >/dev/null || die "needs jq (apt-get install jq)"
command -v curl >/dev/null || die "needs curl (apt-get install curl)"

# --- the llama.cpp tree and the GGUF (compat-llamacpp.sh's) -----------------
tok=testdata/tokenizers/llama3.json
tok_config=testdata/tokenizers/meta-llama-3-8b-instruct/tokenizer_config.json
model_key=$(cat scripts/compat-gguf.py "$tok" "$tok_config" 2>/dev/null | sha256sum | cut -c1-12)
gguf=$CACHE/models/llama3-tiny-$model_key.gguf
vendor=$(ls -d "$CACHE"/llama.cpp-*/src/vendor 2>/dev/null | head -n 1 || true)
if [[ ! -f $gguf || -z $vendor ]]; then
	die "no llama.cpp tree or GGUF in $CACHE: run scripts/compat-llamacpp.sh first"
fi

# --- ollama, from the Go module proxy -----------------------------------------
odir=$CACHE/ollama-${OLLAMA_VERSION#v}
ollama=$odir/ollama
if [[ ! -x $ollama ]]; then
	say "go mod download github.com/ollama/ollama@$OLLAMA_VERSION"
	mod=$(cd /tmp && go mod download -json "github.com/ollama/ollama@$OLLAMA_VERSION" | jq -r .Dir)
	[[ -d $mod ]] || die "go mod download github.com/ollama/ollama@$OLLAMA_VERSION failed"
	rm -rf "$odir/src"
	mkdir -p "$odir"
	cp -r "$mod" "$odir/src"
	chmod -R u+w "$odir/src"
	say "building ollama $OLLAMA_VERSION in $odir/src (nice 19, -p 1; log: $odir/build.log)"
	if ! (cd "$odir/src" && CGO_ENABLED=1 CGO_CPPFLAGS="-I$vendor" \
		nice -n 19 go build -p 1 -o "$ollama.tmp" .) >"$odir/build.log" 2>&1; then
		tail -n 30 "$odir/build.log" >&2
		die "building ollama failed (log: $odir/build.log)"
	fi
	mv "$ollama.tmp" "$ollama"
else
	say "reusing $ollama"
fi

mkdir -p "$BIN"
go build -o "$BIN/" ./cmd/stampede

if [[ -z "${COMPAT_LOCKED:-}" ]]; then
	exec 9>"$LOCK"
	flock 9
fi

work=$(mktemp -d /tmp/compat-ollama.XXXXXX)
# shellcheck source=scripts/compat-lib.sh
source scripts/compat-lib.sh
trap cleanup EXIT
port=$(free_port)
url=http://127.0.0.1:$port
max_conc=0
for c in $CONCS; do ((c > max_conc)) && max_conc=$c; done
export OLLAMA_HOST=127.0.0.1:$port OLLAMA_MODELS=$CACHE/ollama-models
export OLLAMA_NUM_PARALLEL=$max_conc OLLAMA_MAX_QUEUE=$((max_conc * 4)) OLLAMA_CONTEXT_LENGTH=$((IN_LEN + OUT_LEN + 64))
mkdir -p "$OLLAMA_MODELS"
say "OLLAMA_NUM_PARALLEL=$OLLAMA_NUM_PARALLEL nice -n 10 $ollama serve (on $url)"
nice -n 10 "$ollama" serve >"$work/server.log" 2>&1 &
server_pid=$!
ready=""
for _ in $(seq 600); do
	kill -0 "$server_pid" 2>/dev/null || break
	if [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url/api/version") == 200 ]]; then ready=1; break; fi
	sleep 0.1
done
[[ -n $ready ]] || { tail -n 30 "$work/server.log" >&2; die "ollama did not answer on $url"; }
say "ollama $(curl -sS "$url/api/version" | jq -r .version) on $url"
printf 'FROM %s\n' "$gguf" >"$work/Modelfile"
"$ollama" create "$MODEL" -f "$work/Modelfile" >"$work/create.log" 2>&1 ||
	{ tail -n 20 "$work/create.log" >&2; die "ollama create $MODEL failed"; }

echo
echo "== /v1/models: $(curl -sS "$url/v1/models" | jq -c '[.data[].id]')"
echo "== /metrics: HTTP $(curl -s -o /dev/null -w '%{http_code}' "$url/metrics"), /tokenize: HTTP $(curl -s -o /dev/null -w '%{http_code}' -d '{}' "$url/tokenize")"

status=0
verdicts=()
verdict() { # verdict BACKEND CONC CHECK ok|FAIL TEXT
	verdicts+=("$(printf '%-19s %-5s %-10s %-4s %s' "$1" "$2" "$3" "$4" "$5")")
	[[ $4 != FAIL ]] || status=1
}

for backend in $BACKENDS; do
	for conc in $CONCS; do
		prompts=$((conc * PROMPTS_PER_CONC))
		name=$backend-c$conc
		res=$work/$name.json
		# As in vllm bench serve, only openai's default endpoint is its own.
		endpoint=()
		case $backend in
		openai-chat) endpoint=(--endpoint /v1/chat/completions) ;;
		openai-responses) endpoint=(--endpoint /v1/responses) ;;
		anthropic-messages) endpoint=(--endpoint /v1/messages) ;;
		esac
		cmd=("$BIN/stampede" --backend "$backend" "${endpoint[@]}" --base-url "$url" --model "$MODEL" --tokenizer "$tok"
			--dataset-name random --random-input-len "$IN_LEN" --random-output-len "$OUT_LEN"
			--num-prompts "$prompts" --max-concurrency "$conc" --request-rate inf
			--save-result --result-dir "$work" --result-filename "$name.json")
		echo
		echo "== $backend, concurrency $conc: ${cmd[*]}"
		rc=0
		timeout -s INT -k 30 "$RUN_TIMEOUT" "${cmd[@]}" >"$work/$name.out" 2>"$work/$name.err" || rc=$?
		sed -n '/Serving Benchmark Result/,/^=*$/p' "$work/$name.out" | sed -n '1,12p'
		grep -v '%|' "$work/$name.err" | grep -i 'warn\|error\|stampede:' | head -n 5 || true
		if ((rc == 0)); then verdict "$backend" "$conc" exit ok 0; else verdict "$backend" "$conc" exit FAIL "exit $rc"; fi
		if [[ ! -f $res ]]; then
			verdict "$backend" "$conc" result FAIL "no result file; stderr: $(grep -v '%|' "$work/$name.err" | tail -n 3 | tr '\n' ' ')"
			continue
		fi
		read -r completed failed total_out < <(jq -r '[.completed, .failed, .total_output_tokens] | @tsv' "$res")
		if [[ $completed == "$prompts" && $failed == 0 ]]; then
			verdict "$backend" "$conc" completed ok "$completed of $prompts, failed 0"
		else
			errs=$(jq -r '[.errors[] | select(. != "")] | group_by(.) | map("\(length)x \(.[0])") | join(" | ")' "$res" | cut -c1-300)
			verdict "$backend" "$conc" completed FAIL "$completed of $prompts, failed $failed: $errs"
		fi
		side=$work/$name.stampede.json
		srv=$(jq -r '.usage // empty | "\(.server_output_tokens // "?") \(.requests // "?")"' "$side" 2>/dev/null || true)
		if [[ -z $srv ]]; then
			verdict "$backend" "$conc" server FAIL "no usage in $side"
		else
			read -r stoks sreq <<<"$srv"
			if [[ $stoks == "$total_out" && $sreq == "$completed" ]]; then
				verdict "$backend" "$conc" server ok "Ollama's usage $stoks over $sreq requests = stampede $total_out"
			else
				verdict "$backend" "$conc" server FAIL "Ollama's usage $stoks over $sreq requests, stampede $total_out over $completed"
			fi
		fi
	done
done

stop_server
echo
echo "== compat-ollama: ollama $OLLAMA_VERSION, $IN_LEN in / $OUT_LEN out tokens, $PROMPTS_PER_CONC prompts per slot of concurrency"
printf '%-19s %-5s %-10s %-4s %s\n' backend conc check ok what
printf '%s\n' "${verdicts[@]}"
exit $status
