#!/usr/bin/env bash
# test_ops_docs.sh - the /docs page in headless Chromium (Debian's chromium, chromium-driver and
# python3-selenium, from scripts/setup): tests/lib/docs_page.py loads it from a tiny daemon,
# submits a decision through the form and requires the rendered probabilities (text and bar
# widths) to equal the JSON API's answer to the same body; nothing is loaded from another
# origin, and the page comes with a Content-Security-Policy that forbids it. Then the same with a bearer key and docs = true: the page shows the 401 until the key
# is typed into it. The screenshots are kept in $LAYAD_BUILD/test-artifacts/docs*.png. Skipped
# (77) where the browser or selenium is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ops.sh"
ops_init
py=/usr/bin/python3 # Debian's, where python3-selenium lives (another python3 may come first in PATH)
[ -x "$py" ] || py=python3
command -v chromium >/dev/null && command -v chromedriver >/dev/null || ops_skip "chromium / chromium-driver not installed"
"$py" -c 'import selenium' 2>/dev/null || ops_skip "python3-selenium not installed"

art=$OPS_BUILD/test-artifacts
mkdir -p "$art"
ops_start docs
ops_wait_ready docs || ops_fail "the daemon did not become ready"
# The page comes with a policy that lets the browser load nothing but it and this daemon's API.
csp=$(curl -sI "$(ops_url docs)/docs" | tr -d '\r' | sed -n 's/^Content-Security-Policy: //Ip')
echo "Content-Security-Policy: $csp"
case "$csp" in *"default-src 'none'"*"connect-src 'self'"*) ;; *) ops_fail "no restrictive CSP on /docs: '$csp'" ;; esac
HOME=$OPS_TMP timeout 120 "$py" "$here/lib/docs_page.py" "$(ops_url docs)" "$art/docs.png" || ops_fail "the /docs page (log: $OPS_TMP/docs.log)"
[ -s "$art/docs.png" ] || ops_fail "no screenshot"
grep -q 'GET /docs status=200' "$OPS_TMP/docs.log" || ops_fail "the daemon did not serve /docs"
grep -qE 'POST /decide (model=[^ ]+ )?status=200' "$OPS_TMP/docs.log" || ops_fail "the page did not reach /decide"
ops_stop docs TERM 30 || ops_fail "the daemon exited $?"

echo "-- a daemon with a bearer key and docs = true: the key typed into the page"
printf 'docs-test-key-42\n' >"$OPS_TMP/key"; chmod 600 "$OPS_TMP/key"
ops_start keyed --api-key-file "$OPS_TMP/key" --docs true
ops_wait_ready keyed || ops_fail "the keyed daemon did not become ready"
HOME=$OPS_TMP timeout 120 "$py" "$here/lib/docs_page.py" "$(ops_url keyed)" "$art/docs-keyed.png" docs-test-key-42 \
  || ops_fail "the /docs page with a key (log: $OPS_TMP/keyed.log)"
grep -q 'GET /v1/models status=401' "$OPS_TMP/keyed.log" || ops_fail "the page's first /v1/models was not refused"
ops_stop keyed TERM 30 || ops_fail "the keyed daemon exited $?"
echo "PASS"
