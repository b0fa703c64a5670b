#!/usr/bin/env bash
# test_ops_openapi.sh - GET /openapi.json is the committed document, a valid OpenAPI 3.1
# description (openapi-spec-validator), and what the daemon really answers matches it:
# tests/lib/openapi_live.py sends requests to daemons on the tiny checkpoint and validates each
# answer (status documented, Content-Type, headers, JSON body against its schema with jsonschema):
#   1. a plain daemon: every GET endpoint, decisions (one state, many, strict, logits, Jev alias),
#      400/413/422 errors, then /drain and the 503/529 answers while draining;
#   2. a daemon with a bearer key: 401 answers, /docs off (docs = auto); /docs on with docs = true
#      and a key, off with docs = false and no key (that daemon, drained, answers the systemone
#      endpoints 529: systemone_busy_status = 529).
# The validator and jsonschema come pinned (tests/lib/openapi-requirements.txt) into a venv under
# the build directory; without PyPI the suite is skipped (77).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ops.sh"
ops_init
doc=server/api/openapi/openapi.json

venv=$OPS_BUILD/venv-openapi
rc=0; ops_venv "$venv" "$here/lib/openapi-requirements.txt" || rc=$?
[ $rc -eq 77 ] && ops_skip "PyPI unreachable: openapi-spec-validator and jsonschema not installed"
[ $rc -eq 0 ] || ops_fail "venv $venv"
py=$venv/bin/python

echo "-- the document"
"$py" -c 'import json, sys; from openapi_spec_validator import validate; validate(json.load(open(sys.argv[1])))' "$doc" \
  || ops_fail "openapi-spec-validator rejects $doc"
echo "openapi-spec-validator: valid"
# Every route the daemon serves (the table in server/http/routes.c) is in the document, and no more.
"$py" - "$doc" server/http/routes.c <<'PY' || ops_fail "the document and the routes table disagree"
import json, re, sys
doc = set(json.load(open(sys.argv[1]))["paths"])
routes = set(re.findall(r'\{"(/[^"]*)", EP_', open(sys.argv[2]).read()))
if not routes:
    sys.exit("no routes found in " + sys.argv[2])
if doc != routes:
    sys.exit("served but undocumented: %s; documented but not served: %s" % (sorted(routes - doc), sorted(doc - routes)))
print("the %d routes of routes.c, all documented" % len(routes))
PY

ops_start plain --max-questions 3
ops_wait_ready plain || ops_fail "the daemon did not become ready"
curl -sf "$(ops_url plain)/openapi.json" -o "$OPS_TMP/served.json" || ops_fail "GET /openapi.json"
cmp -s "$OPS_TMP/served.json" "$doc" || ops_fail "GET /openapi.json differs from $doc"
echo "GET /openapi.json: the committed document, byte for byte"

q3='{"department": {"type": "choice", "instructions": "Which team should handle this?", "criteria": {"billing": "Payments", "technical": "Bugs, outages", "sales": null}}, "frustration": {"type": "score", "instructions": "How frustrated is the customer?", "criteria": ["Calm", "Frustrated", "Very angry"]}, "is_urgent": {"type": "noul", "instructions": "The message conveys urgency.", "criteria": {"true": "time-sensitive", "false": "no urgency"}}}'
cat >"$OPS_TMP/plain.json" <<JSON
[
 {"method": "GET", "path": "/healthz", "status": 200},
 {"method": "GET", "path": "/readyz", "status": 200},
 {"method": "GET", "path": "/health", "status": 200},
 {"method": "GET", "path": "/v1/models", "status": 200},
 {"method": "GET", "path": "/metrics", "status": 200},
 {"method": "GET", "path": "/openapi.json", "status": 200},
 {"method": "GET", "path": "/docs", "status": 200},
 {"method": "POST", "path": "/decide", "status": 200, "body": {"model": "laya", "state": "Help! My payouts have been failing for 3 days.", "questions": $q3}},
 {"method": "POST", "path": "/decide", "status": 200, "body": {"states": ["first ticket", {"order": 17, "items": ["a", "b"]}], "questions": $q3}},
 {"method": "POST", "path": "/decide", "status": 200, "headers": {"X-Jev-Strict": "1"}, "body": {"state": "strict please", "questions": $q3}},
 {"method": "POST", "path": "/decide", "status": 200, "body": {"state": "with logits", "return_logits": true, "max_len": 128, "head_max_len": 64, "questions": $q3}},
 {"method": "POST", "path": "/decide", "status": 200, "body": {"state": "no questions", "questions": {}}},
 {"method": "POST", "path": "/v1/systemone", "status": 200, "body": {"model": "jev-latest", "state": {"ticket": "refund please"}, "questions": $q3}},
 {"method": "POST", "path": "/v1/systemone", "status": 200, "headers": {"X-Jev-Strict": "true"}, "body": {"state": "strict", "questions": $q3}},
 {"method": "POST", "path": "/v1/systemone", "status": 200, "body": {"state": "gated", "min_confidence": 0.9, "task": "laya", "lang": "en", "lang_guess": null, "questions": $q3}},
 {"method": "POST", "path": "/decide", "status": 200, "body": {"state": "gated by bucket", "min_confidence": {"choice:3-5": 0.1, "default": 0.99}, "questions": $q3}},
 {"method": "POST", "path": "/v1/systemone/batch", "status": 200, "body": {"states": ["one", {"two": 2}], "batch_size": 8, "sort_by_length": true, "min_confidence": 0.5, "questions": $q3}},
 {"method": "POST", "path": "/v1/systemone/batch", "status": 200, "headers": {"X-Jev-Strict": "1"}, "body": {"states": ["strict"], "questions": $q3}},
 {"method": "POST", "path": "/v1/systemone/batch", "status": 400, "body": {"questions": $q3}},
 {"method": "POST", "path": "/v1/systemone/batch", "status": 422, "body": {"states": ["x"], "diagnostics": true, "questions": $q3}},
 {"method": "POST", "path": "/decide", "status": 422, "body": {"state": "x", "min_confidence": 2, "questions": $q3}},
 {"method": "POST", "path": "/decide", "status": 400, "body": "{not json"},
 {"method": "POST", "path": "/decide", "status": 400, "body": {"questions": $q3}},
 {"method": "POST", "path": "/decide", "status": 422, "body": {"state": "x", "questions": {"q": {"type": "choice", "instructions": ""}}}},
 {"method": "POST", "path": "/decide", "status": 422, "body": {"model": "no-such-model", "state": "x", "questions": $q3}},
 {"method": "POST", "path": "/v1/systemone", "status": 422, "body": {"states": ["a"], "questions": $q3}},
 {"method": "POST", "path": "/decide", "status": 413, "body": {"state": "x", "questions": {"a": {"type": "noul", "instructions": "a"}, "b": {"type": "noul", "instructions": "b"}, "c": {"type": "noul", "instructions": "c"}, "d": {"type": "noul", "instructions": "d"}}}},
 {"method": "POST", "path": "/drain", "status": 200},
 {"method": "GET", "path": "/readyz", "status": 503},
 {"method": "GET", "path": "/health", "status": 200},
 {"method": "POST", "path": "/decide", "status": 503, "body": {"state": "late", "questions": $q3}},
 {"method": "POST", "path": "/v1/systemone", "status": 503, "body": {"state": "late", "questions": $q3}},
 {"method": "POST", "path": "/v1/systemone/batch", "status": 503, "body": {"states": ["late"], "questions": $q3}}
]
JSON
echo "-- 1. a plain daemon"
"$py" "$here/lib/openapi_live.py" "$doc" "$(ops_url plain)" "$OPS_TMP/plain.json" || ops_fail "live answers (log: $(tail -3 "$OPS_TMP/plain.log"))"
ops_stop plain TERM 30 || ops_fail "the plain daemon exited $?"

echo "-- 2. a daemon with a bearer key"
printf 'test-key-0123456789\n' >"$OPS_TMP/key"; chmod 600 "$OPS_TMP/key"
ops_start keyed --api-key-file "$OPS_TMP/key"
ops_start keyed_docs --api-key-file "$OPS_TMP/key" --docs true
ops_start no_docs --docs false --systemone-busy-status 529
ops_wait_ready keyed && ops_wait_ready keyed_docs && ops_wait_ready no_docs || ops_fail "the keyed daemons did not become ready"
cat >"$OPS_TMP/keyed.json" <<JSON
[
 {"method": "GET", "path": "/v1/models", "status": 401},
 {"method": "GET", "path": "/health", "status": 401},
 {"method": "GET", "path": "/metrics", "status": 401},
 {"method": "GET", "path": "/openapi.json", "status": 401},
 {"method": "POST", "path": "/decide", "status": 401, "body": {"state": "x", "questions": $q3}},
 {"method": "POST", "path": "/drain", "status": 401},
 {"method": "GET", "path": "/readyz", "status": 200},
 {"method": "GET", "path": "/docs", "status": 404},
 {"method": "GET", "path": "/openapi.json", "status": 200, "headers": {"Authorization": "Bearer test-key-0123456789"}},
 {"method": "POST", "path": "/v1/systemone", "status": 200, "headers": {"Authorization": "Bearer test-key-0123456789"}, "body": {"state": "x", "questions": $q3}}
]
JSON
"$py" "$here/lib/openapi_live.py" "$doc" "$(ops_url keyed)" "$OPS_TMP/keyed.json" || ops_fail "live answers, keyed"
echo '[{"method": "GET", "path": "/docs", "status": 200}]' >"$OPS_TMP/keyed_docs.json"
"$py" "$here/lib/openapi_live.py" "$doc" "$(ops_url keyed_docs)" "$OPS_TMP/keyed_docs.json" || ops_fail "/docs with docs = true"
cat >"$OPS_TMP/no_docs.json" <<JSON
[
 {"method": "GET", "path": "/docs", "status": 404},
 {"method": "POST", "path": "/drain", "status": 200},
 {"method": "POST", "path": "/v1/systemone", "status": 529, "body": {"state": "late", "questions": $q3}},
 {"method": "POST", "path": "/v1/systemone/batch", "status": 529, "body": {"states": ["late"], "questions": $q3}}
]
JSON
"$py" "$here/lib/openapi_live.py" "$doc" "$(ops_url no_docs)" "$OPS_TMP/no_docs.json" || ops_fail "/docs with docs = false; 529 with systemone_busy_status = 529"

echo "-- every documented operation was exercised"
cat "$OPS_TMP/plain.json" "$OPS_TMP/keyed.json" | "$py" -c '
import json, re, sys
doc = json.load(open(sys.argv[1]))
seen = set(re.findall(r"\"method\": \"(\w+)\", \"path\": \"([^\"]+)\"", sys.stdin.read()))
missing = [(m.upper(), p) for p, ops in doc["paths"].items() for m in ops if (m.upper(), p) not in seen]
if missing:
    sys.exit("not exercised: %s" % missing)
print("all %d operations" % sum(len(o) for o in doc["paths"].values()))' "$doc" || ops_fail "an operation has no live case"
ops_stop keyed TERM 30 || ops_fail "the keyed daemon exited $?"
ops_stop keyed_docs TERM 30 || ops_fail "the keyed_docs daemon exited $?"
ops_stop no_docs TERM 30 || ops_fail "the no_docs daemon exited $?"
echo "PASS"
