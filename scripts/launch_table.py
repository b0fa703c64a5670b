#!/usr/bin/env python3
"""launch_table.py - one forward's kernels with their launch shape and DRAM traffic, from the
CSV of `ncu --csv --page raw --print-units base --metrics gpu__time_duration.sum,
launch__grid_size,launch__block_size,launch__cluster_size,dram__bytes_read.sum,...` over
`layad-dev bench` (scripts/device/launch-table). Kinds as scripts/kernel_times.py names them;
kernels of one kind and launch shape are grouped, largest total first: per launch its us, the MB
it read from DRAM and the rate. A cuBLASLt GEMM's CTAs and cluster size say how many SMs it
streams with (bench/results/experiments/launch-table/).

usage: launch_table.py NCU.csv
"""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_times as kt  # noqa: E402

lines = [ln for ln in open(sys.argv[1], errors="replace") if ln.startswith('"')]
rows = list(csv.reader(lines))
head, body = rows[0], rows[2:]
ix = {h: i for i, h in enumerate(head)}


def num(r, k):
    return float(r[ix[k]].replace(",", ""))


names = [r[ix["Kernel Name"]] for r in body]
fw = body[-kt.period(names):]
labels = kt.label_all([(r[ix["Kernel Name"]], 0) for r in fw])
groups = {}
for lab, r in zip(labels, fw):
    key = (lab, r[ix["Kernel Name"]][:44], int(num(r, "launch__grid_size")), int(num(r, "launch__block_size")),
           int(num(r, "launch__cluster_size")))
    g = groups.setdefault(key, [0, 0.0, 0.0])
    g[0] += 1
    g[1] += num(r, "gpu__time_duration.sum") / 1e3
    g[2] += num(r, "dram__bytes_read.sum")
total = sum(g[1] for g in groups.values())
print(f"{len(fw)} kernels, {total:.1f} us summed")
print(f"{'kind':22s} {'kernel':44s} {'grid':>5s} {'block':>5s} {'clu':>3s} {'n':>3s} {'us':>6s} {'MB read':>7s} {'TB/s':>5s}")
for (lab, name, grid, block, clu), (n, us, by) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
    print(f"{lab:22s} {name:44s} {grid:5d} {block:5d} {clu:3d} {n:3d} {us / n:6.2f} {by / n / 1e6:7.2f} {by / us / 1e6:5.2f}")
