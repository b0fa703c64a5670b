#!/usr/bin/env python3
"""parity.py - layad against the official `laya` package, request by request.

Generates a deterministic set of request bodies that covers every question type and
option shape the sequence builder and post-processing know about, answers each one with
the official package (the oracle: `laya.Agent.system_one` / `predict_batch` on CPU fp32,
loaded offline from the checkpoint directory) and with `layad`, and compares:

  rows       the token ids and marker positions of every question row (`layad prompt`)
             against the batch the package hands its model (captured at Agent._infer)
  logits     layad's own CPU forward (`layad decide` with "return_logits": true) against
             the package's raw logits and act logits: |d| <= max(1e-4, 1e-5 |ref|)
  response   the response bytes of `layad decide --logits <the package's logits>` against
             json.dumps(result, ensure_ascii=False): post-processing and formatting must be
             byte-identical; and the end-to-end bytes with layad's own forward (reported:
             a 1e-6 logit difference can flip a 4th decimal, so this is a count, not a gate)
  errors     a request the package refuses with ValueError must get a 422

  parity.py --layad build/layad --model build/tiny --n 320 --summary out.json [--fixtures DIR]

Exit status 0 when rows, logits and given-logits responses all match.
"""
import argparse
import copy
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time

WORDS = ("refund invoice billing payment charged twice customer support urgent outage login password "
         "account order shipping delivery cancel subscription technical error failed service offline "
         "which how what is the a an to of and in for on with this that request message user assistant "
         "calm firm angry furious frustrated critical soon available option select best other requests "
         "software faults invoices refunds hello please thanks today yesterday week month money back").split()
UNICODE = ["café", "naïve", "Ünïcödé", "日本語のテキスト", "emoji 🚀🔥", "Ελληνικά", "العربية", "e\u0301clair",
           "non\u00a0breaking", "tab\there", "new\nline", "\"quoted\"", "back\\slash", "[MASK]", "x[MASK]y",
           "ctrl\u0001char", "ﬁligature", "Ａ全角", "\u2028sep", "  spaced  out  ", "ß", "İstanbul"]
FLOATS = [0.1, 1e-05, 1e16, 1e+16 * 3, 123.456, -0.0, 2.5, 1e-4, 0.00012, 3.0, 1e300, 7e-320]


def words(rng, n):
    out = []
    for _ in range(n):
        r = rng.random()
        out.append(rng.choice(UNICODE) if r < 0.08 else rng.choice(WORDS))
    return " ".join(out)


def scalar(rng):
    r = rng.random()
    if r < 0.3:
        return words(rng, rng.randint(1, 4))
    if r < 0.5:
        return rng.randint(-10**6, 10**6)
    if r < 0.6:
        return rng.choice([12345678901234567890123, -7, 0])
    if r < 0.8:
        return rng.choice(FLOATS)
    if r < 0.9:
        return rng.choice([True, False, None])
    return rng.choice(UNICODE)


def structure(rng, depth=0):
    r = rng.random()
    if depth > 2 or r < 0.4:
        return scalar(rng)
    if r < 0.7:
        return {rng.choice(WORDS + UNICODE[:6]) + str(i): structure(rng, depth + 1) for i in range(rng.randint(0, 4))}
    return [structure(rng, depth + 1) for _ in range(rng.randint(0, 4))]


def state(rng, kind=None, length=None):
    kind = kind or rng.choice(["str", "str", "dict", "list"])
    length = length or rng.choice([3, 10, 30, 60])
    if kind == "str":
        return words(rng, length)
    if kind == "dict":
        d = {"ticket": words(rng, length), "meta": structure(rng)}
        if rng.random() < 0.5:
            d["amount"] = rng.choice(FLOATS)
        return d
    turns = []
    for i in range(max(1, length // 8)):
        turns.append({"role": "user" if i % 2 == 0 else "assistant", "content": words(rng, 8)})
    return turns


def description(rng):
    r = rng.random()
    if r < 0.45:
        return words(rng, rng.randint(1, 8))
    if r < 0.55:
        return None
    if r < 0.6:
        return ""
    if r < 0.65:
        return rng.choice([0, False, 1.5, True])
    if r < 0.75:
        return {"desc": words(rng, 3), "weight": rng.choice(FLOATS)}
    if r < 0.8:
        return [words(rng, 2), rng.randint(0, 9)]
    return rng.choice(UNICODE)


def choice_q(rng, n=None, shared_prefix=False):
    n = n or rng.choice([1, 2, 2, 3, 4, 5, 6, 8, 10, 11, 15])
    ins = words(rng, rng.randint(3, 12))
    if rng.random() < 0.1:
        ins = rng.choice([{"task": ins, "lang": "en"}, [ins, 3], 42, 2.5, True])
    form = rng.random()
    if shared_prefix:
        base = "the customer is asking about a problem with their " + words(rng, 12)
        crit = {"%s %d" % (base, i): (base if rng.random() < 0.5 else None) for i in range(n)}
    elif form < 0.55:
        crit = {}
        while len(crit) < n:
            crit["%s_%d" % (rng.choice(WORDS + UNICODE[:5]), len(crit))] = description(rng)
    else:
        labels = []
        pool = [lambda i: "%s %d" % (rng.choice(WORDS), i), lambda i: i * 7 + 1, lambda i: i + 0.5,
                lambda i: rng.choice(UNICODE) + str(i)]
        for i in range(n):
            labels.append(rng.choice(pool)(i))
        if n == 2 and rng.random() < 0.3:
            labels = [True, False]
        crit = labels
    q = {"type": "choice", "instructions": ins, "criteria": crit}
    if rng.random() < 0.1 and n > 1:
        order = list(range(n))
        rng.shuffle(order)
        q["option_order"] = order
    return q


def score_q(rng):
    n = rng.choice([1, 2, 3, 4, 5, 7, 10, 32])
    levels = []
    for i in range(n):
        r = rng.random()
        levels.append(words(rng, rng.randint(1, 5)) if r < 0.75 else rng.choice(
            [i, 1.25, {"level": i, "text": words(rng, 2)}, [i, "x"], rng.choice(UNICODE)]))
    return {"type": "score", "instructions": words(rng, rng.randint(3, 10)), "criteria": levels}


def noul_q(rng):
    q = {"type": "noul", "instructions": words(rng, rng.randint(3, 10))}
    r = rng.random()
    if r < 0.3:
        pass
    elif r < 0.5:
        q["criteria"] = None
    elif r < 0.8:
        crit = {}
        for key in rng.sample(["true", "false", "TRUE", "False"], rng.randint(1, 2)):
            crit[key] = description(rng)
        q["criteria"] = crit
    else:
        q["criteria"] = {"true": words(rng, 4), "false": words(rng, 4)}
    if rng.random() < 0.2:
        q["labels"] = rng.choice([{"false": " B ", "true": "A"}, {"false": "nein", "true": "ja\u3000"},
                                  {"true": "yes", "false": "no"}, None])
    return q


def question(rng):
    return rng.choice([choice_q, choice_q, score_q, noul_q])(rng)


def invalid(rng):
    """A request the package must refuse (ValueError -> 422)."""
    bad = rng.choice([
        {"type": "choice", "instructions": "x", "criteria": [1, 1.0]},
        {"type": "choice", "instructions": "x", "criteria": [True, 1]},
        {"type": "choice", "instructions": "   ", "criteria": ["a"]},
        {"type": "choice", "instructions": None, "criteria": ["a"]},
        {"type": "choice", "criteria": ["a"]},
        {"type": "choice", "instructions": "x", "criteria": []},
        {"type": "choice", "instructions": "x", "criteria": ["a", None]},
        {"type": "choice", "instructions": "x", "criteria": [["a"], "b"]},
        {"type": "choice", "instructions": "x", "criteria": "a"},
        {"type": "choice", "instructions": "x", "criteria": ["a"], "labels": {"false": "n", "true": "y"}},
        {"type": "score", "instructions": "x", "criteria": ["a", None]},
        {"type": "score", "instructions": "x", "criteria": {"a": 1}},
        {"type": "noul", "instructions": "x", "criteria": {"maybe": "m"}},
        {"type": "noul", "instructions": "x", "criteria": ["true"]},
        {"type": "noul", "instructions": "x", "labels": {"false": "same", "true": " same"}},
        {"type": "noul", "instructions": "x", "labels": {"false": "n"}},
        {"type": "choice", "instructions": "x", "criteria": ["a", "b"], "option_order": [0, 0]},
        {"type": "choice", "instructions": "x", "criteria": ["a", "b"], "option_order": [1]},
        {"type": "maybe", "instructions": "x"},
        {"type": "choice", "instructions": [], "criteria": ["a"]},
        "not a dict",
    ])
    qs = {"ok": question(rng), "bad": bad}
    if rng.random() < 0.5:
        qs = {"bad": bad}
    return {"state": state(rng), "questions": qs}


def generate(n, seed, short=False):
    """n request cases: {"body": str, "strict": bool}. short=True keeps states and option
    counts small (the full-size checkpoint on a 2-core CPU)."""
    rng = random.Random(seed)
    cases = []
    # fixed raw bodies: JSON the generator's dicts cannot express
    raw = [
        '{"state": "dup keys", "questions": {"a": {"type": "noul", "instructions": "first"}, '
        '"b": {"type": "noul", "instructions": "b"}, "a": {"type": "score", "instructions": "second", '
        '"criteria": ["lo", "hi"]}}}',
        '{"state": {"big": 123456789012345678901234567890, "inf": 1E400, "ninf": -1e999, "nan": NaN, '
        '"neg0": -0.0, "tiny": 5e-324, "esc": "\\u0000\\u001f\\ud83d\\ude80\\/"}, '
        '"questions": {"q": {"type": "noul", "instructions": {"nested": [NaN, Infinity, -Infinity]}}}}',
        '{"state": "empty questions", "questions": {}}',
        '{"states": ["one", {"two": 2}, ["three"]], "questions": {}}',
        '{"state": "x", "questions": {"only": {"type": "choice", "instructions": "pick", "criteria": ["solo"]}}}',
        '\ufeff{"state": "bom", "questions": {"q": {"type": "noul", "instructions": "bom body"}}}',
    ]
    for body in raw:
        cases.append({"body": body, "strict": False})
    while len(cases) < n:
        i = len(cases)
        r = rng.random()
        nq = rng.choice([1, 1, 2, 3, 4]) if not short else rng.choice([1, 1, 2])
        body = {}
        if r < 0.06:
            body = invalid(rng)
        else:
            qs = {}
            for k in range(nq):  # (short mode trims long criteria below)
                qid = rng.choice(["q%d" % k, "dept_%d" % k, "é%d" % k, "long question id %d" % k])
                qs[qid] = question(rng)
            if short:
                for q in qs.values():
                    if q["type"] == "choice" and len(q["criteria"]) > 6:
                        q["criteria"] = q["criteria"][:6] if isinstance(q["criteria"], list) else \
                            dict(list(q["criteria"].items())[:6])
                        q.pop("option_order", None)
            kind = rng.random()
            if kind < 0.12 and not short:
                # many options: up to 300 (hits the head budget, the <16 rule, and max_len)
                n_opts = rng.choice([12, 20, 30, 50, 64, 100, 150, 200, 255, 256, 300])
                qs["many"] = choice_q(rng, n_opts, shared_prefix=rng.random() < 0.5)
            elif kind < 0.2:
                qs["collide"] = choice_q(rng, rng.choice([3, 6, 9]) if short else rng.choice([6, 12, 30]),
                                         shared_prefix=True)
            elif kind < 0.25:
                qs = {}
            length = rng.choice([3, 6, 10, 16]) if short else None
            skind = None
            t = rng.random()
            if t < 0.12:
                # long enough to truncate: in short mode a small max_len does it cheaply
                skind = rng.choice(["str", "list", "dict"])
                length = 40 if short else rng.choice([400, 700, 1500])
            body["state"] = state(rng, skind, length)
            if rng.random() < 0.15:
                body = {"states": [state(rng, None, rng.choice([3, 8] if short else [3, 20, 60]))
                                   for _ in range(rng.randint(2, 2 if short else 4))]}
            body["questions"] = qs
            o = rng.random()
            if short and t < 0.12:
                body["max_len"] = rng.choice([40, 56, 72])
            elif o < 0.12:
                body["max_len"] = rng.choice([24, 40, 64, 96, 128]) if short else rng.choice([32, 64, 128, 200, 700, 1024])
            if 0.08 < o < 0.2:
                body["head_max_len"] = rng.choice([10, 16, 20, 33, 48, 96, 300])
        if rng.random() < 0.3:
            body = dict(list({"model": "laya"}.items()) + list(body.items())) if rng.random() < 0.3 else body
        cases.append({"body": json.dumps(body, ensure_ascii=False), "strict": rng.random() < 0.08})
    return cases[:n]


# ---- the oracle -------------------------------------------------------------------------------

class Oracle:
    def __init__(self, model):
        import torch
        import laya
        from laya.serve import _project_jev_strict
        torch.set_num_threads(int(os.environ.get("PARITY_TORCH_THREADS", "2")))
        self.agent = laya.Agent(model, device="cpu")
        self.strict = _project_jev_strict
        self.captured = []
        orig = self.agent._infer

        def infer(b):
            lg, act = orig(b)
            self.captured.append((b, lg.detach().float().cpu().numpy().copy(),
                                  act.detach().float().cpu().numpy().copy()))
            return lg, act
        self.agent._infer = infer

    def answer(self, case):
        body = json.loads(case["body"].encode("utf-8"))  # bytes, as a server reads them (BOM ok)
        self.captured = []
        kw = {k: body[k] for k in ("max_len", "head_max_len") if body.get(k) is not None}
        try:
            if "states" in body:
                res = self.agent.predict_batch(body["states"], body["questions"], **kw)
                if case["strict"]:
                    res = [self.strict(r) for r in res]
                out = {"results": res, "total_usage": {
                    "input_tokens": sum(r["usage"]["input_tokens"] for r in res), "output_tokens": 0}}
            else:
                out = self.agent.system_one(body["state"], body["questions"], **kw)
                if case["strict"]:
                    out = self.strict(out)
        except ValueError as e:
            return {"status": 422, "message": str(e)}
        rows, logits, acts = [], [], []
        for b, lg, act in self.captured:
            ids, att = b["input_ids"].numpy(), b["attention_mask"].numpy()
            mpos, mmask = b["marker_pos"].numpy(), b["marker_mask"].numpy()
            for i in range(ids.shape[0]):
                n = int(att[i].sum())
                k = int(mmask[i].sum())
                rows.append({"input_ids": [int(x) for x in ids[i, :n]], "markers": [int(x) for x in mpos[i, :k]]})
                logits.append([float(x) for x in lg[i, :k]])
                acts.append([float(x) for x in act[i]])
        return {"status": 200, "response": json.dumps(out, ensure_ascii=False), "rows": rows,
                "logits": logits, "act_logits": acts}


# ---- layad ------------------------------------------------------------------------------------

def run_layad(layad, model, args, bodies, logits=None, timeout=None):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for b in bodies:
            f.write(b.replace("\n", " ") + "\n")
        path = f.name
    cmd = [layad] + args + ["--model", model, "--jsonl", "--max-options", "512", "--request", path]
    lpath = None
    if logits is not None:
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            for l in logits:
                f.write(json.dumps(l) + "\n")
            lpath = f.name
        cmd += ["--logits", lpath]
    out = subprocess.run(cmd, capture_output=True, timeout=timeout)
    os.unlink(path)
    if lpath:
        os.unlink(lpath)
    lines = out.stdout.decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != len(bodies):
        sys.exit("layad %s: %d answers for %d bodies; stderr: %s" % (args[0], len(lines), len(bodies),
                                                                   out.stderr.decode()[-2000:]))
    return lines


def strip_logits(obj):
    """The response with layad's return_logits fields removed (key order kept)."""
    for res in obj.get("results", [obj]):
        for ans in res.get("answers", {}).values():
            ans.pop("logits", None)
            ans.pop("act_logits", None)
    return obj


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layad", default="build/layad")
    ap.add_argument("--model", required=True)
    ap.add_argument("--n", type=int, default=320)
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--short", action="store_true", help="short states and few options (full-size model)")
    ap.add_argument("--name", default=None)
    ap.add_argument("--summary", default=None, help="merge this run's summary into this JSON file")
    ap.add_argument("--fixtures", default=None, help="write a compact fixture subset (JSONL) here")
    ap.add_argument("--fixture-count", type=int, default=60)
    ap.add_argument("--threads", default="2")
    ap.add_argument("--chunk", type=int, default=50, help="requests per round (a summary is saved after each)")
    a = ap.parse_args()
    t0 = time.time()
    cases = generate(a.n, a.seed, a.short)
    oracle = Oracle(a.model)
    n = len(cases)
    expected, got_rows, given, own = [None] * n, [None] * n, [None] * n, [None] * n
    t_oracle = t_layad = 0.0
    # in chunks, with a summary after each: a long run on a slow machine leaves honest partial counts
    for lo in range(0, n, a.chunk):
        part = list(range(lo, min(n, lo + a.chunk)))
        t1 = time.time()
        for i in part:
            expected[i] = oracle.answer(cases[i])
        t_oracle += time.time() - t1
        t1 = time.time()
        layad_chunk(a, cases, expected, part, got_rows, given, own)
        t_layad += time.time() - t1
        done = part[-1] + 1
        summary, failures = tally(cases[:done], expected[:done], got_rows, given, own)
        summary.update(meta(a, t_oracle, t_layad, done == n))
        print("%d/%d requests (%.0fs): %s" % (done, n, time.time() - t0, "ok" if not failures else
                                                "%d mismatches" % len(failures)), file=sys.stderr)
        if a.summary:
            save_summary(a, summary)
    for f in failures[:20]:
        print("MISMATCH case %d %s:\n  expected %s\n  got      %s" % (f[0], f[1], str(f[2])[:600], str(f[3])[:600]),
              file=sys.stderr)
    print(json.dumps(summary, indent=1))
    if a.fixtures:
        write_fixtures(a, cases, expected)
    return 0 if not failures else 1


def layad_chunk(a, cases, expected, part, got_rows, given, own):
    """Runs layad on the cases `part`: rows, responses from the package's logits, own forward."""
    for i, line in zip(part, run_layad(a.layad, a.model, ["prompt"], [cases[i]["body"] for i in part])):
        got_rows[i] = json.loads(line)
    for strict in (False, True):
        ok = [i for i in part if cases[i]["strict"] == strict and expected[i]["status"] == 200]
        if not ok:
            continue
        lines = run_layad(a.layad, a.model, ["decide"] + (["--strict"] if strict else []),
                          [cases[i]["body"] for i in ok],
                          logits=[{"logits": expected[i]["logits"], "act_logits": expected[i]["act_logits"]}
                                  for i in ok])
        for i, line in zip(ok, lines):
            given[i] = line
        bodies = []
        for i in ok:
            b = json.loads(cases[i]["body"].lstrip("\ufeff"))
            b["return_logits"] = True
            bodies.append(json.dumps(b, ensure_ascii=False))
        lines = run_layad(a.layad, a.model, ["decide", "--threads", a.threads] + (["--strict"] if strict else []),
                          bodies)
        for i, line in zip(ok, lines):
            own[i] = line


def tally(cases, expected, got_rows, given, own):
    summary = {"requests": len(cases), "rejected_422": 0, "rows": 0, "rows_identical": 0,
               "responses": 0, "responses_identical_given_oracle_logits": 0,
               "responses_identical_end_to_end": 0, "max_abs_logit_delta": 0.0, "max_rel_logit_delta": 0.0,
               "max_abs_act_delta": 0.0, "logits_compared": 0, "logits_out_of_tolerance": 0,
               "status_mismatches": 0}
    failures = []
    for i, (c, e) in enumerate(zip(cases, expected)):
        g = got_rows[i]
        if e["status"] != 200:
            summary["rejected_422"] += 1
            if not (isinstance(g, dict) and g.get("status") == 422):
                summary["status_mismatches"] += 1
                failures.append((i, "status", e, g))
            continue
        if isinstance(g, dict):
            summary["status_mismatches"] += 1
            failures.append((i, "status", e["status"], g))
            continue
        summary["rows"] += len(e["rows"])
        for er, gr in zip(e["rows"], g):
            if er["input_ids"] == gr["input_ids"] and er["markers"] == gr["markers"]:
                summary["rows_identical"] += 1
            else:
                failures.append((i, "row", er, gr))
        if len(e["rows"]) != len(g):
            failures.append((i, "row count", len(e["rows"]), len(g)))
        summary["responses"] += 1
        if given[i] == e["response"]:
            summary["responses_identical_given_oracle_logits"] += 1
        else:
            failures.append((i, "response", e["response"], given[i]))
        obj = json.loads(own[i])
        results = obj.get("results", [obj])
        k = 0
        for res in results:
            for ans in res["answers"].values():
                for ref, got in ((e["logits"][k], ans["logits"]), (e["act_logits"][k], ans["act_logits"])):
                    for x, y in zip(ref, got):
                        d = abs(x - y)
                        summary["logits_compared"] += 1
                        if d > max(1e-4, 1e-5 * abs(x)):
                            summary["logits_out_of_tolerance"] += 1
                            failures.append((i, "logit", x, y))
                        if ref is e["logits"][k]:
                            summary["max_abs_logit_delta"] = max(summary["max_abs_logit_delta"], d)
                            if abs(x) >= 1.0:
                                summary["max_rel_logit_delta"] = max(summary["max_rel_logit_delta"], d / abs(x))
                        else:
                            summary["max_abs_act_delta"] = max(summary["max_abs_act_delta"], d)
                k += 1
        if json.dumps(strip_logits(obj), ensure_ascii=False) == e["response"]:
            summary["responses_identical_end_to_end"] += 1

    summary["coverage"] = coverage(cases, expected)
    summary["pass"] = not failures
    return summary, failures


def meta(a, t_oracle, t_layad, complete):
    import importlib.metadata as md
    import platform
    import hashlib
    h = hashlib.sha256()
    with open(os.path.join(a.model, "model.safetensors"), "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return {"checkpoint": a.model, "checkpoint_sha256": h.hexdigest(), "seed": a.seed, "short_states": a.short,
            "package": "laya " + md.version("laya"), "torch": md.version("torch"), "numpy": md.version("numpy"),
            "machine": platform.machine(), "cpu_count": os.cpu_count(), "oracle_seconds": round(t_oracle, 1),
            "layad_seconds": round(t_layad, 1), "tolerance": "|d| <= max(1e-4, 1e-5*|ref|)",
            "complete": complete}


def save_summary(a, summary):
    allsum = {}
    if os.path.exists(a.summary):
        with open(a.summary) as f:
            allsum = json.load(f)
    allsum[a.name or os.path.basename(a.model.rstrip("/"))] = summary
    with open(a.summary, "w") as f:
        json.dump(allsum, f, indent=1, sort_keys=True)
        f.write("\n")


def coverage(cases, expected):
    """What the generated set exercised, counted from the requests and the oracle's answers."""
    cov = {"qtype": {"choice": 0, "score": 0, "noul": 0}, "option_count_max": 0,
           "options_by_bucket": {"1": 0, "2": 0, "3-10": 0, "11-100": 0, "101-255": 0, "256-300": 0},
           "states_form": 0, "string_state": 0, "dict_state": 0, "list_state": 0, "strict": 0,
           "empty_questions": 0, "truncated_right": 0, "truncated_left": 0, "collapsed_options": 0,
           "markers_past_max_len_422": 0, "other_422": 0, "max_len_override": 0, "head_max_len_override": 0,
           "option_order": 0, "noul_labels": 0, "non_string_instructions": 0}
    for c, e in zip(cases, expected):
        b = json.loads(c["body"].encode("utf-8"))
        states = b.get("states", [b.get("state")])
        cov["states_form"] += "states" in b
        cov["strict"] += c["strict"]
        cov["max_len_override"] += "max_len" in b
        cov["head_max_len_override"] += "head_max_len" in b
        for s in states:
            cov[{"str": "string_state", "dict": "dict_state", "list": "list_state"}.get(type(s).__name__,
                                                                                       "string_state")] += 1
        qs = b.get("questions") or {}
        cov["empty_questions"] += not qs
        for q in qs.values():
            if not isinstance(q, dict) or q.get("type") not in cov["qtype"]:
                continue
            cov["qtype"][q["type"]] += 1
            cov["option_order"] += "option_order" in q
            cov["noul_labels"] += "labels" in q
            cov["non_string_instructions"] += not isinstance(q.get("instructions"), str)
            crit = q.get("criteria")
            n = 2 if q["type"] == "noul" else len(crit) if isinstance(crit, (list, dict)) else 0
            cov["option_count_max"] = max(cov["option_count_max"], n)
            key = "1" if n == 1 else "2" if n == 2 else "3-10" if n <= 10 else "11-100" if n <= 100 else \
                "101-255" if n <= 255 else "256-300"
            if n:
                cov["options_by_bucket"][key] += 1
        if e["status"] != 200:
            cov["markers_past_max_len_422" if "option markers fit" in e["message"] else "other_422"] += 1
            continue
        out = json.loads(e["response"])
        for s, res in zip(states, out.get("results", [out])):
            u = res.get("usage", {})
            if u.get("truncated"):
                cov["truncated_left" if isinstance(s, list) else "truncated_right"] += 1
            cov["collapsed_options"] += "options" in u
    return cov


def write_fixtures(a, cases, expected):
    """A compact subset for the CI test (tests/test_parity.c): every rejected case, then a
    spread of answered ones whose rows stay small."""
    rng = random.Random(a.seed + 1)
    rejected = [i for i, e in enumerate(expected) if e["status"] != 200]
    answered = [i for i, e in enumerate(expected)
                if e["status"] == 200 and sum(len(r["input_ids"]) for r in e["rows"]) <= 1200]
    pick = sorted(set(rejected[:8] + rng.sample(answered, min(len(answered), a.fixture_count - 8)) +
                      [i for i in answered if i < 6]))
    with open(a.fixtures, "w", encoding="utf-8") as f:
        for i in pick:
            e = expected[i]
            rec = {"case": i, "body": cases[i]["body"], "strict": cases[i]["strict"], "status": e["status"]}
            if e["status"] == 200:
                rec.update({"rows": [[r["input_ids"], r["markers"]] for r in e["rows"]], "logits": e["logits"],
                            "act_logits": e["act_logits"], "response": e["response"]})
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print("fixtures: %d cases -> %s" % (len(pick), a.fixtures), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
