# Sourced by the compat scripts (compat-llamacpp.sh, compat-ollama.sh): the
# one third-party server a script runs, stopped however the script ends,
# and the scratch directory it works in. The script sets STOP_SEC, say()
# and work= before it calls these, and server_pid= once it starts one.

server_pid=""

# stop_server stops the server: TERM, then KILL after STOP_SEC.
stop_server() {
	[[ -n $server_pid ]] || return 0
	kill -TERM "$server_pid" 2>/dev/null || true
	for _ in $(seq $((STOP_SEC * 10))); do
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
}

# cleanup, on exit: the server stopped, the work directory removed unless
# KEEP is set.
cleanup() {
	stop_server
	if [[ -n "${KEEP:-}" ]]; then say "kept $work"; else rm -rf "$work"; fi
}

# free_port prints a loopback TCP port below the ephemeral range that no
# socket uses.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 12000))
		if [[ -z $(ss -Htan "sport = :$p") ]]; then echo "$p"; return; fi
	done
}
