#!/usr/bin/env bash
# test_ops_kernel_times.sh - scripts/kernel_times.py on the CPU (scripts/device/kernel-times runs
# it on the H200 over Nsight Compute's CSV): on a made-up CSV in ncu's shape (==PROF== lines, a
# units row, thousands separators, a warm-up before three forwards) it finds one forward, names
# each library kernel by its neighbours and sums by kind; a file with no repeating forward fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ops.sh"
ops_init
T=$OPS_TMP

python3 - "$T/ncu.csv" <<'PY'
import random, sys
random.seed(7)
layer = [("sm90_xmma_gemm_qkv", 6000), ("void rope_kernel<__half, 8>(...)", 2800),
         ("void attention_kernel<__half>(...)", 6700), ("sm90_xmma_gemm_wo", 5400),
         ("void layernorm_kernel<float, __half, 1, true, 8>(...)", 3500),
         ("sm90_xmma_gemm_wi", 6800), ("void geglu_vec_kernel<__half, 2>(...)", 2500),
         ("sm90_xmma_gemm_wo2", 5000), ("splitKreduce_kernel", 300),
         ("void layernorm_kernel<float, __half, 1, true, 8>(...)", 3500)]
forward = [("void embed_layernorm<__half>(...)", 4000)] + layer * 4 + [("void scorer_tail_kernel(...)", 5000)]
warm = [("sm90_xmma_gemm_tuning", 9000)] * 37
with open(sys.argv[1], "w") as f:
    f.write("==PROF== Connected to process 1234\n")
    f.write('"ID","Process ID","Kernel Name","Context","gpu__time_duration.sum"\n')
    f.write('"","","","","nsecond"\n')
    for i, (name, ns) in enumerate(warm + forward * 3):
        f.write(f'"{i}","1234","{name}","1","{ns:,}"\n')
    f.write("==PROF== Disconnected from process 1234\n")
PY
python3 scripts/kernel_times.py "$T/ncu.csv" --label test --out "$T/k.json" > "$T/k.txt" \
  || { cat "$T/k.txt"; ops_fail "kernel_times.py"; }
cat "$T/k.txt"
python3 - "$T/k.json" <<'PY' || ops_fail "kernel_times.py: wrong sums"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kernels_per_forward"] == 42, d["kernels_per_forward"]
k = d["by_kind"]
want = {"gemm ln>rope": (3, 18.0), "gemm embed>rope": (1, 6.0), "rope": (4, 11.2),
        "attention": (4, 26.8), "gemm attention>ln": (4, 21.6), "ln": (8, 28.0),
        "gemm ln>geglu": (4, 27.2), "geglu": (4, 10.0), "gemm geglu>ln": (8, 21.2),
        "embed": (1, 4.0), "scorer": (1, 5.0)}
for lab, (n, us) in want.items():
    assert lab in k, (lab, sorted(k))
    assert k[lab]["count"] == n and abs(k[lab]["us"] - us) < 1e-6, (lab, k[lab])
assert set(k) == set(want), sorted(set(k) - set(want))
assert abs(d["sum_us"] - sum(us for _, us in want.values())) < 1e-6, d["sum_us"]
assert len(d["sequence"]) == 42 and d["sequence"][0] == ["embed", 4.0], d["sequence"][:2]
print("one forward of 42 kernels, sums by kind as built")
PY
head -40 "$T/ncu.csv" > "$T/short.csv"
if python3 scripts/kernel_times.py "$T/short.csv" > "$T/short.txt" 2>&1; then
  ops_fail "a file with no repeating forward was accepted"
fi
grep -q "no repeating forward" "$T/short.txt" || ops_fail "no reason given: $(cat "$T/short.txt")"
echo "PASS"
