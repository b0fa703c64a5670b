#!/usr/bin/env python3
"""stage_split.py - which side a slow layad answer was slow on, from each answer's own Server-Timing.

Reads layad-answers.jsonl (run_layad.py keeps every answer's stages) and splits each round trip the
client measured into the device's time (gpu), the daemon's host stages (every other top-level stage:
parse, queue, wake, stage, the host part of run, unpack, back, resume, format) and what is outside
every stage (the client, the socket, libmicrohttpd). Prints a row per answer, then, with --rows A-B,
the medians of the three parts inside that run of rows against the others, and each request kind's
p95 without that run (kinds in turn, as gen_fixed.py writes them).

  stage_split.py ANSWERS.jsonl [--rows A-B] [--kinds 3] [--quiet]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mixedlib  # noqa: E402

# Server-Timing's top-level stages (launch and gpu lie inside run, h2d and d2h inside gpu: stages.c)
TOP = ("parse", "queue", "wake", "stage", "run", "unpack", "back", "resume", "format")


def split(row):
    """(ms, gpu, host, outside) of one answered row, milliseconds."""
    st = row["server_timing_ms"]
    server = sum(st.get(k, 0.0) for k in TOP)
    gpu = st.get("gpu", 0.0)
    return row["ms"], gpu, server - gpu, row["ms"] - server


def medians(rows):
    """Each part's p50 over rows (mixedlib.latency, as the peers report's tables)."""
    parts = [split(r) for r in rows]
    return {name: mixedlib.latency([p[i] for p in parts]).get("p50_ms")
            for i, name in enumerate(("ms", "gpu", "host", "outside"))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("answers")
    ap.add_argument("--rows", help="A-B: a run of rows (inclusive) to set against the others")
    ap.add_argument("--kinds", type=int, default=3, help="request kinds in turn (first calls skipped)")
    ap.add_argument("--quiet", action="store_true", help="no row table")
    a = ap.parse_args()
    rows = [r for r in mixedlib.read_jsonl(a.answers) if r.get("ok") and r.get("server_timing_ms")]
    if not a.quiet:
        print("   i      ms     gpu    host outside")
        for r in rows:
            print("%4d %7.3f %7.3f %7.3f %7.3f" % ((r["i"],) + split(r)))
    lo, hi = (int(x) for x in a.rows.split("-")) if a.rows else (-1, -2)
    inside = [r for r in rows if lo <= r["i"] <= hi]
    rest = [r for r in rows if r["i"] >= a.kinds and not lo <= r["i"] <= hi]
    out = {"rows": a.rows, "inside": {"n": len(inside), **medians(inside)} if inside else None,
           "others": {"n": len(rest), **medians(rest)},
           "p95_without_rows": [mixedlib.latency([r["ms"] for r in rest if r["i"] % a.kinds == k]).get("p95_ms")
                                for k in range(a.kinds)]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
