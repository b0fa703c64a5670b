#!/usr/bin/env python3
"""kernels_ab.py - two bench_kernels reports side by side: per kernel, op, dtype, shape and split,
the base's and the new binary's median us and new / base (scripts/device/binary-ab prints it, so a
call script needs no table code of its own). Entries in only one report are listed with a dash.

usage: kernels_ab.py BASE.json NEW.json [--dtype fp16]
"""
import argparse
import json


def load(path, dtype):
    out = {}
    for r in json.load(open(path, encoding="utf-8"))["results"]:
        if dtype and r.get("dtype") != dtype:
            continue
        shape = ",".join(f"{k}{v}" for k, v in sorted(r.get("shape", {}).items()))
        key = (r.get("kernel", ""), r.get("op", ""), r.get("xdt", r.get("dtype", "")), shape, r.get("split", 0))
        out[key] = r.get("ours_us")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--dtype", default="fp16", help="only this dtype ('' for all)")
    a = ap.parse_args()
    base, new = load(a.base, a.dtype), load(a.new, a.dtype)
    print(f"{'kernel':14s} {'op':22s} {'x':5s} {'shape':22s} {'split':>5s} {'base us':>9s} {'new us':>9s} {'new/base':>8s}")
    for key in sorted(set(base) | set(new), key=str):
        b, n = base.get(key), new.get(key)
        ratio = f"{n / b:8.3f}" if b and n else f"{'-':>8s}"
        fb = f"{b:9.3f}" if b is not None else f"{'-':>9s}"
        fn = f"{n:9.3f}" if n is not None else f"{'-':>9s}"
        print(f"{key[0]:14s} {key[1]:22s} {key[2]:5s} {key[3]:22s} {key[4]:5d} {fb} {fn} {ratio}")


if __name__ == "__main__":
    main()
