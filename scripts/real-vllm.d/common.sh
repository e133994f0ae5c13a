# shellcheck shell=bash
# Helpers shared by scripts/real-vllm and scripts/real-vllm.d/docker-level,
# sourced by both (docker-level runs as its own process).

say() { printf '\n== %s\n' "$*"; }
elapsed() { echo "$(($(date +%s) - $1))s"; }

# free_port: a TCP port on 127.0.0.1 that nothing listens on now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# served_errors LOG [FROM]: fails if the server logged an error while
# serving, after line FROM of LOG (default 0: all of it). Read it before the
# server is stopped (shutting down logs tracebacks of its own), and give
# FROM where an earlier server's shutdown is in the same log.
served_errors() {
	if tail -n "+$((${2:-0} + 1))" "$1" | grep -E 'Traceback|ERROR|Error in .*(stream|generator)'; then
		echo "FAIL: the server logged errors while serving ($1)"
		return 1
	fi
}
