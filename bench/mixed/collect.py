#!/usr/bin/env python3
"""collect.py - one committed results file from a run folder: the request set's meta, each
system's figures (layad.json, laya-cuda.json, official.json, whichever exist) and compare.json,
with a headline table (sequential percentiles, concurrency 1/8/64).

  collect.py --dir RUN_DIR --out bench/mixed/results-NAME.json [--note TEXT]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mixedlib  # noqa: E402


def headline(name, r):
    seq = r.get("sequential", {})
    row = {"system": name, "sequential": {k: seq.get("latency_ok", {}).get(k)
                                          for k in ("n", "p50_ms", "p95_ms", "p99_ms", "max_ms")}}
    if "rejected" in seq:
        row["sequential"]["rejected"] = seq["rejected"]
    for c in r.get("concurrent", []):
        row["c%d" % c["concurrency"]] = {"rps": c.get("throughput_rps"), "p50_ms": c["latency_ok"].get("p50_ms"),
                                         "p99_ms": c["latency_ok"].get("p99_ms"),
                                         "rejected": c.get("rejected", sum(v for k, v in c.get("status", {}).items()
                                                                           if k != "200"))}
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    out = {"what": "bench/mixed: mixed-traffic benchmark (README.md there)", "note": a.note,
           "requests": mixedlib.read_json(os.path.join(a.dir, "requests.meta.json")) or
           mixedlib.read_json(os.path.join(a.dir, "requests.jsonl.meta.json")), "headline": []}
    for name in ("layad", "laya-cuda", "official"):
        r = mixedlib.read_json(os.path.join(a.dir, name + ".json"))
        if r is not None:
            out[name] = r
            out["headline"].append(headline(name, r))
    cmp_ = mixedlib.read_json(os.path.join(a.dir, "compare.json"))
    if cmp_ is not None:
        for pair in cmp_.get("pairs", {}).values():
            pair["examples"] = pair["examples"][:10]
        out["compare"] = cmp_
    if not out["headline"]:
        sys.exit("collect: no layad.json, laya-cuda.json or official.json in %s" % a.dir)
    mixedlib.write_json(a.out, out)
    for h in out["headline"]:
        print(json.dumps(h))
    print("collect: wrote %s" % a.out)


if __name__ == "__main__":
    main()
