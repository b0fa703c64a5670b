#!/usr/bin/env python3
"""bench_report.py - merge `layad-dev bench` and scripts/bench_torch_forward.py results into one
JSON + SVG chart.

  scripts/bench_report.py --layad a.json [--layad b.json] --torch t.json [--torch u.json] \
      --out bench/results/h200/forward.json --svg bench/results/h200/forward.svg

Per shape: layad median, PyTorch eager / torch.compile medians, the floor (from layad's count of
FLOPs and weight bytes, with the ceilings measured in the same run by bench_torch_forward.py when
present, else layad-dev bench's constants, the ceilings of bench/README.md), and the ratios; then
the forward's targets (English geometry: <= 0.5 ms at 1x83, <= 6 ms at 8x512, >= 5x faster than
PyTorch eager at 1x83) with pass/fail. The chart is a plain log-log SVG of time vs tokens per
forward (standard library only).
"""
import argparse
import json
import math


def key(s):
    return (s["rows"], s["tokens"])


def merge(layad_runs, torch_runs):
    rows = []
    for lr in layad_runs:
        label = lr["run"]["label"]
        tr = next((t for t in torch_runs if t["run"].get("label") == label), None)
        tshapes = {key(s): s for s in (tr["shapes"] if tr else [])}
        pf = tr["run"]["measured_peak_bf16_flops"] if tr else lr["run"]["peak_flops"]
        pb = tr["run"]["measured_copy_bytes_per_s"] if tr else lr["run"]["peak_bytes_per_s"]
        for s in lr["shapes"]:
            floor = max(s["flops"] / pf, s["weight_bytes"] / pb) * 1e3
            e = {"geometry": label, "rows": s["rows"], "tokens": s["tokens"],
                 "tokens_per_forward": s["real_tokens"], "layad_ms": s["median_ms"],
                 "layad_spread_ms": [s["min_group_ms"], s["max_group_ms"]],
                 "floor_ms_measured_ceilings": floor, "floor_ms_doc_ceilings": s["floor_ms"],
                 "floor_bound": s["floor_bound"], "layad_over_floor": s["median_ms"] / floor,
                 "layad_tokens_per_s": s["tokens_per_s"], "input_hash": s["input_hash"]}
            t = tshapes.get(key(s))
            for v in ("eager", "compile"):
                if t and v in t:
                    e["torch_%s_ms" % v] = t[v]["median_ms"]
                    e["speedup_vs_torch_%s" % v] = t[v]["median_ms"] / s["median_ms"]
            rows.append(e)
    return rows


def targets(rows):
    def find(r, t):
        return next((e for e in rows if e["rows"] == r and e["tokens"] == t and
                     "mmbert" not in e["geometry"].lower()), None)
    out = []
    a, b = find(1, 83), find(8, 512)
    if a:
        out.append({"target": "<= 0.5 ms at 1x83 (English)", "value_ms": a["layad_ms"], "pass": a["layad_ms"] <= 0.5})
        if "speedup_vs_torch_eager" in a:
            out.append({"target": ">= 5x faster than PyTorch eager at 1x83", "value": a["speedup_vs_torch_eager"],
                        "pass": a["speedup_vs_torch_eager"] >= 5})
    if b:
        out.append({"target": "<= 6 ms at 8x512 (English)", "value_ms": b["layad_ms"], "pass": b["layad_ms"] <= 6})
    return out


def svg(rows, path):
    W, H, L, R, T, B = 640, 420, 70, 170, 30, 50
    series = [("layad", "layad_ms", "#1f77b4"), ("PyTorch eager", "torch_eager_ms", "#d62728"),
              ("torch.compile", "torch_compile_ms", "#ff7f0e"), ("floor", "floor_ms_measured_ceilings", "#2ca02c")]
    rows = [e for e in rows if "branch16" not in e["geometry"]]  # variants stay in the JSON only
    pts = [(e["tokens_per_forward"], e[k]) for e in rows for _, k, _ in series if k in e]
    if not pts:
        return
    x0, x1 = math.log10(min(p[0] for p in pts)) - 0.1, math.log10(max(p[0] for p in pts)) + 0.1
    y0, y1 = math.log10(min(p[1] for p in pts)) - 0.1, math.log10(max(p[1] for p in pts)) + 0.1

    def X(v):
        return L + (math.log10(v) - x0) / (x1 - x0) * (W - L - R)

    def Y(v):
        return H - B - (math.log10(v) - y0) / (y1 - y0) * (H - T - B)

    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="18" font-size="13">Forward time vs tokens per forward (H200, log-log)</text>' % L]
    for d in range(math.floor(y0), math.ceil(y1) + 1):
        for m in (1, 2, 5):
            v = m * 10 ** d
            if y0 <= math.log10(v) <= y1:
                o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (L, W - R, Y(v), Y(v)))
                o.append('<text x="%d" y="%.1f" text-anchor="end">%g ms</text>' % (L - 4, Y(v) + 4, v))
    for d in range(math.floor(x0), math.ceil(x1) + 1):
        for m in (1, 2, 5):
            v = m * 10 ** d
            if x0 <= math.log10(v) <= x1:
                o.append('<line y1="%d" y2="%d" x1="%.1f" x2="%.1f" stroke="#eee"/>' % (T, H - B, X(v), X(v)))
                o.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (X(v), H - B + 14, v))
    o.append('<text x="%d" y="%d" text-anchor="middle">tokens per forward</text>' % ((L + W - R) // 2, H - 12))
    for i, (name, k, color) in enumerate(series):
        for geo in sorted({e["geometry"] for e in rows if "branch16" not in e["geometry"]}):
            p = sorted((e["tokens_per_forward"], e[k]) for e in rows if k in e and e["geometry"] == geo)
            if not p:
                continue
            dash = ' stroke-dasharray="5,3"' if "mmbert" in geo.lower() else ""
            o.append('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>' % (
                color, dash, " ".join("%.1f,%.1f" % (X(a), Y(b)) for a, b in p)))
            for a, b in p:
                o.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (X(a), Y(b), color))
        o.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>' % (W - R + 12, T + 10 + 18 * i, color))
        o.append('<text x="%d" y="%d">%s</text>' % (W - R + 30, T + 20 + 18 * i, name))
    o.append('<text x="%d" y="%d" fill="#555">dashed: mmBERT geometry</text>' % (W - R + 12, T + 100))
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layad", action="append", default=[])
    ap.add_argument("--torch", action="append", default=[])
    ap.add_argument("--out", required=True)
    ap.add_argument("--svg")
    a = ap.parse_args()
    lr = [json.load(open(p)) for p in a.layad]
    tr = []
    for p in a.torch:
        try:
            tr.append(json.load(open(p)))
        except (OSError, ValueError) as e:
            print("bench_report: skipping %s: %s" % (p, e))
    rows = merge(lr, tr)
    rep = {"layad_runs": [r["run"] for r in lr], "torch_runs": [t["run"] for t in tr], "shapes": rows,
           "targets": targets(rows)}
    with open(a.out, "w") as f:
        json.dump(rep, f, indent=2)
    if a.svg:
        svg(rows, a.svg)
    for e in rows:
        print("%-28s %3dx%-5d layad %8.3f ms  floor %7.3f  eager %s  compile %s" % (
            e["geometry"][:28], e["rows"], e["tokens"], e["layad_ms"], e["floor_ms_measured_ceilings"],
            "%.3f" % e["torch_eager_ms"] if "torch_eager_ms" in e else "-",
            "%.3f" % e["torch_compile_ms"] if "torch_compile_ms" in e else "-"))
    for t in rep["targets"]:
        print("target %-45s %s" % (t["target"], "PASS" if t["pass"] else "MISS"))


if __name__ == "__main__":
    main()
