#!/usr/bin/env bash
# test_ops_haproxy.sh - deploy/haproxy.cfg in front of two layad instances on loopback (tiny
# checkpoint, CPU), with Debian's haproxy. The shipped file runs as it is but for what names the
# hosts: the listen address, the admin socket's path, and the three example servers replaced by
# the two daemons; one line is added, X-Served-By on responses, so the test sees which daemon
# answered. Four clients send decisions throughout (tests/lib/ha_load.py, a fresh connection per
# request). Checked:
#   1. `haproxy -c` accepts the shipped file and the derived one;
#   2. requests spread over both daemons, every one answered 200;
#   3. POST /drain on daemon a: not one request fails (HAProxy retries a 503 on the other server),
#      and once HAProxy's check has marked a down, b answers everything;
#   4. a restarted: HAProxy brings it back and it takes requests again; SIGTERM on b: not one
#      request fails, b exits 0, and a answers everything after.
# Skipped (77) without haproxy.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ops.sh"
ops_init
command -v haproxy >/dev/null || ops_skip "haproxy is not installed"
hap_pid=
hap_cleanup() { [ -z "$hap_pid" ] || kill "$hap_pid" 2>/dev/null || true; touch "$OPS_TMP/stop"; }
OPS_EXTRA_CLEANUP=hap_cleanup
cfg=deploy/haproxy.cfg
sock=$OPS_TMP/admin.sock
lb_port=$(ops_free_port)

echo "-- 1. the configuration"
haproxy -c -q -f "$cfg" || ops_fail "haproxy -c rejects $cfg"
ops_start a
ops_start b
ops_wait_ready a && ops_wait_ready b || ops_fail "the daemons did not become ready"
sed -e "s|stats socket /run/haproxy/admin.sock|stats socket $sock|" \
    -e "s|^\( *bind\) :8080|\1 127.0.0.1:$lb_port|" \
    -e '/^ *server gpu-host-[23] /d' \
    -e "s|^\( *\)server gpu-host-1 .*|\1server a 127.0.0.1:${OPS_PORT[a]}\n\1server b 127.0.0.1:${OPS_PORT[b]}\n\1http-response set-header X-Served-By %s|" \
    "$cfg" >"$OPS_TMP/haproxy.cfg"
grep -c '^ *server [ab] 127.0.0.1' "$OPS_TMP/haproxy.cfg" | grep -qx 2 || ops_fail "the derived configuration has not both servers"
haproxy -c -q -f "$OPS_TMP/haproxy.cfg" || ops_fail "haproxy -c rejects the derived configuration"
haproxy -db -f "$OPS_TMP/haproxy.cfg" >"$OPS_TMP/haproxy.log" 2>&1 &
hap_pid=$!

# "a b" state per server from the runtime API (UP, DOWN, MAINT, ...).
hap_state() {
  python3 - "$sock" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"show stat\n")
data = b""
while chunk := s.recv(65536):
    data += chunk
for line in data.decode().splitlines():
    f = line.split(",")
    if len(f) > 17 and f[0] == "layad" and f[1] == sys.argv[2]:
        print(f[17].split(" ")[0])
PY
}
wait_state() { # server state seconds
  local i
  for ((i = 0; i < $3 * 10; i++)); do [ "$(hap_state "$1" 2>/dev/null)" = "$2" ] && return 0; sleep 0.1; done
  return 1
}
wait_state a UP 10 && wait_state b UP 10 || ops_fail "haproxy does not see both servers UP ($(tail -5 "$OPS_TMP/haproxy.log"))"

load=$OPS_TMP/load.txt
python3 "$here/lib/ha_load.py" "http://127.0.0.1:$lb_port" 4 "$OPS_TMP/stop" "$load" &
load_pid=$!
mark() { python3 -c 'import time; print("%.4f" % time.monotonic())'; }
# Lines of $load after time $1 (and before $2): "status server".
since() { awk -v t="$1" -v u="${2:-1e18}" '$1 >= t && $1 < u { print $2, $3 }' "$load"; }
failures() { awk '$2 != 200' "$load"; }
# Answers by server S since time T (a sanitizer build answers ~10 a second, a plain one ~300).
count_since() { since "$2" | grep -c " $1\$" || true; }
# Waits up to SECONDS for COUNT answers by server S since time T.
wait_answers() { # S T COUNT SECONDS
  local i
  for ((i = 0; i < $4 * 10; i++)); do [ "$(count_since "$1" "$2")" -ge "$3" ] && return 0; sleep 0.1; done
  return 1
}

echo "-- 2. spread"
sleep 3
wait_answers a 0 10 30 && wait_answers b 0 10 30 || true
n_a=$(count_since a 0); n_b=$(count_since b 0)
echo "a answered $n_a, b answered $n_b"
[ "$n_a" -ge 10 ] && [ "$n_b" -ge 10 ] || ops_fail "requests did not spread over both (a $n_a, b $n_b)"
[ -z "$(failures)" ] || ops_fail "failed requests: $(failures | head -5)"

echo "-- 3. POST /drain on a"
t_drain=$(mark)
curl -sf -X POST "$(ops_url a)/drain" >/dev/null || ops_fail "POST /drain"
wait_state a DOWN 15 || ops_fail "haproxy did not mark the drained a DOWN"
t_down=$(mark)
sleep 2
wait_answers b "$t_down" 10 30 || ops_fail "b answered fewer than 10 after the drain"
t_end=$(mark)
after=$(since "$t_down" "$t_end")
echo "drain to DOWN: $(awk -v a="$t_drain" -v b="$t_down" 'BEGIN { printf "%.1f", b - a }') s; then $(echo "$after" | wc -l) requests, $(echo "$after" | grep -c ' a$' || true) on a"
[ -z "$(failures)" ] || ops_fail "failed requests around the drain: $(failures | head -5)"
! grep -q ' a$' <<<"$after" || ops_fail "a still answered after haproxy marked it down"
grep -q ' b$' <<<"$after" || ops_fail "b answered nothing after the drain"

echo "-- 4. a restarted, then SIGTERM on b"
ops_stop a TERM 30 || ops_fail "the drained a exited $?"
port_a=${OPS_PORT[a]}
"$OPS_BIN" serve --model "$OPS_TINY" --device cpu --bind 127.0.0.1 --port "$port_a" --log-file "$OPS_TMP/a2.log" \
  --cpu-threads 1 </dev/null >>"$OPS_TMP/a2.out" 2>&1 &
OPS_PID[a2]=$!; OPS_PORT[a2]=$port_a
ops_wait_ready a2 || ops_fail "a did not restart"
wait_state a UP 15 || ops_fail "haproxy did not bring a back"
sleep 3 # slowstart ramps a's weight up
t_back=$(mark)
wait_answers a "$t_back" 5 30 || ops_fail "the restarted a takes no requests"
rc=0; ops_stop b TERM 30 || rc=$?
[ $rc -eq 0 ] || ops_fail "b exited $rc after SIGTERM"
wait_state b DOWN 15 || ops_fail "haproxy did not mark b DOWN"
t_bdown=$(mark)
sleep 2
wait_answers a "$t_bdown" 10 30 || ops_fail "a answered fewer than 10 after b stopped"
touch "$OPS_TMP/stop"; wait "$load_pid"
after=$(since "$t_bdown")
echo "SIGTERM: b exited 0; then $(echo "$after" | wc -l) requests, $(echo "$after" | grep -c ' b$' || true) on b"
[ -z "$(failures)" ] || ops_fail "failed requests around the SIGTERM: $(failures | head -5)"
! grep -q ' b$' <<<"$after" || ops_fail "b answered after it stopped"
grep -q ' a$' <<<"$after" || ops_fail "a answered nothing after b stopped"
total=$(wc -l <"$load")
echo "$total requests through haproxy, all 200 ($(grep -c ' a ' "$load") a, $(grep -c ' b ' "$load") b)"
ops_stop a2 TERM 30 || ops_fail "a exited $?"
echo "PASS"
