#!/usr/bin/env python3
"""bench_torch_kernels.py - PyTorch equivalents of bench_kernels.cu's records, same GPU, same method.

    python3 bench/bench_torch_kernels.py OURS.json OUT.json

Reads the records written by build/bench/bench_kernels, times for each the PyTorch
op that computes the same thing (F.linear [+ bias, GELU/ReLU], the GeGLU expression,
r += x then F.layer_norm, rotate-half RoPE, scaled_dot_product_attention with the
same boolean mask: key j < len and |i - j| <= w), with the same method (CUDA events
around batches of ~2 ms, median of 9 batches after warm-up, inputs rotated over
>= 256 MB, random data), and writes the merged JSON (ours, torch, ratio) plus the
command, commit and torch version. Prints a table last.

Runs on the GPU machine's python3 (it has torch); needs nothing else.
"""
import json
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

ROTATE = 256 << 20
DT = {"bf16": torch.bfloat16, "fp16": torch.float16}


def time_it(fn):
    """(median, min, max) us per call of graph replays of a batch of calls, and the eager median;
    falls back to eager timing (graph None) if the op cannot be captured."""
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    it = 0
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn(it); it += 1
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    a.record(); fn(it); it += 1; b.record(); b.synchronize()
    reps = max(1, min(200, int(1.0 / max(a.elapsed_time(b), 1e-3))))
    te = []
    for _ in range(5):
        a.record()
        for _ in range(reps):
            fn(it); it += 1
        b.record(); b.synchronize()
        te.append(1e3 * a.elapsed_time(b) / reps)
    te.sort()
    eager = te[len(te) // 2]
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(reps):
                fn(it); it += 1
        g.replay(); torch.cuda.synchronize()
        ts = []
        for _ in range(9):
            a.record(); g.replay(); b.record(); b.synchronize()
            ts.append(1e3 * a.elapsed_time(b) / reps)
        ts.sort()
        del g
        return (ts[len(ts) // 2], ts[0], ts[-1], eager, "graph")
    except Exception as e:  # noqa: BLE001 - report and fall back
        print("graph capture failed, eager timing:", repr(e)[:200], file=sys.stderr)
        torch.cuda.synchronize()
        return (eager, te[0], te[-1], eager, "eager")


def nsets(set_bytes):
    return max(2, min(64, -(-ROTATE // max(set_bytes, 1))))


def rnd(shape, dt, lo=-1.0, hi=1.0):
    return (torch.rand(shape, device="cuda", dtype=torch.float32) * (hi - lo) + lo).to(dt)


def t_gemm(r, dt):
    s = r["shape"]; M, N, K = s["M"], s["N"], s["K"]
    xdt = DT.get(r.get("xdt"), torch.float32) if r.get("xdt") else dt
    if xdt == torch.float32:  # an fp32 Linear (the head's tail in fp32): fp32 weights, fp32 math
        dt = torch.float32
    S = nsets((M * K + N * K + M * N) * 4)
    X = [rnd((M, K), dt) for _ in range(S)]
    W = [rnd((N, K), dt, -0.05, 0.05) for _ in range(S)]
    b = rnd((N,), dt) if r.get("bias") else None  # a 16-bit Linear's bias is 16-bit
    epi = r.get("epi", 0)

    def fn(i):
        y = F.linear(X[i % S], W[i % S], b)
        if epi == 1:
            y = F.gelu(y)
        elif epi == 2:
            y = F.relu(y)
        return y
    return time_it(fn), "F.linear" + (" + F.gelu(erf)" if epi == 1 else " + F.relu" if epi == 2 else "")


def t_geglu(r, dt):
    M, Fd = r["shape"]["M"], r["shape"]["F"]
    S = nsets(M * 3 * Fd * 2)
    U = [rnd((M, 2 * Fd), dt, -3, 3) for _ in range(S)]

    def fn(i):
        u = U[i % S]
        return F.gelu(u[:, :Fd]) * u[:, Fd:]
    return time_it(fn), "F.gelu(u[:, :F]) * u[:, F:]"


def t_layernorm(r, dt):
    M, D = r["shape"]["M"], r["shape"]["D"]
    S = nsets(M * D * 12)
    R = [rnd((M, D), torch.float32, -3, 3) for _ in range(S)]
    X = [rnd((M, D), dt, -1e-3, 1e-3) for _ in range(S)]
    w = rnd((D,), torch.float32, 0.5, 1.5)

    def fn(i):
        rr = R[i % S]
        rr.add_(X[i % S])
        return F.layer_norm(rr, (D,), w, None, 1e-5).to(dt)
    return time_it(fn), "r.add_(x); F.layer_norm(r).to(dt)"


def t_rope(r, dt):
    M, D = r["shape"]["M"], r["shape"]["D"]
    S = nsets(M * 2 * D * 4)
    Q = [rnd((M, 3 * D), dt) for _ in range(S)]
    pos = torch.arange(M, device="cuda") % 512
    inv = 1.0 / (160000.0 ** (torch.arange(0, 64, 2, device="cuda").float() / 64))
    fr = pos[:, None].float() * inv[None, :]
    cos = torch.cat([fr.cos(), fr.cos()], -1)[:, None, :]
    sin = torch.cat([fr.sin(), fr.sin()], -1)[:, None, :]

    def fn(i):
        q = Q[i % S]
        x = q[:, : 2 * D].view(M, 2 * D // 64, 64).float()
        rot = torch.cat([-x[..., 32:], x[..., :32]], -1)
        q[:, : 2 * D] = (x * cos + rot * sin).to(dt).view(M, 2 * D)
    return time_it(fn), "q*cos + rotate_half(q)*sin (fp32), written back"


def t_attention(r, dt):
    s = r["shape"]; B, L, D, w, lens = s["B"], s["L"], s["D"], s["window"], s["lens"]
    H = D // 64
    S = nsets(B * L * 4 * D * 2)
    qkv = [rnd((B, L, 3, H, 64), dt, -2, 2) for _ in range(S)]
    Q = [x[:, :, 0].transpose(1, 2).contiguous() for x in qkv]
    K = [x[:, :, 1].transpose(1, 2).contiguous() for x in qkv]
    V = [x[:, :, 2].transpose(1, 2).contiguous() for x in qkv]
    del qkv
    i = torch.arange(L, device="cuda")
    ln = torch.tensor(lens, device="cuda")
    mask = (i[None, None, :] < ln[:, None, None])  # [B, 1(q), L(k)]
    if w >= 0:
        mask = mask & ((i[:, None] - i[None, :]).abs() <= w)[None]
    mask = mask[:, None, :, :].expand(B, 1, L, L).contiguous()  # [B, 1, L, L]

    def fn(k):
        return F.scaled_dot_product_attention(Q[k % S], K[k % S], V[k % S], attn_mask=mask, scale=0.125)
    out = time_it(fn), "F.scaled_dot_product_attention(attn_mask=bool [B,1,L,L])"
    extra = {}
    if w < 0 and all(x == L for x in lens):  # flash backend (no mask needed here), for reference
        extra["torch_sdpa_nomask_us"] = time_it(
            lambda k: F.scaled_dot_product_attention(Q[k % S], K[k % S], V[k % S], scale=0.125))[0]
    return out, extra


def main():
    text = open(sys.argv[1]).read()
    try:
        ours = json.loads(text)
    except json.JSONDecodeError:  # bench_kernels stopped early: keep the records it finished
        cut = text.rfind("}", 0, text.rfind("\n    {"))
        ours = json.loads(text[: cut + 1] + "\n  ]\n}\n")
        ours["truncated"] = True
        print("warning: bench_kernels output truncated; using the records it finished", file=sys.stderr)
    out_path = sys.argv[2]
    torch.manual_seed(1234)
    results = []
    for r in ours["results"]:
        dt = DT[r["dtype"]]
        extra = {}
        k = r["kernel"]
        if k in ("gemm", "gemm_own"):
            (t, what) = t_gemm(r, dt)
        elif k == "geglu":
            (t, what) = t_geglu(r, dt)
        elif k == "layernorm":
            (t, what) = t_layernorm(r, dt)
        elif k == "rope":
            (t, what) = t_rope(r, dt)
        elif k == "attention":
            (t, what), extra = t_attention(r, dt)
        else:
            results.append(r)
            continue
        r = dict(r)
        r["torch"] = what
        r["torch_us"], r["torch_min_us"], r["torch_max_us"] = round(t[0], 3), round(t[1], 3), round(t[2], 3)
        r["torch_eager_us"], r["torch_timing"] = round(t[3], 3), t[4]
        r["speedup_vs_torch"] = round(t[0] / r["ours_us"], 3)
        r.update({a: round(b, 3) for a, b in extra.items()})
        results.append(r)
        torch.cuda.empty_cache()
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = ""
    merged = {
        "command": "make bench-kernels (build/bench/bench_kernels + bench/bench_torch_kernels.py)",
        "commit": commit or os.environ.get("LAYAD_COMMIT", ""),
        "device": ours["device"], "sm": ours["sm"], "sms": ours["sms"],
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "ceilings": ours["ceilings"], "method": ours["method"],
        "inputs": "uniform random (hash-seeded in bench_kernels.cu, torch.manual_seed(1234) here)",
        "results": results,
        "truncated": ours.get("truncated", False),
    }
    with open(out_path, "w") as f:
        json.dump(merged, f, indent=1)
    c = ours["ceilings"]
    print(f"ceilings: copy {c['copy_tbps']:.3f} TB/s, bf16 GEMM {c['gemm_bf16_tflops']:.1f} TFLOP/s")
    print(f"{'kernel':10} {'op':22} {'dt':5} {'shape':44} {'ours us':>9} {'torch us':>9} {'x':>6}  rate")
    for r in results:
        sh = ",".join(f"{a}{b}" for a, b in r["shape"].items() if a != "lens")
        rate = (f"{r['ours_tflops']:.0f} TF/s {r['ours_pct_gemm_ceiling']:.0f}%" if "ours_tflops" in r else
                f"{r['ours_tbps']:.2f} TB/s {r['ours_pct_copy_ceiling']:.0f}%" if "ours_tbps" in r else "")
        print(f"{r['kernel']:10} {r['op'][:22]:22} {r['dtype']:5} {sh[:44]:44} {r['ours_us']:9.2f} "
              f"{r.get('torch_us', float('nan')):9.2f} {r.get('speedup_vs_torch', float('nan')):6.2f}  {rate}")


if __name__ == "__main__":
    main()
