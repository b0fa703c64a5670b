#!/usr/bin/env python3
"""run_official.py - the mixed set through the official `laya` package (0.4.15), `Agent.system_one`,
on the GPU with PyTorch: the reference answers compare.py counts disagreements against, and its
sequential latency (from the first call after the Agent is built).

`laya.Agent(path, device=...)` loads a local directory in the Hugging Face Laya layout
(laya/agent.py: an existing path is used as is, no download; it needs rl_agent_config.json,
model.safetensors, tokenizer/ for transformers' AutoTokenizer and encoder/ for the ModernBERT
config; weights load with load_state_dict(strict=True)). Needs torch, transformers, safetensors,
numpy and huggingface_hub; the wheel itself installs with --no-deps. Runs offline
(HF_HUB_OFFLINE=1).

Precision (--precision): fp32 (default: autocast off, the closest the package gets to its exact
CPU answers, so disagreements measure the other system), fp16 (LAYA_CUDA_AMP=fp16, the dtype
layad and laya-cuda run), or bf16 (the package's own CUDA default for these checkpoints).
--accelerate: the package's TileLang fast path (`Agent.accelerate(strict=True)`: fused kernels,
flash attention, CUDA graphs per shape bucket, in the autocast dtype; needs tilelang 0.1.15 and
its dependencies, and fp16 or bf16), built before the first request; its kernels and graphs are
made on first use of a shape, which the first requests pay, as a user would.

  run_official.py --model CHECKPOINT_DIR --requests requests.jsonl --out-dir DIR [--precision fp32]

Writes DIR/NAME.json and DIR/NAME-answers.jsonl (mixedlib.py's answers format). No concurrency
phase: the Agent serves one caller at a time.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mixedlib  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--requests", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--precision", choices=("fp32", "fp16", "bf16"), default="fp32")
    ap.add_argument("--accelerate", action="store_true", help="the TileLang fast path (Agent.accelerate)")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--seq-budget", type=float, default=900)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--name", default="official")
    ap.add_argument("--label", default="")
    ap.add_argument("--commit")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if a.precision != "fp32":
        os.environ["LAYA_CUDA_AMP"] = a.precision
    os.makedirs(a.out_dir, exist_ok=True)
    reqs, sha = mixedlib.load_requests(a.requests, a.limit)

    import importlib.metadata as md
    import torch
    import laya

    if a.accelerate and a.precision == "fp32":
        sys.exit("run_official: --accelerate runs in fp16 or bf16")
    out = {"system": "official laya %s Agent.system_one%s (PyTorch %s, %s, %s)" % (
        md.version("laya"), ", TileLang fast path" if a.accelerate else "", torch.__version__, a.device,
        a.precision), "label": a.label}
    out.update(mixedlib.provenance(a.requests, sha, len(reqs), a.commit))
    out["checkpoint"] = os.path.abspath(a.model)
    out["versions"] = {"laya": md.version("laya"), "torch": torch.__version__,
                       "torch_cuda": torch.version.cuda, "transformers": md.version("transformers")}
    out["package_file"] = laya.__file__
    t0 = time.perf_counter()
    agent = laya.Agent(a.model, device=a.device)
    if a.precision == "fp32":
        agent.amp_enabled = False
    if agent.device.type != torch.device(a.device).type:
        sys.exit("run_official: the Agent fell back to %s" % agent.device)
    out["agent"] = {"load_s": round(time.perf_counter() - t0, 3), "device": str(agent.device),
                    "compute": "autocast %s" % agent.dtype if agent.amp_enabled else "fp32 (autocast off)",
                    "gpu": torch.cuda.get_device_name(agent.device) if agent.device.type == "cuda" else None}
    if a.accelerate:
        t1 = time.perf_counter()
        agent.accelerate(strict=True)
        out["agent"]["accelerate_s"] = round(time.perf_counter() - t1, 3)
        out["versions"]["tilelang"] = md.version("tilelang")
        print("run_official: TileLang fast path built in %.2f s" % out["agent"]["accelerate_s"], flush=True)
    print("run_official: Agent loaded in %.2f s (%s, %s); sequential over %d requests" % (
        out["agent"]["load_s"], agent.device, out["agent"]["compute"], len(reqs)), flush=True)

    def predict(state, questions):
        res = agent.system_one(state, questions)
        if agent.device.type == "cuda":
            torch.cuda.synchronize(agent.device)
        return res

    seq, rows = mixedlib.run_sequential(predict, reqs, a.seq_budget)
    out["sequential"] = seq
    mixedlib.write_jsonl(os.path.join(a.out_dir, a.name + "-answers.jsonl"), rows)
    print("run_official: sequential %d answered, %d rejected; %s" % (
        seq["answered"], seq["rejected"], seq["latency_ok"]), flush=True)
    mixedlib.write_json(os.path.join(a.out_dir, a.name + ".json"), out)
    print("run_official: wrote %s" % os.path.join(a.out_dir, a.name + ".json"))


if __name__ == "__main__":
    main()
