#!/usr/bin/env python3
"""openapi_live.py - live answers of a running layad against its own OpenAPI document.

Usage: openapi_live.py DOC BASE_URL CASES.json

CASES.json is a list of {"method", "path", "body" (JSON value or string, optional), "headers"
(optional), "status" (the status expected)}. For each case the request is sent to BASE_URL, its
status compared with "status", and then the answer is looked up in DOC (paths -> method ->
responses -> status -> content -> media type): the status must be documented, the Content-Type
must be a documented media type, a JSON body must validate against the documented schema
(JSON Schema 2020-12, $refs resolved inside DOC), and the documented headers (Retry-After,
X-Request-Id) must be present and match their schemas. A JSON request body is also validated
against the operation's request schema when the expected status is 200, so the examples the
test sends keep the request schemas honest too.

Prints one line per case; exits 1 on the first mismatch, naming it.
"""
import json
import sys
import urllib.error
import urllib.request

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

DOC_URI = "urn:layad-openapi"


def validator_for(doc, pointer):
    """A 2020-12 validator for the schema at JSON pointer `pointer` inside the document."""
    registry = Registry().with_resource(DOC_URI, Resource(contents=doc, specification=DRAFT202012))
    return jsonschema.Draft202012Validator({"$ref": DOC_URI + "#" + pointer}, registry=registry)


def esc(s):
    return s.replace("~", "~0").replace("/", "~1")


def resolve(doc, obj):
    while isinstance(obj, dict) and "$ref" in obj:
        node = doc
        for part in obj["$ref"].lstrip("#/").split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        obj = node
    return obj


def send(base, case):
    body = case.get("body")
    data = None
    if body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    req = urllib.request.Request(base + case["path"], data=data, method=case["method"])
    if data is not None:
        req.add_header("Content-Type", "application/json")
    for k, v in case.get("headers", {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def check(doc, base, case):
    name = "%s %s -> %s" % (case["method"], case["path"], case["status"])
    status, headers, raw = send(base, case)
    if status != case["status"]:
        return "%s: got %d: %s" % (name, status, raw[:300])
    op_ptr = "/paths/%s/%s" % (esc(case["path"]), case["method"].lower())
    op = doc["paths"].get(case["path"], {}).get(case["method"].lower())
    if op is None:
        return "%s: the operation is not in the document" % name
    if status == 200 and "requestBody" in op and isinstance(case.get("body"), (dict, list)):
        errs = list(validator_for(doc, op_ptr + "/requestBody/content/application~1json/schema").iter_errors(case["body"]))
        if errs:
            return "%s: the request the test sends does not match the request schema: %s" % (name, errs[0].message)
    responses = op.get("responses", {})
    if str(status) not in responses:
        return "%s: status %d is not documented (documented: %s)" % (name, status, ", ".join(responses))
    resp_ptr = op_ptr + "/responses/" + str(status)
    resp = resolve(doc, responses[str(status)])
    ctype = (headers.get("Content-Type") or "").split(";")[0].strip()
    content = resp.get("content", {})
    if ctype not in content:
        return "%s: Content-Type %r is not documented (%s)" % (name, ctype, ", ".join(content))
    for h, hdef in resp.get("headers", {}).items():
        hdef = resolve(doc, hdef)
        value = headers.get(h)
        if value is None:
            if h == "Server-Timing":
                continue  # only on answered decide requests; absent on an empty request
            return "%s: documented header %s is missing" % (name, h)
        v = int(value) if hdef["schema"].get("type") == "integer" else value
        errs = list(jsonschema.Draft202012Validator(hdef["schema"]).iter_errors(v))
        if errs:
            return "%s: header %s: %s" % (name, h, errs[0].message)
    rid = headers.get("X-Request-Id") or ""
    errs = list(jsonschema.Draft202012Validator(doc["components"]["headers"]["RequestId"]["schema"]).iter_errors(rid))
    if errs:
        return "%s: X-Request-Id %r: %s" % (name, rid, errs[0].message)
    if ctype == "application/json":
        if "content" not in resp or "application/json" not in resp["content"]:
            return "%s: no JSON schema documented" % name
        schema_ptr = resp_ptr + "/content/application~1json/schema"
        if "$ref" in responses[str(status)]:
            schema_ptr = responses[str(status)]["$ref"].lstrip("#") + "/content/application~1json/schema"
        body = json.loads(raw)
        errs = sorted(validator_for(doc, schema_ptr).iter_errors(body), key=lambda e: e.path)
        if errs:
            e = errs[0]
            return "%s: body does not match the schema at %s: %s (at %s)\n%s" % (
                name, schema_ptr, e.message, "/".join(map(str, e.absolute_path)), raw[:400].decode())
    print("ok   %s (%s, %d bytes)" % (name, ctype, len(raw)))
    return None


def main():
    doc = json.load(open(sys.argv[1]))
    base = sys.argv[2]
    cases = json.load(open(sys.argv[3]))
    for case in cases:
        err = check(doc, base, case)
        if err:
            print("FAIL " + err)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
