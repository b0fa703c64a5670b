#!/usr/bin/env python3
"""peers_report.py - per-request-kind latency of every system of a peers.sh run, side by side.

Reads RUN_DIR/NAME.json and NAME-answers.jsonl for each system present (layad, laya-cuda,
official-stock, official-fast), the request set's meta (gen_fixed.py: kind of request i is
kinds[i % 3]) and compare-stock.json / compare-fast.json (compare.py with the official package's
stock and fast-path answers as "official"), and writes one JSON: per system and kind, the first call (which
pays any first-use cost: graph capture, kernel builds), p50 / p95 / max over the repeats after
it, and the input tokens the system reports for the kind (layad and laya-cuda report them); for layad also
the same over its own infer stage (Server-Timing), so a slow request shows whether the daemon's forward or
the HTTP round trip made it slow; plus each system's own JSON (versions, load times) and the answer comparison.

  peers_report.py --dir RUN_DIR --meta requests.jsonl.meta.json --out peers-h200.json [--note T]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mixedlib  # noqa: E402

SYSTEMS = ("layad", "laya-cuda", "official-stock", "official-fast")


def by_kind(rows, kinds):
    out = {}
    for k, kind in enumerate(kinds):
        mine = [r for r in rows if r["i"] % len(kinds) == k]
        ok = [r["ms"] for r in mine if r["ok"]]
        usage = next((r["body"].get("usage") for r in mine if r["ok"] and isinstance(r.get("body"), dict)), None)
        out[kind] = {"input_tokens": (usage or {}).get("input_tokens"),
                     "first_ms": round(mine[0]["ms"], 3) if mine else None,
                     "after_first": mixedlib.latency(ok[1:]),
                     "rejected": sum(1 for r in mine if not r["ok"])}
        infer = [r["server_timing_ms"]["infer"] for r in mine[1:] if "infer" in r.get("server_timing_ms", {})]
        if infer:  # the daemon's own account (run_layad.py keeps each answer's Server-Timing)
            out[kind]["server_infer_after_first"] = mixedlib.latency(infer)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    meta = mixedlib.read_json(a.meta)
    kinds = meta["kinds"]
    rep = {"note": a.note, "requests": meta, "systems": {}, "table_p50_ms": {}}
    for name in SYSTEMS:
        res = mixedlib.read_json(os.path.join(a.dir, name + ".json"))
        path = os.path.join(a.dir, name + "-answers.jsonl")
        if res is None or not os.path.exists(path):
            continue
        kinds_stats = by_kind(mixedlib.read_jsonl(path), kinds)
        rep["systems"][name] = {"result": res, "by_kind": kinds_stats}
        rep["table_p50_ms"][name] = {k: v["after_first"].get("p50_ms") for k, v in kinds_stats.items()}
    rep["compare"] = {"official_stock": mixedlib.read_json(os.path.join(a.dir, "compare-stock.json")),
                      "official_fast": mixedlib.read_json(os.path.join(a.dir, "compare-fast.json"))}
    mixedlib.write_json(a.out, rep)
    w = max(len(k) for k in kinds)
    print("p50 after the first call, ms:")
    print("  %-16s %s" % ("system", " ".join("%*s" % (w, k) for k in kinds)))
    for name, row in rep["table_p50_ms"].items():
        print("  %-16s %s" % (name, " ".join("%*s" % (w, row[k]) for k in kinds)))
    print("p95 after the first call, ms (layad's infer stage in brackets):")
    for name, sysrep in rep["systems"].items():
        cells = []
        for k in kinds:
            v = sysrep["by_kind"][k]
            inf = v.get("server_infer_after_first")
            cells.append("%s%s" % (v["after_first"].get("p95_ms"), " [%s]" % inf.get("p95_ms") if inf else ""))
        print("  %-16s %s" % (name, " ".join("%*s" % (w, c) for c in cells)))


if __name__ == "__main__":
    main()
