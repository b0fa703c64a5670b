#!/usr/bin/env python3
"""kernel_times.py - one forward's kernel times from an Nsight Compute CSV.

Reads `ncu --csv --page raw --print-units base --metrics gpu__time_duration.sum` output of a
program that ran the same forward several times in a row (`layad-dev bench`), finds the period
of the trailing kernel sequence (one forward), and sums the last period's kernels by kind.
A cuBLASLt kernel (any kernel not ours) is named by its neighbours, e.g. `gemm ln>rope` is the
one between a LayerNorm and RoPE (Wqkv), so the four encoder GEMMs come apart without knowing
cuBLAS's kernel names. Writes a JSON summary and prints a table (microseconds).

usage: kernel_times.py NCU.csv [--label TEXT] [--out FILE]
"""
import argparse
import csv
import json
import sys

OURS = [  # substring of the demangled name -> kind (first match wins)
    ("embed", "embed"), ("layernorm", "ln"), ("ln_", "ln"), ("rope", "rope"),
    ("attention_select", "att_select"), ("attention", "attention"), ("att_", "attention"),
    ("geglu", "geglu"), ("gemm_tc", "own_gemm"), ("gemm_f32", "own_gemm"), ("gemm_rows", "own_gemm_rows"),
    ("gelu_pass", "gelu"), ("type_emb", "type_emb"), ("gather", "gather"),
    ("decision_tail", "decision_tail"),
    ("scorer_tail", "scorer"), ("conf_features", "features"), ("act_input", "act_input"),  # before 3b37a4b
    ("copy_kernel", "copy"), ("convert", "convert"),
]


def kind_of(name):
    low = name.lower()
    for sub, kind in OURS:
        if sub in low:
            return kind
    return None  # cuBLASLt


def read_rows(path):
    lines = [ln for ln in open(path, encoding="utf-8", errors="replace") if ln.startswith('"')]
    rows = list(csv.reader(lines))
    head, body = rows[0], rows[1:]
    name_col = head.index("Kernel Name")
    t_col = head.index("gpu__time_duration.sum")
    out = []
    for r in body:
        try:
            out.append((r[name_col], float(r[t_col].replace(",", "")) / 1e3))  # ns -> us
        except (ValueError, IndexError):
            continue  # the units row
    return out


def period(names, lo=20, hi=4000):
    for p in range(lo, min(hi, len(names) // 2) + 1):
        if names[-p:] == names[-2 * p:-p]:
            return p
    return None


def label_all(fw):
    kinds = [kind_of(n) for n, _ in fw]
    labels = []
    for i, k in enumerate(kinds):
        if k is not None:
            labels.append(k)
            continue
        prev = next((kinds[j] for j in range(i - 1, -1, -1) if kinds[j]), "start")
        nxt = next((kinds[j] for j in range(i + 1, len(kinds)) if kinds[j]), "end")
        labels.append(f"gemm {prev}>{nxt}")
    return labels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--label", default="")
    ap.add_argument("--out")
    a = ap.parse_args()
    rows = read_rows(a.csv)
    names = [n for n, _ in rows]
    p = period(names)
    if p is None:
        sys.exit(f"kernel_times: no repeating forward in {len(rows)} kernels")
    fw = rows[-p:]
    labels = label_all(fw)
    by = {}
    for (name, us), lab in zip(fw, labels):
        e = by.setdefault(lab, {"count": 0, "us": 0.0, "names": set()})
        e["count"] += 1
        e["us"] += us
        e["names"].add(name[:120])
    total = sum(us for _, us in fw)
    print(f"{a.label}: {p} kernels per forward, {total:.1f} us summed")
    for lab, e in sorted(by.items(), key=lambda kv: -kv[1]["us"]):
        print(f"  {lab:24s} {e['count']:4d} x {e['us'] / e['count']:8.2f} = {e['us']:9.1f} us"
              f" ({100 * e['us'] / total:4.1f}%)")
    doc = {"label": a.label, "kernels_per_forward": p, "sum_us": round(total, 2),
           "by_kind": {lab: {"count": e["count"], "us": round(e["us"], 2),
                             "names": sorted(e["names"])} for lab, e in by.items()},
           "sequence": [[lab, round(us, 2)] for (_, us), lab in zip(fw, labels)]}
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
