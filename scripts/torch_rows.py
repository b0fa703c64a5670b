#!/usr/bin/env python3
"""torch_rows.py - the official PyTorch model's forward over layad's parity rows, for parity-fast.

Reads the rows `layad-dev parity-fast --dump-rows FILE` wrote (format "layad-parity-rows/1", see
tests/tools/cmd_parity.c), runs them through the official decision model exactly as the `laya` package
serves it, and writes the logits in the format `layad-dev parity-fast --external FILE` reads
("layad-external-logits/1"), so the comparison with the CPU fp32 reference is computed by layad's
own code on the same 288 questions.

How upstream runs it (laya 0.4.15, agent.py `_infer` / `_amp_context` / `collate_items`): fp32
weights on the device, the whole `model(...)` call under `torch.autocast(device_type, dtype)` for
fp16/bf16 (no autocast at all for fp32), under no_grad; rows collated per call, ids padded with the
tokenizer's pad id to the batch's longest row, attention mask 1 over each row's tokens, marker
positions/mask padded to the batch's widest row; reference_compile pinned off. Here: batches of
--batch rows in the dump's order (upstream batches one state's questions, several states per call
with predict_batch; the padding is what matters and it is the same rule).

  python3 scripts/torch_rows.py --model DIR --rows rows.json --dtype fp16 --device cuda --out x.json
  layad-dev parity-fast --model DIR --ref REF --external x.json --out report.json

Good output: fp32 on cpu matches layad's CPU reference to ~1e-5 in logits (the two are the same
maths in a different order); fp16/bf16 on cuda show upstream's own precision.
"""
import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # laya_torch


def finite_or_str(x):
    """JSON has no NaN/Infinity: write them as the strings layad's reader accepts."""
    return x if math.isfinite(x) else ("NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity"))


def collate(rows, pad_id):
    """The batch as upstream's collate_items builds it (int64 ids/mask/markers, bool marker mask)."""
    import torch

    n, L = len(rows), max(len(r["ids"]) for r in rows)
    k = max(len(r["markers"]) for r in rows)
    ids = torch.full((n, L), pad_id, dtype=torch.long)
    att = torch.zeros((n, L), dtype=torch.long)
    mpos = torch.zeros((n, k), dtype=torch.long)
    mmask = torch.zeros((n, k), dtype=torch.bool)
    for i, r in enumerate(rows):
        ids[i, :len(r["ids"])] = torch.tensor(r["ids"], dtype=torch.long)
        att[i, :len(r["ids"])] = 1
        mpos[i, :len(r["markers"])] = torch.tensor(r["markers"], dtype=torch.long)
        mmask[i, :len(r["markers"])] = True
    qtype = torch.tensor([r["qtype"] for r in rows], dtype=torch.long)
    return ids, att, mpos, mmask, qtype


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="layad-dev checkpoint directory")
    ap.add_argument("--rows", required=True, help="layad-dev parity-fast --dump-rows output")
    ap.add_argument("--dtype", default="fp16", choices=["fp32", "fp16", "bf16"],
                    help="autocast dtype (fp32: no autocast)")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--batch", type=int, default=16, help="rows per forward")
    ap.add_argument("--label", default="", help="default: torch-DTYPE-DEVICE")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import torch
    from laya_torch import build

    with open(args.rows) as f:
        doc = json.load(f)
    if doc.get("format") != "layad-parity-rows/1":
        sys.exit("torch_rows: %s is not a layad-parity-rows/1 file" % args.rows)
    rows, K = doc["rows"], doc["K"]
    with open(os.path.join(args.model, "encoder", "config.json")) as f:
        pad_id = json.load(f).get("pad_token_id", doc["pad_token_id"])

    t0 = time.perf_counter()
    model, _, source = build(args.model)
    try:  # the Agent pins the eager encoder (transformers 4.x would compile it on "auto")
        model.encoder.config.reference_compile = False
    except AttributeError:
        pass
    dev = torch.device(args.device)
    model = model.to(dev).eval()
    load_s = time.perf_counter() - t0
    amp = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.dtype)

    logits, act = [], []
    t0 = time.perf_counter()
    with torch.no_grad():
        for start in range(0, len(rows), args.batch):
            batch = [t.to(dev) for t in collate(rows[start:start + args.batch], pad_id)]
            if amp is None:
                lg, ac = model(*batch)
            else:
                with torch.autocast(device_type=dev.type, dtype=amp):
                    lg, ac = model(*batch)
            lg, ac = lg.float().cpu(), ac.float().cpu()
            for i, r in enumerate(rows[start:start + args.batch]):
                logits.append([finite_or_str(v) for v in lg[i, :len(r["markers"])].tolist()])
                act.append([finite_or_str(v) for v in ac[i].tolist()])
    fwd_s = time.perf_counter() - t0

    label = args.label or "torch-%s-%s" % (args.dtype, args.device)
    meta = {"tool": "scripts/torch_rows.py", "model_source": source, "torch": torch.__version__,
            "dtype": args.dtype, "autocast": amp is not None, "device": args.device,
            "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
            "batch_rows": args.batch, "pad_token_id": pad_id, "load_s": load_s, "forward_s": fwd_s,
            "command": sys.argv}
    try:
        import transformers
        meta["transformers"] = transformers.__version__
    except ImportError:
        pass
    out = {"format": "layad-external-logits/1", "label": label, "set_hash": doc["set_hash"],
           "model_sha256": doc["model_sha256"], "K": K, "meta": meta, "logits": logits,
           "act_logits": act}
    with open(args.out, "w") as f:
        json.dump(out, f, allow_nan=False)
    print("torch_rows: %s, %d rows in %.1f s (load %.1f s), %s -> %s" % (
        label, len(rows), fwd_s, load_s, source, args.out), flush=True)


if __name__ == "__main__":
    main()
