#!/usr/bin/env python3
"""ref-forward.py - decision logits and act logits from the official `laya` package (fp32, CPU).

The oracle for layad's forward: builds the model exactly the way `laya.Agent` does
(`laya.common.build_model(cfg, encoder_dir, pretrained=False)`, `load_state_dict(strict=True)`
from model.safetensors), collates the given rows with `laya.common.collate_items` (right
padding, K = max markers, zeroed marker slots) and runs `DecisionModel.forward` once in fp32
on the CPU under torch.inference_mode.

  scripts/ref-forward.py --model DIR [--in ROWS.json] [--out OUT.json] [--threads N]

Input (stdin by default): {"rows": [{"ids": [...], "markers": [...], "qtype": 0|1|2}, ...]}
(other keys are carried through). Output: the input object plus "logits" [n][K] and "act"
[n][2] (float32 values, printed exactly), "K", and "reference" (package versions, command).
Every row of the input is one batch; add "--each" to also run each row alone ("logits_alone",
"act_alone").

Runs in $LAYAD_VENV if set, else in .venv at the repo root, created on first use with CPU
torch and `laya` from PyPI (the only network access; offline afterwards).
"""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ensure_venv():
    """Re-executes under the chosen virtualenv, creating it if needed."""
    venv = os.environ.get("LAYAD_VENV") or os.path.join(REPO, ".venv")
    py = os.path.join(venv, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        return
    if not os.path.exists(py) or subprocess.call([py, "-c", "import laya, torch"],
                                                 stderr=subprocess.DEVNULL) != 0:
        if os.environ.get("LAYAD_VENV"):
            sys.exit("ref-forward: LAYAD_VENV=%s has no working laya/torch" % venv)
        subprocess.check_call([sys.executable, "-m", "venv", venv])
        pip = [py, "-m", "pip", "install", "-q"]
        # torch from PyPI; LAYAD_TORCH_INDEX_URL opts into another index (the CPU-only wheels).
        index = os.environ.get("LAYAD_TORCH_INDEX_URL")
        subprocess.check_call(pip + ["torch"] + (["--index-url", index] if index else []))
        subprocess.check_call(pip + ["laya"])
    os.execv(py, [py] + sys.argv)


def load_model(model_dir):
    import torch
    from safetensors.torch import load_file
    from laya.common import build_model

    with open(os.path.join(model_dir, "rl_agent_config.json")) as f:
        cfg = json.load(f)
    model = build_model(cfg, encoder_dir=os.path.join(model_dir, "encoder"), pretrained=False)
    model.load_state_dict(load_file(os.path.join(model_dir, "model.safetensors")), strict=True)
    model.float().eval()
    torch.set_grad_enabled(False)
    return model, cfg


def pad_id(model_dir, model):
    pid = getattr(model.encoder.config, "pad_token_id", None)
    if pid is None:
        with open(os.path.join(model_dir, "encoder", "config.json")) as f:
            pid = json.load(f).get("pad_token_id", 0)
    return int(pid)


def run(model, rows, pid):
    import torch
    from laya.common import collate_items

    items = [{"ids": r["ids"], "markers": r["markers"], "qtype": r["qtype"]} for r in rows]
    b = collate_items([items], pid)
    with torch.inference_mode():
        logits, act = model(b["input_ids"], b["attention_mask"], b["marker_pos"], b["marker_mask"], b["qtype"])
    return logits.float().tolist(), act.float().tolist()


def main():
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--in", dest="inp", default="-")
    ap.add_argument("--out", default="-")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--each", action="store_true")
    args = ap.parse_args()

    import importlib.metadata as md
    import torch

    torch.set_num_threads(args.threads)
    data = json.load(sys.stdin if args.inp == "-" else open(args.inp))
    rows = data["rows"]
    model, _ = load_model(args.model)
    pid = pad_id(args.model, model)
    logits, act = run(model, rows, pid)
    data["K"] = max(len(r["markers"]) for r in rows)
    data["logits"], data["act"] = logits, act
    if args.each:
        alone = [run(model, [r], pid) for r in rows]
        data["logits_alone"] = [a[0][0] for a in alone]
        data["act_alone"] = [a[1][0] for a in alone]
    data["reference"] = {
        "laya": md.version("laya"), "torch": torch.__version__, "transformers": md.version("transformers"),
        "pad_id": pid, "threads": args.threads,
        "command": "scripts/ref-forward.py --model %s --in %s --out %s%s" % (
            args.model, args.inp, args.out, " --each" if args.each else ""),
    }
    text = json.dumps(data, separators=(",", ":")) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    if "-h" not in sys.argv and "--help" not in sys.argv:
        ensure_venv()
    main()
