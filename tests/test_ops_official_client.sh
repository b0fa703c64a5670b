#!/usr/bin/env bash
# test_ops_official_client.sh - the official `laya` 0.4.15 client, unchanged, against layad
# (CPU backend, tiny model): predict, predict_batch, /v1/systemone/batch, laya.decide and
# decide_batch, the tool selector, the MCP tools in remote mode, error messages (the client
# shows the server's `detail`) and a draining daemon (503 + Retry-After is "busy" to the
# client; with systemone_busy_status = 529 it is an upstream error). The checks are in
# tests/lib/official_client.py.
#
# The client comes from PyPI into a virtualenv under the build directory (laya without its
# dependencies: the remote paths import no torch; numpy pinned), made once and reused. Without
# PyPI it exits 77 (skipped).
set -euo pipefail
bin=${LAYAD_BIN:-build/layad}
tiny=${LAYAD_TINY:-build/tiny}
venv=$(dirname "$bin")/venv-official-client
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
daemon=
stop_daemon() {
  if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then
    kill -TERM "$daemon"
    wait "$daemon" || true
  fi
  daemon=
}
cleanup() { stop_daemon; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/log" ] && tail -5 "$tmp/log"; exit 1; }

if ! "$venv/bin/python" -c 'import laya, numpy' 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv" || fail "python3 -m venv (scripts/setup installs python3-venv)"
  if ! timeout 300 "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "laya==0.4.15" \
       || ! timeout 300 "$venv/bin/pip" install -q --disable-pip-version-check "numpy==2.2.6"; then
    if ! timeout 20 "$venv/bin/python" -c 'import urllib.request as u; u.urlopen("https://pypi.org/simple/laya/", timeout=15)' \
         2>/dev/null; then
      rm -rf "$venv"
      echo "SKIP: PyPI is unreachable"
      exit 77
    fi
    fail "pip install laya==0.4.15 / numpy==2.2.6 with PyPI reachable"
  fi
fi

# start_daemon ARGS...: layad on the tiny model on a free port; sets $port.
start_daemon() {
  "$bin" serve --model "$tiny" --device cpu --bind 127.0.0.1 --port 0 --cpu-threads 1 "$@" >"$tmp/log" 2>&1 &
  daemon=$!
  port=
  for _ in $(seq 300); do
    port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/log")
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && return 0
    kill -0 "$daemon" 2>/dev/null || fail "the daemon exited: $(cat "$tmp/log")"
    sleep 0.1
  done
  fail "not ready in 30 s"
}

client() { "$venv/bin/python" "$here/lib/official_client.py" "http://127.0.0.1:$port" "$served" "$1"; }

echo "-- serving, then draining (systemone_busy_status = 503, the default)"
start_daemon
served=$(curl -sf "http://127.0.0.1:$port/v1/models" | "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])')
client serve || fail "the official client against a serving daemon"
curl -sf -XPOST "http://127.0.0.1:$port/drain" >/dev/null || fail "POST /drain"
client busy || fail "the official client against a draining daemon"
stop_daemon

echo "-- draining with systemone_busy_status = 529"
LAYAD_SYSTEMONE_BUSY_STATUS=529 start_daemon
curl -sf -XPOST "http://127.0.0.1:$port/drain" >/dev/null || fail "POST /drain"
client busy529 || fail "529 is not what the client reads as busy"
stop_daemon
echo "PASS"
