# ops.sh - shell helpers for the tests/test_ops_*.sh suites (source it; bash only).
#
#   ops_init                 temp dir $OPS_TMP, the cleanup trap (stops every daemon still running)
#   ops_start NAME [ARGS...] `layad serve` on the tiny checkpoint (CPU, one thread) on a free
#                            loopback port; ARGS are extra serve flags (later flags win).
#                            Sets OPS_PORT[NAME], OPS_PID[NAME]; the log is $OPS_TMP/NAME.log
#   ops_wait_ready NAME [S]  until GET /readyz is 200 (default 60 s); fails if the daemon died
#   ops_stop NAME [SIG] [S]  signal (default TERM), wait (default 30 s, then KILL); prints nothing,
#                            returns the exit status (128+n when killed by signal n)
#   ops_url NAME             http://127.0.0.1:PORT
#   ops_free_port            a port that was free a moment ago
#   ops_venv DIR REQS        a virtualenv at DIR with the pinned requirements file REQS (reused
#                            while REQS is unchanged); returns 77 when PyPI cannot be reached,
#                            1 on another failure
#   ops_skip MSG / ops_fail MSG   print and exit 77 (scripts/run-tests counts a skip) / exit 1
#
# OPS_KEEP=1 keeps $OPS_TMP (logs, configurations) after the suite, for a look at a failure.
# Environment (the Makefile's test-cpu sets them): LAYAD_BIN, LAYAD_TINY, LAYAD_BUILD (the build
# directory, for venvs and test artifacts; default: the directory of LAYAD_BIN).

OPS_BIN=${LAYAD_BIN:-build/layad}
OPS_TINY=${LAYAD_TINY:-build/tiny}
OPS_BUILD=${LAYAD_BUILD:-$(dirname "$OPS_BIN")}
declare -gA OPS_PID=() OPS_PORT=()
OPS_TMP=

ops_fail() { echo "FAIL: $*"; exit 1; }
ops_skip() { echo "SKIP: $*"; exit 77; }

ops_cleanup() {
  local n
  for n in "${!OPS_PID[@]}"; do
    if kill -0 "${OPS_PID[$n]}" 2>/dev/null; then kill -KILL "${OPS_PID[$n]}" 2>/dev/null || true; fi
  done
  if [ -n "${OPS_KEEP:-}" ]; then echo "kept $OPS_TMP"; elif [ -n "$OPS_TMP" ]; then rm -rf "$OPS_TMP"; fi
}

# The extra cleanup of a suite (haproxy, a browser) runs first: set OPS_EXTRA_CLEANUP to a function.
ops_init() {
  OPS_TMP=$(mktemp -d /tmp/layad-ops.XXXXXX)
  trap 'rc=$?; [ -z "${OPS_EXTRA_CLEANUP:-}" ] || $OPS_EXTRA_CLEANUP; ops_cleanup; exit $rc' EXIT
}

ops_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

ops_url() { echo "http://127.0.0.1:${OPS_PORT[$1]}"; }

ops_start() {
  local name=$1; shift
  local port; port=$(ops_free_port)
  "$OPS_BIN" serve --model "$OPS_TINY" --device cpu --bind 127.0.0.1 --port "$port" \
    --log-file "$OPS_TMP/$name.log" --cpu-threads 1 "$@" </dev/null >>"$OPS_TMP/$name.out" 2>&1 &
  OPS_PID[$name]=$!
  OPS_PORT[$name]=$port
}

ops_wait_ready() {
  local name=$1 limit=${2:-60} i
  for ((i = 0; i < limit * 20; i++)); do
    kill -0 "${OPS_PID[$name]}" 2>/dev/null || { cat "$OPS_TMP/$name.out" "$OPS_TMP/$name.log" 2>/dev/null | tail -20; return 1; }
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$(ops_url "$name")/readyz")" = 200 ] && return 0
    sleep 0.05
  done
  return 1
}

ops_stop() {
  local name=$1 sig=${2:-TERM} limit=${3:-30} pid=${OPS_PID[$1]} i rc
  kill -"$sig" "$pid" 2>/dev/null || true
  for ((i = 0; i < limit * 20; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null && rc=0 || rc=$?
  unset "OPS_PID[$name]"
  return $rc
}

ops_venv() {
  local dir=$1 reqs=$2
  local stamp; stamp="$dir/.pinned-$(md5sum <"$reqs" | cut -c1-12)"
  [ -f "$stamp" ] && return 0
  python3 -m venv "$dir" >/dev/null 2>&1 || { echo "cannot create a venv at $dir (python3-venv)"; return 1; }
  if ! "$dir/bin/pip" install -q --disable-pip-version-check --timeout 20 -r "$reqs" >"$dir/pip.log" 2>&1; then
    if grep -qiE 'connection|resolve|network|timed out|No matching distribution|Could not find a version' "$dir/pip.log"; then
      tail -3 "$dir/pip.log"; return 77
    fi
    tail -20 "$dir/pip.log"; return 1
  fi
  touch "$stamp"
}
