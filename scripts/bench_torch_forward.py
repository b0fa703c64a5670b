#!/usr/bin/env python3
"""bench_torch_forward.py - the PyTorch side of `layad-dev bench`: the same shapes, the same dtype, same GPU.

Builds the decision model the way the official `laya` package does
(`laya.common.build_model(cfg, encoder_dir, pretrained=False)` + `load_state_dict(strict=True)`:
transformers ModernBertModel with SDPA attention + the Laya head), casts it to the serving dtype
(the act head stays fp32, as upstream computes it on `.float()` inputs), and times one forward per
shape exactly like layad-dev bench does: host clock around the whole call (inputs copied from pinned
host memory, forward, logits/act copied back, synchronize), 10 warm-ups, then the median of
--groups group means of --per-group forwards, three rotating input sets. Variants: eager, and
torch.compile (default mode) of the same forward. It also measures the two ceilings on this GPU
(a large bf16 GEMM, a device-to-device copy) so the floor can be recomputed from this run.

If the official package cannot be imported, a local copy of the head (same modules, same state
dict names, laya-model.md §5) is used, and the report says so.

  python3 scripts/bench_torch_forward.py --model DIR --shapes 1x83,1x512 --dtype fp16 --out torch.json

Runs in the current interpreter (the GPU machine's python3 has torch + transformers; carry the
`laya` wheel, see scripts/device/README.md).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # laya_torch


def load(model_dir, dtype):
    import torch  # noqa: F401 - imported before laya_torch for a clear error when missing
    from laya_torch import build

    model, cfg, source = build(model_dir)
    model = model.to(dtype).cuda().eval()
    model.act_head.float()  # upstream: act head on fp32 inputs
    # the official forward feeds the act head with .float() features; keep its module fp32
    return model, cfg, source


def make_inputs(cfg_json, rows, tokens, seed):
    import torch

    g = torch.Generator().manual_seed(seed)
    vocab = cfg_json["vocab_size"]
    ids = torch.randint(0, vocab - 512, (rows, tokens), generator=g, dtype=torch.long)
    ids[:, 0] = cfg_json.get("cls_token_id", 50281)
    ids[:, -1] = cfg_json.get("sep_token_id", 50282)
    markers = torch.tensor([[12, 15, 18]] * rows, dtype=torch.long).clamp(max=tokens - 2)
    mask = torch.ones(rows, tokens, dtype=torch.long)
    mmask = torch.ones(rows, 3, dtype=torch.bool)
    qtype = torch.zeros(rows, dtype=torch.long)
    return [t.pin_memory() for t in (ids, mask, markers, mmask, qtype)]


def time_fn(fn, sets, warm, groups, per_group):
    import torch

    it = 0
    for _ in range(warm):
        fn(sets[it % len(sets)])
        it += 1
    means = []
    for _ in range(groups):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(per_group):
            fn(sets[it % len(sets)])
            it += 1
        means.append((time.perf_counter() - t0) * 1e3 / per_group)
    return means


def ceilings():
    import torch

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(10):
        a @ b
    e1.record()
    torch.cuda.synchronize()
    flops = 10 * 2 * 8192 ** 3 / (e0.elapsed_time(e1) / 1e3)
    x = torch.empty(2 ** 30, dtype=torch.uint8, device="cuda").random_()
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    torch.cuda.synchronize()
    e0.record()
    for _ in range(10):
        y.copy_(x)
    e1.record()
    torch.cuda.synchronize()
    bw = 10 * 2 * x.numel() / (e0.elapsed_time(e1) / 1e3)
    del a, b, x, y
    torch.cuda.empty_cache()
    return flops, bw


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--shapes", default="1x83,1x512,8x512,64x512")
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    ap.add_argument("--groups", type=int, default=5)
    ap.add_argument("--per-group", type=int, default=30)
    ap.add_argument("--compile", default="default", help="torch.compile mode, or 'off'")
    ap.add_argument("--compile-shapes", default="", help="shapes that also get the torch.compile "
                    "variant (default: all; each new shape costs a compilation)")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import torch

    dtype = torch.float16 if args.dtype == "fp16" else torch.bfloat16
    torch.set_grad_enabled(False)
    torch.backends.cuda.matmul.allow_tf32 = True
    peak_flops, peak_bw = ceilings()
    model, cfg, source = load(args.model, dtype)
    with open(os.path.join(args.model, "encoder", "config.json")) as f:
        ecfg = json.load(f)

    def forward(m):
        def run(s):
            ids, mask, markers, mmask, qtype = (t.cuda(non_blocking=True) for t in s)
            logits, act = m(ids, mask, markers, mmask, qtype)
            return logits.cpu(), act.cpu()  # synchronizes, like layad's copy back
        return run

    variants = [("eager", model)]
    if args.compile != "off":
        import torch._dynamo
        torch._dynamo.config.automatic_dynamic_shapes = False  # one static graph per shape
        torch._dynamo.config.cache_size_limit = 64
        variants.append(("compile", torch.compile(model, mode=None if args.compile == "default" else args.compile)))
    out = {"run": {"tool": "pytorch", "label": args.label, "model_source": source, "dtype": args.dtype,
                   "torch": torch.__version__, "device": torch.cuda.get_device_name(),
                   "command": sys.argv, "measured_peak_bf16_flops": peak_flops,
                   "measured_copy_bytes_per_s": peak_bw,
                   "timing": "host clock around the whole call (pinned H2D, forward, D2H), median of group means"},
           "shapes": []}
    for spec in args.shapes.split(","):
        rows, tokens = (int(x) for x in spec.lower().split("x"))
        sets = [make_inputs(ecfg, rows, tokens, 100 * rows + tokens + k) for k in range(3)]
        entry = {"rows": rows, "tokens": tokens}
        for name, m in variants:
            if name == "compile" and args.compile_shapes and spec not in args.compile_shapes.split(","):
                continue
            fn = forward(m)
            t0 = time.perf_counter()
            fn(sets[0])  # compile (or first call) outside the timing
            first = (time.perf_counter() - t0) * 1e3
            per = args.per_group if rows * tokens <= 8192 else max(5, args.per_group // 3)
            means = time_fn(fn, sets, 10 if rows * tokens <= 8192 else 3, args.groups, per)
            entry[name] = {"median_ms": statistics.median(means), "min_group_ms": min(means),
                           "max_group_ms": max(means), "group_means_ms": means, "per_group": per,
                           "first_call_ms": first}
            print("torch %-8s %3dx%-5d median %8.3f ms (first call %.0f ms)" % (
                name, rows, tokens, entry[name]["median_ms"], first), flush=True)
        out["shapes"].append(entry)
        with open(args.out, "w") as f:  # partial results survive a timeout
            json.dump(out, f, indent=2)
    print("ceilings: bf16 GEMM %.0f TFLOP/s, copy %.2f TB/s" % (peak_flops / 1e12, peak_bw / 1e12))


if __name__ == "__main__":
    main()
