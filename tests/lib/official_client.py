"""The official `laya` 0.4.15 client, unchanged, against a running layad.

Run by tests/test_ops_official_client.sh inside a virtualenv holding laya (no torch: the
remote paths import none) and numpy. argv: base URL, the name layad serves, "serve" or
"busy" or "busy529". Every check raises on failure; the last line printed is PASS.

What each part exercises (the client code paths, as laya 0.4.15 ships them):
  RemoteRouter.predict / predict_batch   laya.mcp.remote: POST /v1/systemone, errors by status
  laya.decide / decide_batch             laya.structured over the RemoteRouter
  LayaToolSelector(base_url=...)         laya.integrations.tools: its own urllib call
  laya.mcp.tools laya_predict / laya_status / laya_decide   the MCP server's tools in remote mode
  /v1/systemone/batch                    laya-serve's batch shape, raw
"""
import copy
import json
import sys
import urllib.error
import urllib.request

from laya.confidence import apply_confidence_gate, jev_confidence
from laya.integrations.tools import LayaToolSelector
from laya.mcp.remote import RemoteError, RemoteRouter
from laya.mcp import tools as mcp_tools
import laya

BASE, SERVED, MODE = sys.argv[1], sys.argv[2], sys.argv[3]

QUESTIONS = {
    "department": {"type": "choice", "instructions": "Which team should handle this?",
                   "criteria": {"billing": "Payments, invoicing, refunds",
                                "technical": "Bugs, outages, integrations", "sales": None}},
    "frustration": {"type": "score", "instructions": "How frustrated is the customer?",
                    "criteria": ["Calm", "Frustrated", "Very angry"]},
    "is_urgent": {"type": "noul", "instructions": "The message conveys urgency."},
}
STATES = ["Help! My payouts have been failing for 3 days.", {"ticket": 42, "body": "Refund please"},
          ["first line", "second line"]]


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def raw(path, body):
    """POST body; (status, headers, parsed body)."""
    req = urllib.request.Request(BASE + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.headers, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, e.headers, json.loads(e.read())


def check_jev(result):
    """x_jev_confidence on choice and score answers, equal to laya's own formula, last key."""
    for qid, a in result["answers"].items():
        if a["type"] == "noul":
            check("x_jev_confidence" not in a, "%s: noul with x_jev_confidence" % qid)
            continue
        want = round(jev_confidence(a), 4)
        check(a.get("x_jev_confidence") == want, "%s: x_jev_confidence %r, laya says %r" % (qid, a.get("x_jev_confidence"), want))
        check(list(a)[-1] == "x_jev_confidence", "%s: x_jev_confidence is not the last key" % qid)


def serve_checks():
    rr = RemoteRouter(BASE)
    # /health, as RemoteRouter and laya_status read it
    check(rr.loaded == [SERVED], "loaded %r" % rr.loaded)
    check(list(rr.loaded_revisions) == [SERVED], "revisions %r" % rr.loaded_revisions)
    status = mcp_tools.laya_status(router=rr)
    check(status["mode"] == "remote" and status["loaded"] == [SERVED], "laya_status %r" % status)

    # predict: the answer shape, x_jev_confidence as laya computes it
    singles = [rr.predict(s, QUESTIONS) for s in STATES]
    for r in singles:
        check(list(r["answers"]) == list(QUESTIONS), "answer order %r" % list(r["answers"]))
        check(r["usage"]["input_tokens"] > 0, "usage %r" % r["usage"])
        check_jev(r)
    # min_confidence: laya's gate on the same answers, field for field and in laya's key order
    gated = rr.predict(STATES[0], QUESTIONS, min_confidence={"choice:3-5": 0.99, "default": 0.2})
    want = copy.deepcopy(singles[0])
    for a in want["answers"].values():
        a.pop("x_jev_confidence", None)
    apply_confidence_gate([want], {"choice:3-5": 0.99, "default": 0.2})
    check_jev(gated)
    for qid, a in gated["answers"].items():
        a = dict(a)
        a.pop("x_jev_confidence", None)
        check(list(a.items()) == list(want["answers"][qid].items()), "gate on %s: %r, laya %r" % (qid, a, want["answers"][qid]))
    check(gated["answers"]["department"]["abstention"] == "abstained", "the 0.99 gate did not abstain")
    # task naming the served model (laya's spelling), strict mode leaves the additions out
    check(rr.predict(STATES[0], QUESTIONS, task=SERVED)["answers"] == singles[0]["answers"], "task changed the answers")

    # predict_batch (one /v1/systemone per request, as the client does it) and /v1/systemone/batch
    batch = rr.predict_batch([{"state": s, "questions": QUESTIONS} for s in STATES])
    check([b["answers"] for b in batch] == [s["answers"] for s in singles], "predict_batch differs from predict")
    st, _, body = raw("/v1/systemone/batch", {"states": STATES, "questions": QUESTIONS})
    check(st == 200, "batch status %d %r" % (st, body))
    check([r["answers"] for r in body["results"]] == [s["answers"] for s in singles], "batch differs from predict")
    check(body["total_usage"]["input_tokens"] == sum(s["usage"]["input_tokens"] for s in singles), "total_usage")

    # laya.decide / decide_batch: schema values projected from the remote answers
    schema = {"type": "object", "properties": {
        "team": {"enum": ["billing", "technical", "sales"], "description": "Which team should handle this?"},
        "urgent": {"type": "boolean", "description": "The message conveys urgency."},
        "anger": {"type": "integer", "minimum": 0, "maximum": 2, "description": "How angry is the customer?"}}}
    values = laya.decide(rr, STATES[0], schema=schema)
    check(values["team"] in ("billing", "technical", "sales") and isinstance(values["urgent"], bool)
          and values["anger"] in (0, 1, 2), "decide %r" % values)
    many = laya.decide_batch(rr, STATES, schema=schema)
    check(len(many) == 3 and many[0] == values, "decide_batch %r" % many)
    mcp_decide = mcp_tools.laya_decide(STATES[1], schema, router=rr)  # MCP states are objects
    check(mcp_decide["values"] == many[1], "laya_decide %r" % mcp_decide)

    # the tool selector, over its own HTTP call
    def refund(order_id):
        """Refund an order."""
    def status(order_id):
        """Look up the status of an order."""
    sel = LayaToolSelector(tools=[refund, status], base_url=BASE, allow_direct_answer=True)
    d = sel.select("Where is my package? Order 1234.")
    check(d.tool_name in ("refund", "status", "__direct_answer__"), "selected %r" % d.tool_name)
    check(set(d.probabilities) == {"refund", "status", "__direct_answer__"}, "probabilities %r" % d.probabilities)
    check(0.0 <= d.confidence <= 1.0 and not d.is_fallback, "decision %r" % d)

    # the MCP tool in remote mode
    out = mcp_tools.laya_predict(STATES[1], QUESTIONS, router=rr)
    check(out["answers"] == singles[1]["answers"], "laya_predict %r" % out)

    # errors: the client shows the server's `detail`
    bad = {"a": {"type": "bogus", "instructions": "x"}}
    st, _, body = raw("/v1/systemone", {"state": "x", "questions": bad})
    check(st == 422 and body["detail"] == body["error"]["message"], "422 body %r" % body)
    try:
        rr.predict("x", bad)
        check(False, "a bad question was answered")
    except RemoteError as e:
        check(e.code == "invalid_request" and e.message == body["detail"], "RemoteError %s %r" % (e.code, e.message))
    for kwargs, text in (({"min_confidence": 2}, "min_confidence must be a float in [0.0, 1.0], got 2"),
                         ({"task": "bogus"}, "unknown model 'bogus'; choose one of ["),
                         ({"task": "multilingual"}, "task names the multilingual checkpoint")):
        try:
            rr.predict("x", QUESTIONS, **kwargs)
            check(False, "%r was answered" % kwargs)
        except RemoteError as e:
            check(e.code == "invalid_request" and e.message.startswith(text), "%r: %s %r" % (kwargs, e.code, e.message))
    try:
        LayaToolSelector(tools=["a", "b"], base_url=BASE, max_len=10 ** 7).select("x")
        check(False, "an over-cap max_len was answered")
    except RuntimeError as e:
        check("Laya server error 422" in str(e) and "max_len exceeds server limit" in str(e), "selector error %s" % e)


def busy_checks(status):
    """A draining daemon: 503 (default) is what RemoteRouter calls busy; 529 is an upstream error."""
    st, headers, body = raw("/v1/systemone", {"state": "x", "questions": QUESTIONS})
    check(st == status and headers.get("Retry-After"), "busy answer %d %r" % (st, dict(headers)))
    try:
        RemoteRouter(BASE).predict("x", QUESTIONS)
        check(False, "a draining daemon answered")
    except RemoteError as e:
        if status == 503:
            check(e.code == "busy" and e.message == "laya-serve is busy: " + body["detail"], "%s %r" % (e.code, e.message))
        else:
            check(e.code == "upstream_error" and "HTTP 529" in e.message, "%s %r" % (e.code, e.message))
    st, _, _ = raw("/v1/systemone/batch", {"states": ["x"], "questions": QUESTIONS})
    check(st == status, "batch busy status %d" % st)


if MODE == "serve":
    serve_checks()
else:
    busy_checks(529 if MODE == "busy529" else 503)
print("PASS", MODE)
