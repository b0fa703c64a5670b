#!/usr/bin/env python3
"""bench/results/experiments/ingest/summarize.py - the ingest probe's JSON lines (bench/ingest_probe.cu) as the
tables of the experiments README: per mode, us a block (p50 / max over blocks and repeats), GB/s into one SM
and TB/s over the grid (call 2's lines have no issuers or barrier fields: one issuer, a barrier a copy).
Usage: summarize.py ingest.jsonl"""
import json
import sys


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    head = rows[0]
    print(f"{head.get('device')}, {head.get('sms')} SMs, L2 {head.get('l2_bytes', 0) >> 20} MB")
    for r in rows:
        if r.get("probe") == "pingpong":
            print(f"pingpong: {r['ns_per_round_trip']:.0f} ns a round trip, {r['ns_one_way']:.0f} ns one way")
    last = None
    for r in rows:
        if r.get("probe") != "ingest":
            continue
        if r["mode"] != last:
            last = r["mode"]
            print(f"\n{last}\n| grid | cluster | KB | chunk KB | issuers | one barrier | in flight KB | us p50 / max "
                  "| GB/s an SM | TB/s total | GHz |")
            print("|---|---|---|---|---|---|---|---|---|---|---|")
        print(f"| {r['grid']} | {r['cluster']} | {r['bytes'] >> 10} | {r['chunk'] / 1024:g} | {r.get('issuers', 1)} "
              f"| {'yes' if r.get('one_barrier') else 'no'} | {r['in_flight'] >> 10} | {r['us_p50']:.2f} / {r['us_max']:.2f} "
              f"| {r['sm_GBps']:.0f} | {r['total_TBps']:.2f} | {r['ghz']:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1])
