#!/usr/bin/env bash
# test_ops_systemd.sh - the systemd packaging as `make install DESTDIR=$LAYAD_STAGE PREFIX=/usr`
# lays it out (the Makefile's $(BUILD)/stage rule makes the tree before scripts/run-tests runs
# this):
#   1. files, modes, and the paths the unit names follow PREFIX (ExecStart, Documentation);
#   2. `systemd-analyze verify` of the installed unit says nothing;
#   3. `systemd-analyze security --offline=yes` rates its exposure <= 2.0;
#   4. as root: systemd-sysusers + systemd-tmpfiles on a copy of the tree create the layad user,
#      /var/lib/layad and give the key-holding files to root:layad 0640;
#   5. every system call a serving daemon makes (CPU backend, under strace: start-up, decisions,
#      /metrics, /health, SIGTERM) is allowed by the unit's SystemCallFilter= (plain builds only:
#      the sanitizer runtimes make calls of their own).
# A step whose tool is missing (strace, --offline on systemd < 252, root) prints SKIP.
set -euo pipefail
stage=${LAYAD_STAGE:?LAYAD_STAGE: the tree make install wrote}
stage=$(cd "$stage" && pwd)
unit=$stage/usr/lib/systemd/system/layad.service
tmp=$(mktemp -d)
daemon=
cleanup() {
  if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then kill -KILL "$daemon"; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
mode() { stat -c '%a' "$1"; }

echo "-- 1. installed files"
for f in usr/bin/layad usr/lib/sysusers.d/layad.conf usr/lib/tmpfiles.d/layad.conf \
         usr/share/doc/layad/README.md usr/share/layad/grafana/layad-dashboard.json \
         usr/share/layad/prometheus/layad-rules.yml usr/share/layad/prometheus/prometheus.yml; do
  [ -f "$stage/$f" ] || fail "$f not installed"
done
[ "$(mode "$stage/usr/bin/layad")" = 755 ] || fail "layad is not 0755"
for f in etc/layad/layad.conf etc/default/layad; do
  [ "$(mode "$stage/$f")" = 640 ] || fail "$f is $(mode "$stage/$f"), not 0640 (it may hold a key)"
done
grep -qx 'ExecStart=/usr/bin/layad serve --config /etc/layad/layad.conf' "$unit" || fail "ExecStart does not follow PREFIX"
grep -qx 'Documentation=file:///usr/share/doc/layad/README.md' "$unit" || fail "Documentation does not follow PREFIX"
! grep -n '/usr/local' "$unit" || fail "the unit still names /usr/local"
grep -qx 'StateDirectory=layad' "$unit" || fail "no StateDirectory=layad"
"$stage/usr/bin/layad" --version | head -1 | grep -q '^layad ' || fail "the installed layad --version"

echo "-- 2. systemd-analyze verify"
# A root holding the installed tree, the host's units (sysinit.target & co., which the unit's
# default dependencies name) and /bin/kill (ExecReload).
root=$tmp/root
cp -a "$stage" "$root"
mkdir -p "$root/usr/lib/systemd/system" "$root/bin"
cp -an /lib/systemd/system/. "$root/usr/lib/systemd/system/"
cp /bin/kill "$root/bin/kill"
out=$(systemd-analyze verify --man=no --root="$root" layad.service 2>&1) || fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify warns: $out"
echo "verify: clean"

echo "-- 3. systemd-analyze security"
if systemd-analyze security --help 2>&1 | grep -q -- '--offline'; then
  out=$(systemd-analyze security --offline=yes --root="$root" layad.service 2>&1) || true
  score=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for layad.service: \([0-9.]*\).*/\1/p')
  [ -n "$score" ] || fail "no exposure level in: $out"
  echo "exposure: $score"
  awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' || fail "exposure $score > 2.0:
$(printf '%s\n' "$out" | grep '✗')"
else
  echo "SKIP security: systemd-analyze has no --offline (systemd < 252)"
fi

echo "-- 4. sysusers.d + tmpfiles.d"
if [ "$(id -u)" = 0 ]; then
  systemd-sysusers --root="$root" "$root/usr/lib/sysusers.d/layad.conf"
  systemd-tmpfiles --root="$root" --create "$root/usr/lib/tmpfiles.d/layad.conf"
  uid=$(awk -F: '$1 == "layad" { print $3 }' "$root/etc/passwd")
  gid=$(awk -F: '$1 == "layad" { print $3 }' "$root/etc/group")
  [ -n "$uid" ] && [ -n "$gid" ] || fail "sysusers made no layad user and group"
  awk -F: '$1 == "layad" && $7 == "/usr/sbin/nologin" { ok = 1 } END { exit !ok }' "$root/etc/passwd" || fail "layad has a login shell"
  for f in etc/layad/layad.conf etc/default/layad; do
    [ "$(stat -c '%a %u:%g' "$root/$f")" = "640 0:$gid" ] || fail "$f is $(stat -c '%a %u:%g' "$root/$f"), not 640 root:layad"
  done
  [ "$(stat -c '%a %u:%g' "$root/etc/layad")" = "750 0:$gid" ] || fail "/etc/layad is not 750 root:layad"
  [ "$(stat -c '%a %u:%g' "$root/var/lib/layad")" = "750 $uid:$gid" ] || fail "/var/lib/layad is not 750 layad:layad"
  echo "layad uid $uid gid $gid; config and env 0640 root:layad; /var/lib/layad 0750 layad"
else
  echo "SKIP sysusers/tmpfiles: not root"
fi

echo "-- 5. system calls of a serving daemon vs SystemCallFilter="
bin=${LAYAD_BIN:-build/layad}
tiny=${LAYAD_TINY:-build/tiny}
if ! command -v strace >/dev/null; then
  echo "SKIP syscalls: no strace"
elif ldd "$bin" | grep 'libasan\|libubsan' >/dev/null; then # not -q: with pipefail, ldd's SIGPIPE would fail the test
  echo "SKIP syscalls: sanitizer build (its runtime makes calls of its own)"
elif ! strace -f -qq -o /dev/null true 2>/dev/null; then
  echo "SKIP syscalls: ptrace is not permitted here"
else
  strace -f -qq -ff -o "$tmp/trace" "$bin" serve --model "$tiny" --device cpu --bind 127.0.0.1 --port 0 \
    --cpu-threads 2 >"$tmp/log" 2>&1 &
  daemon=$!
  port=
  for _ in $(seq 300); do
    port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/log")
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
    kill -0 "$daemon" 2>/dev/null || fail "the daemon exited: $(cat "$tmp/log")"
    sleep 0.1
  done
  [ -n "$port" ] || fail "no port in the log: $(cat "$tmp/log")"
  body='{"state": "my payout failed", "questions": {"u": {"type": "noul", "instructions": "Urgent?"}}}'
  for path in /decide /v1/systemone; do
    curl -sf -XPOST "http://127.0.0.1:$port$path" -d "$body" >/dev/null || fail "POST $path"
  done
  for path in /metrics /health /v1/models /healthz; do
    curl -sf "http://127.0.0.1:$port$path" >/dev/null || fail "GET $path"
  done
  # SIGTERM to layad itself (strace's child; strace would only detach), then strace follows it out.
  layad=$(ps -o pid= --ppid "$daemon" | tr -d ' ')
  [ -n "$layad" ] || fail "no layad under strace"
  kill -TERM "$layad"
  wait "$daemon" || fail "the traced daemon's exit status $?: $(tail -5 "$tmp/log")"
  daemon=
  # The unit's filter: @system-service without @privileged and @resources, groups expanded.
  systemd-analyze syscall-filter >"$tmp/groups" 2>/dev/null
  allowed=$(awk '
    /^@/ { g = $1; next }
    /^ +[^#]/ && g != "" { m[g] = m[g] " " $1 }
    function expand(g,    n, a, i, s) {
      n = split(m[g], a, " ")
      for (i = 1; i <= n; i++) s = s " " (a[i] ~ /^@/ ? expand(a[i]) : a[i])
      return s
    }
    END {
      n = split(expand("@system-service"), a, " "); for (i = 1; i <= n; i++) ok[a[i]] = 1
      n = split(expand("@privileged") " " expand("@resources"), a, " "); for (i = 1; i <= n; i++) delete ok[a[i]]
      for (s in ok) print s
    }' "$tmp/groups" | sort -u)
  used=$(cat "$tmp"/trace.* | sed -n 's/^\([a-z0-9_]*\)(.*/\1/p' | sort -u)
  denied=$(comm -23 <(printf '%s\n' "$used") <(printf '%s\n' "$allowed"))
  echo "$(printf '%s\n' "$used" | wc -l) distinct system calls"
  [ -z "$denied" ] || fail "the daemon calls what SystemCallFilter= refuses: $denied"
fi
echo "PASS"
