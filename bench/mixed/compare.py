#!/usr/bin/env python3
"""compare.py - the saved answers of two or three systems on the same mixed set, question by question.

Reads the answers files the runners write (mixedlib.py's format: one line per request, in the
set's order): layad (run_layad.py), laya-cuda (run_laya_cuda.py) and, when present, the official
package (run_official.py). For every pair (laya-cuda vs layad, official vs layad, laya-cuda vs
official) and every request both answered, each question's answer is compared:

  choice   the chosen label, and every label's probability
  score    the most probable level (first of equal maxima, on the 4-decimal probabilities), the
           expected `score`, and every level's probability
  noul     P(true) (`noul`) and the decision it implies (P(true) >= 0.5)

A disagreement is a different chosen answer; a probability (or score / noul value) difference
above --tol (default 1e-3) is counted separately. Random-weight checkpoints give flat
distributions, so each disagreement also records the top-two margin of both systems: "clear"
disagreements are those where both margins exceed --clear-margin (default 0.01), i.e. not a
precision-level near-tie. Requests only one side answered (a refusal or an HTTP error) and
requests both refused are counted with the reasons. With --requests (the set), disagreements on
noul questions that carry `labels` are also counted apart: laya-cuda 0.1.1.post1 ignores noul
labels (it renders false/true), so its rows differ there by construction, not by precision.

  compare.py --dir RUN_DIR [--requests requests.jsonl] [--out RUN_DIR/compare.json]
  compare.py --set layad=a.jsonl --set laya-cuda=b.jsonl [--set official=c.jsonl] [--out F]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mixedlib  # noqa: E402

DEFAULT_FILES = {"layad": "layad-answers.jsonl", "laya-cuda": "laya-cuda-answers.jsonl",
                 "official": "official-answers.jsonl"}
PAIRS = [("laya-cuda", "layad"), ("official", "layad"), ("laya-cuda", "official")]


def top2(probs):
    v = sorted(probs, reverse=True)
    return v[0] - (v[1] if len(v) > 1 else 0.0)


def view(ans):
    """(type, chosen, {key: prob}, scalar value or None, margin) of one answer object."""
    t = ans.get("type")
    if t == "choice":
        p = {str(k): float(v) for k, v in (ans.get("probabilities") or {}).items()}
        return t, ans.get("choice"), p, None, top2(list(p.values())) if p else 1.0
    if t == "score":
        p = {str(k): float(v) for k, v in (ans.get("probabilities") or {}).items()}
        best = max(p, key=lambda k: (p[k], -int(k))) if p else None
        return t, best, p, float(ans.get("score", 0.0)), top2(list(p.values())) if p else 1.0
    if t == "noul":
        v = float(ans.get("noul", 0.0))
        return t, v >= 0.5, {}, v, abs(2 * v - 1)
    return t, None, {}, None, 0.0


def new_stats():
    return {"questions": 0, "disagree": 0, "disagree_clear": 0, "over_tol": 0, "max_abs_diff": 0.0}


def compare_pair(a_rows, b_rows, tol, clear, reqs=None):
    by_b = {r["i"]: r for r in b_rows}
    res = {"requests_compared": 0, "requests_both_answered": 0, "requests_disagree": 0,
           "requests_disagree_clear": 0, "requests_over_tol": 0, "only_first_answered": 0,
           "only_second_answered": 0, "both_refused": 0, "first_refusals": {}, "second_refusals": {},
           "questions_missing": 0, "type_mismatch": 0, "disagree_on_noul_with_labels": None if reqs is None else 0,
           "by_type": {t: new_stats() for t in ("choice", "score", "noul")}, "examples": []}
    for ra in a_rows:
        rb = by_b.get(ra["i"])
        if rb is None:
            continue
        res["requests_compared"] += 1
        if not ra["ok"] or not rb["ok"]:
            key = "both_refused" if not ra["ok"] and not rb["ok"] else \
                "only_second_answered" if not ra["ok"] else "only_first_answered"
            res[key] += 1
            for r, name in ((ra, "first_refusals"), (rb, "second_refusals")):
                if not r["ok"]:
                    why = mixedlib.error_kind(r["error"] or "HTTP %s: %s" % (
                        r["status"], json.dumps(r["body"])[:160]))
                    res[name][why] = res[name].get(why, 0) + 1
            continue
        res["requests_both_answered"] += 1
        aa, ab = ra["body"].get("answers", {}), rb["body"].get("answers", {})
        dis = dis_clear = over = False
        for qid in aa:
            if qid not in ab:
                res["questions_missing"] += 1
                continue
            ta, ca, pa, va, ma = view(aa[qid])
            tb, cb, pb, vb, mb = view(ab[qid])
            if ta != tb or ta not in res["by_type"]:
                res["type_mismatch"] += 1
                continue
            st = res["by_type"][ta]
            st["questions"] += 1
            diffs = [abs(pa[k] - pb[k]) for k in pa if k in pb]
            if va is not None and vb is not None:
                diffs.append(abs(va - vb))
            d = max(diffs) if diffs else 0.0
            st["max_abs_diff"] = max(st["max_abs_diff"], d)
            if d > tol:
                st["over_tol"] += 1
                over = True
            if ca != cb:
                st["disagree"] += 1
                dis = True
                if min(ma, mb) > clear:
                    st["disagree_clear"] += 1
                    dis_clear = True
                labelled = bool(reqs and ra["i"] < len(reqs) and
                                "labels" in reqs[ra["i"]]["questions"].get(qid, {}))
                if labelled:
                    res["disagree_on_noul_with_labels"] += 1
                if len(res["examples"]) < 40:
                    res["examples"].append({"noul_labels": labelled,"i": ra["i"], "question": qid, "type": ta,
                                            "options": len(pa) or 2, "first": ca, "second": cb,
                                            "margin_first": round(ma, 4), "margin_second": round(mb, 4),
                                            "max_abs_diff": round(d, 4)})
        res["requests_disagree"] += dis
        res["requests_disagree_clear"] += dis_clear
        res["requests_over_tol"] += over
    for st in res["by_type"].values():
        st["max_abs_diff"] = round(st["max_abs_diff"], 6)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", help="a run folder with the runners' default answers files")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--requests", help="the request set, to attribute noul-label disagreements")
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--clear-margin", type=float, default=0.01)
    ap.add_argument("--out")
    a = ap.parse_args()
    sets = {}
    if a.dir:
        for name, f in DEFAULT_FILES.items():
            if os.path.exists(os.path.join(a.dir, f)):
                sets[name] = os.path.join(a.dir, f)
    for s in a.set:
        name, _, path = s.partition("=")
        sets[name] = path
    if len(sets) < 2:
        sys.exit("compare: need at least two answers files (found %s)" % sorted(sets))
    rows = {n: mixedlib.read_jsonl(p) for n, p in sets.items()}
    reqs = mixedlib.load_requests(a.requests)[0] if a.requests else None
    pairs = [p for p in PAIRS if p[0] in rows and p[1] in rows]
    pairs += [(x, y) for i, x in enumerate(sorted(rows)) for y in sorted(rows)[i + 1:]
              if (x, y) not in pairs and (y, x) not in pairs]
    out = {"tool": "bench/mixed/compare.py", "tol": a.tol, "clear_margin": a.clear_margin,
           "files": sets, "requests": a.requests, "systems": {}, "pairs": {}}
    for n, r in rows.items():
        out["systems"][n] = {"requests": len(r), "answered": sum(1 for x in r if x["ok"]),
                             "refused": sum(1 for x in r if not x["ok"])}
    print("%-22s %9s %9s %9s %10s %9s %9s" % ("pair (first vs second)", "both ans", "disagree", "clear",
                                               "over tol", "only 1st", "only 2nd"))
    for x, y in pairs:
        res = compare_pair(rows[x], rows[y], a.tol, a.clear_margin, reqs)
        out["pairs"]["%s vs %s" % (x, y)] = res
        print("%-22s %9d %9d %9d %10d %9d %9d" % ("%s vs %s" % (x, y), res["requests_both_answered"],
                                                  res["requests_disagree"], res["requests_disagree_clear"],
                                                  res["requests_over_tol"], res["only_first_answered"],
                                                  res["only_second_answered"]))
        for t, st in res["by_type"].items():
            if st["questions"]:
                print("    %-6s %5d questions, %4d disagree (%d clear), %4d over tol, max |d| %.4g" % (
                    t, st["questions"], st["disagree"], st["disagree_clear"], st["over_tol"], st["max_abs_diff"]))
        if res["disagree_on_noul_with_labels"]:
            print("    of which on noul questions with labels: %d" % res["disagree_on_noul_with_labels"])
    if a.out:
        mixedlib.write_json(a.out, out)
        print("compare: wrote %s" % a.out)


if __name__ == "__main__":
    main()
