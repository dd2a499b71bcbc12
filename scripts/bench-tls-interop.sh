#!/usr/bin/env bash
# https:// against third-party TLS terminators, checked as a user runs it:
# bin/stampede with vllm-bench-serve flags, through nginx and stunnel in
# front of bin/mockllm (plain HTTP), one case per terminator setting:
#
#   http         straight to the mock, for comparison
#   nginx-tls13  TLS 1.3 only, ECDSA P-256       -> records on the event loops
#   nginx-tls12  TLS 1.2 only, RSA-2048          -> goroutine per connection
#   nginx-chacha TLS 1.3, ChaCha20-Poly1305 only -> records on the event loops
#   nginx-both   TLS 1.2 and 1.3, RSA-2048       -> records on the event loops
#   nginx-tickets TLS 1.3, 4 session tickets, keepalive_requests 2: the
#                server closes connections, reconnects resume
#   nginx-mixed  a TCP round robin (weights 3:1) over a TLS 1.3 and a TLS 1.2
#                server: the first two connections (stampede's /tokenize and
#                /metrics one, then its probe) get 1.3, and every fourth
#                after them gets 1.2 and falls back on its own
#                (needs nginx's stream module, libnginx-mod-stream)
#   stunnel      stunnel, TLS 1.3 only, ECDSA
#
# Each case gets its own mock and terminator. The checks, from the result
# JSON (--save-detailed), the mock's own count and stampede's stderr health
# line: every request completed, none failed, every output length is the
# requested one and the tokens sum to what the mock sent, the TLS path is
# the one the case expects, handshakes and resumptions are plausible (and
# the terminator's access log agrees on protocol, cipher and connections),
# and tokens streamed (median ITL near the mock's step, which a buffering
# proxy would collapse). One summary row per case; exit 1 if any check
# fails.
#
# Installs nginx, stunnel4, openssl (and libnginx-mod-stream) with apt-get
# when absent. Runs under flock /tmp/stampede-bench.lock; servers at nice 10.
#
# Usage: scripts/bench-tls-interop.sh   (env: CASES, PROMPTS, CONC, IN_LEN,
#        OUT_LEN, ITL_MS, BIN, KEEP=1 keeps the work directory)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

LOCK=${LOCK:-/tmp/stampede-bench.lock}
if [[ -z "${TLS_INTEROP_LOCKED:-}" ]]; then
	exec env TLS_INTEROP_LOCKED=1 flock "$LOCK" bash "$0" "$@"
fi

ALL_CASES="http nginx-tls13 nginx-tls12 nginx-chacha nginx-both nginx-tickets nginx-mixed stunnel"
CASES=${CASES:-$ALL_CASES}
PROMPTS=${PROMPTS:-200}
CONC=${CONC:-100}
IN_LEN=${IN_LEN:-128}
OUT_LEN=${OUT_LEN:-200}
ITL_MS=${ITL_MS:-20}
BIN=${BIN:-bin}
STREAM_MODULE=/usr/lib/nginx/modules/ngx_stream_module.so

# --- what the script needs -------------------------------------------------
need=()
command -v nginx >/dev/null || need+=(nginx)
command -v stunnel4 >/dev/null || command -v stunnel >/dev/null || need+=(stunnel4)
command -v openssl >/dev/null || need+=(openssl)
command -v jq >/dev/null || need+=(jq)
if [[ " $CASES " == *" nginx-mixed "* && ! -f $STREAM_MODULE ]]; then need+=(libnginx-mod-stream); fi
if ((${#need[@]})); then
	echo "tls-interop: installing ${need[*]} (apt-get)"
	sudo=()
	if (($(id -u) != 0)); then sudo=(sudo); fi
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y "${need[@]}" >/dev/null ||
		{ echo "tls-interop: apt-get install ${need[*]} failed" >&2; exit 1; }
fi
stunnel_bin=$(command -v stunnel4 || command -v stunnel)

go build -o "$BIN/" ./cmd/stampede ./cmd/mockllm
tok=testdata/tokenizers/llama3.json
[[ -f $tok ]] || tok=datasets/tokenizer/testdata/tiny/tokenizer.json

work=$(mktemp -d /tmp/tls-interop.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [[ -n "${KEEP:-}" ]]; then echo "tls-interop: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# --- certificates ----------------------------------------------------------
cert() { # cert NAME -newkey-ARGS...
	local name=$1
	shift
	openssl req -x509 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
		"$@" -keyout "$work/$name.key" -out "$work/$name.crt" 2>/dev/null
}
cert ec -newkey ec -pkeyopt ec_paramgen_curve:P-256
cert rsa -newkey rsa:2048

# --- servers ---------------------------------------------------------------
# free_port prints a loopback TCP port below the ephemeral range that no
# socket uses (a connection's local port would make nginx's bind fail).
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 12000))
		if [[ -z $(ss -Htan "sport = :$p") ]]; then echo "$p"; return; fi
	done
}

# wait_port PORT NAME LOG waits until something listens on PORT.
wait_port() {
	for _ in $(seq 100); do
		if [[ -n $(ss -Htln "sport = :$1") ]]; then return; fi
		sleep 0.05
	done
	echo "tls-interop: $2 did not listen on :$1" >&2
	cat "$3" >&2
	exit 1
}

# start_mock: a plain-HTTP mock; sets mock_pid, mock_port.
start_mock() {
	nice -n 10 "$BIN/mockllm" --port 0 --model mock-llm --tokenizer "$tok" --mode decode-step \
		--itl-ms "$ITL_MS" --ttft-ms 40 >"$work/$case.mock" 2>&1 &
	mock_pid=$!
	pids+=("$mock_pid")
	for _ in $(seq 100); do
		grep -q 'listening on' "$work/$case.mock" && break
		sleep 0.05
	done
	mock_port=$(sed -n 's/^mockllm listening on http:\/\/127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/$case.mock")
	[[ -n $mock_port ]] || { echo "tls-interop: the mock did not start:" >&2; cat "$work/$case.mock" >&2; exit 1; }
}

# stop PID [SIGNAL]: signal (INT: the mock prints its account on the way
# out) and wait; the PID leaves the list cleanup stops.
stop() {
	local p keep=()
	kill "-${2:-INT}" "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	for p in "${pids[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
	pids=("${keep[@]}")
}

# nginx_https PORT CERT PROTOCOLS EXTRA: one TLS server block proxying to
# the mock over keep-alive HTTP/1.1, unbuffered so SSE streams through.
nginx_https() {
	cat <<EOF
	server {
		listen 127.0.0.1:$1 ssl;
		ssl_certificate $work/$2.crt;
		ssl_certificate_key $work/$2.key;
		ssl_protocols $3;
		$4
		location / {
			proxy_pass http://mock;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_buffering off;
			proxy_read_timeout 600s;
		}
	}
EOF
}

# start_nginx SERVERS [STREAM]: sets term_pid; the access log says per
# request its connection, protocol, cipher and whether the session resumed.
start_nginx() {
	local d=$work/$case.nginx user=""
	mkdir -p "$d"
	if (($(id -u) == 0)); then user="user root;"; fi
	{
		if [[ -n ${2:-} ]]; then echo "load_module $STREAM_MODULE;"; fi
		cat <<EOF
$user
worker_processes 1;
daemon off;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 4096; }
http {
	log_format interop '\$connection \$connection_requests \$ssl_protocol \$ssl_cipher \$ssl_session_reused \$status \$request_method \$request_uri';
	access_log $d/access.log interop;
	client_body_temp_path $d/body;
	proxy_temp_path $d/proxy;
	fastcgi_temp_path $d/fastcgi;
	uwsgi_temp_path $d/uwsgi;
	scgi_temp_path $d/scgi;
	upstream mock { server 127.0.0.1:$mock_port; keepalive 256; }
$1
}
EOF
		if [[ -n ${2:-} ]]; then echo "$2"; fi
	} >"$d/nginx.conf"
	nice -n 10 nginx -e "$d/error.log" -p "$d" -c "$d/nginx.conf" >"$d/out" 2>&1 &
	term_pid=$!
	pids+=("$term_pid")
	wait_port "$port" nginx "$d/error.log"
	term_log=$d/access.log
}

start_stunnel() {
	local d=$work/$case.stunnel
	mkdir -p "$d"
	cat >"$d/stunnel.conf" <<EOF
foreground = yes
pid =
output = $d/stunnel.log
debug = 4
[mock]
accept = 127.0.0.1:$port
connect = 127.0.0.1:$mock_port
cert = $work/ec.crt
key = $work/ec.key
sslVersionMin = TLSv1.3
sslVersionMax = TLSv1.3
EOF
	# Its own session: stunnel signals its process group on the way out.
	setsid nice -n 10 "$stunnel_bin" "$d/stunnel.conf" >"$d/out" 2>&1 &
	term_pid=$!
	pids+=("$term_pid")
	wait_port "$port" stunnel "$d/out"
	term_log=""
}

# --- one case --------------------------------------------------------------
# Set per case: scheme, conc, want_path (loop|goroutine|none), want_proto,
# want_cipher, want_resume (1: reconnects must resume), want_fallback (1:
# some connections must fall back).
printf '%-14s %-26s %-9s %-12s %-22s %-9s %-9s %s\n' case "TLS path" ok/failed "hs/resumed/own" "server conns/reused" "CPU s" "p99 ITL" verdict >"$work/summary"
status=0

run_case() {
	local url=$scheme://127.0.0.1:$port
	local res=$work/$case.json
	local cmd=("$BIN/stampede" --backend openai --base-url "$url" --model mock-llm --tokenizer "$tok"
		--dataset-name random --random-input-len "$IN_LEN" --random-output-len "$OUT_LEN"
		--num-prompts "$PROMPTS" --max-concurrency "$conc" --request-rate inf
		--save-result --save-detailed --result-dir "$work" --result-filename "$case.json")
	if [[ $scheme == https ]]; then cmd+=(--insecure); fi
	echo "== $case: ${cmd[*]}"
	local rc=0
	"${cmd[@]}" >"$work/$case.out" 2>"$work/$case.err" || rc=$?
	if [[ $term_pid != "$mock_pid" ]]; then stop "$term_pid" TERM; fi
	stop "$mock_pid"

	local fails=()
	((rc == 0)) || fails+=("exit $rc")
	local health
	health=$(grep '^stampede: [0-9]* shards' "$work/$case.err" || true)
	[[ -n $health ]] || fails+=("no health line")
	local completed=? failed=? p99=? median=? total=? lens_ok=0
	if [[ -f $res ]]; then
		read -r completed failed p99 median total lens_ok < <(jq -r --argjson n "$OUT_LEN" \
			'[.completed, .failed, (.p99_itl_ms*100|round/100), .median_itl_ms, .total_output_tokens,
			  ((.output_lens|length) == .completed and all(.output_lens[]; . == $n))] | @tsv' "$res") || true
	else
		fails+=("no result file")
	fi
	[[ $completed == "$PROMPTS" ]] || fails+=("completed $completed of $PROMPTS")
	[[ $failed == 0 ]] || fails+=("failed $failed: $(jq -r '[.errors[]|select(. != "")]|unique|join(" | ")' "$res" 2>/dev/null | cut -c1-200)")
	[[ $lens_ok == true ]] || fails+=("output lengths not all $OUT_LEN")
	[[ $total == $((PROMPTS * OUT_LEN)) ]] || fails+=("total_output_tokens $total, want $((PROMPTS * OUT_LEN))")
	local mock_tokens
	mock_tokens=$(sed -n 's/^mockllm: .* scheduled, \([0-9]*\) tokens.*/\1/p' "$work/$case.mock")
	[[ $mock_tokens == "$total" ]] || fails+=("the mock sent ${mock_tokens:-?} tokens, stampede counted $total")
	if [[ $median != "?" ]] && awk -v m="$median" -v s="$ITL_MS" 'BEGIN{exit !(m < s/2)}'; then
		fails+=("median ITL ${median} ms < half the mock's ${ITL_MS} ms step: tokens did not stream")
	fi

	local cpu hs=0 resumed=0 own=0 fellback=0 path="" shown
	cpu=$(sed -n 's/.*client CPU \([0-9.]*\)s.*/\1/p' <<<"$health")
	if [[ $health =~ TLS\ handshakes\ ([0-9]+)\ \(([0-9]+)\ resumed\;\ ([0-9]+)\ the\ loops\'\ own ]]; then
		hs=${BASH_REMATCH[1]} resumed=${BASH_REMATCH[2]} own=${BASH_REMATCH[3]}
	fi
	path=$(sed -n 's/.*TLS path: //p' <<<"$health")
	if [[ $path =~ \(([0-9]+)\ connections\ not\ on\ TLS\ 1\.3\ fell\ back ]]; then fellback=${BASH_REMATCH[1]}; fi
	case $path in
	"records on the event loops"*) shown="event loops" ;;
	"goroutine per connection"*) shown="goroutine per connection" ;;
	"") shown="-" ;;
	*) shown=${path%%;*} ;;
	esac
	((fellback == 0)) || shown+=" +$fellback fell back"
	case $want_path in
	loop) [[ $path == "records on the event loops"* ]] || fails+=("TLS path '$path', want records on the event loops") ;;
	goroutine) [[ $path == "goroutine per connection"*"crypto/tls reads"* ]] || fails+=("TLS path '$path', want goroutine per connection") ;;
	none) [[ -z $path && $hs == 0 ]] || fails+=("TLS on a plain run: '$path'") ;;
	esac
	if [[ $want_path != none ]]; then
		# At least one connection per slot, at most one per request (plus the probe).
		((hs >= 1 && hs <= PROMPTS + 1)) || fails+=("$hs handshakes for $PROMPTS requests")
		((resumed <= hs)) || fails+=("$resumed resumed of $hs handshakes")
	fi
	if [[ -n $want_resume ]]; then
		# Every handshake beyond one per slot is a reconnect (the probe is
		# not counted), and reconnects find a ticket in the cache.
		local reconnects=$((hs - conc))
		((reconnects > 0)) || fails+=("$hs handshakes at concurrency $conc: the server closed no connections")
		((resumed * 2 >= reconnects)) || fails+=("$resumed of $reconnects reconnects resumed")
		# A reconnect after a ticket came resumes on the loop's own
		# handshake, not crypto/tls's.
		((own * 2 >= reconnects)) || fails+=("$own of $reconnects reconnects resumed on the loops' own handshake")
	fi
	if [[ -n $want_fallback ]]; then
		((fellback > 0)) || fails+=("no connection fell back")
	fi

	# The terminator's side: protocols and ciphers of its requests,
	# connections and resumed sessions.
	local server="-"
	if [[ -n $term_log && -f $term_log ]]; then
		local sconns sreused protos ciphers
		sconns=$(awk '{print $1}' "$term_log" | sort -u | wc -l)
		sreused=$(awk '$5 == "r" {print $1}' "$term_log" | sort -u | wc -l)
		protos=$(awk '{print $3}' "$term_log" | sort -u | paste -sd,)
		ciphers=$(awk '{print $4}' "$term_log" | sort -u | paste -sd,)
		server="$sconns/$sreused $protos"
		[[ -z $want_proto || $protos == "$want_proto" ]] || fails+=("server saw $protos, want $want_proto")
		[[ -z $want_cipher || $ciphers == "$want_cipher" ]] || fails+=("server cipher $ciphers, want $want_cipher")
		local requests
		requests=$(wc -l <"$term_log")
		((requests >= PROMPTS)) || fails+=("server logged $requests requests")
	fi

	local verdict=ok
	if ((${#fails[@]})); then
		verdict="FAIL: $(IFS=';'; echo "${fails[*]}")"
		status=1
		echo "   $case failed: ${fails[*]}"
		echo "   stderr: $(grep -v '%|' "$work/$case.err" | tail -5)"
	fi
	printf '%-14s %-26s %-9s %-12s %-22s %-9s %-9s %s\n' "$case" "$shown" "$completed/$failed" "$hs/$resumed/$own" \
		"$server" "${cpu:-?}" "${p99}ms" "$verdict" >>"$work/summary"
}

ec13='ssl_session_tickets on;'
for case in $CASES; do
	scheme=https conc=$CONC want_path=loop want_proto=TLSv1.3 want_cipher="" want_resume="" want_fallback=""
	start_mock
	port=$(free_port)
	case $case in
	http)
		scheme=http want_path=none want_proto="" port=$mock_port term_pid=$mock_pid term_log=""
		;;
	nginx-tls13)
		start_nginx "$(nginx_https "$port" ec TLSv1.3 "$ec13")"
		;;
	nginx-tls12)
		want_path=goroutine want_proto=TLSv1.2
		start_nginx "$(nginx_https "$port" rsa TLSv1.2 "")"
		;;
	nginx-chacha)
		want_cipher=TLS_CHACHA20_POLY1305_SHA256
		start_nginx "$(nginx_https "$port" ec TLSv1.3 "ssl_conf_command Ciphersuites TLS_CHACHA20_POLY1305_SHA256;")"
		;;
	nginx-both)
		start_nginx "$(nginx_https "$port" rsa "TLSv1.2 TLSv1.3" "")"
		;;
	nginx-tickets)
		conc=$((CONC / 2)) want_resume=1
		start_nginx "$(nginx_https "$port" ec TLSv1.3 "ssl_session_tickets on; ssl_conf_command NumTickets 4; keepalive_requests 2;")"
		;;
	nginx-mixed)
		want_fallback=1 want_proto=TLSv1.2,TLSv1.3
		p13=$(free_port)
		p12=$(free_port)
		while [[ $p12 == "$p13" ]]; do p12=$(free_port); done
		start_nginx "$(nginx_https "$p13" ec TLSv1.3 ""; nginx_https "$p12" rsa TLSv1.2 "")" \
			"stream { upstream tls { server 127.0.0.1:$p13 weight=3; server 127.0.0.1:$p12; } server { listen 127.0.0.1:$port; proxy_pass tls; } }"
		;;
	stunnel)
		want_proto=""
		start_stunnel
		;;
	*)
		echo "tls-interop: unknown case $case (cases: $ALL_CASES)" >&2
		exit 2
		;;
	esac
	run_case
done

echo
echo "== tls-interop: $PROMPTS prompts, $IN_LEN in / $OUT_LEN out tokens, mock step ${ITL_MS} ms, concurrency $CONC (nginx-tickets $((CONC / 2)))"
cat "$work/summary"
exit $status
