#!/usr/bin/env python3
"""run_laya_cuda.py - the mixed set through laya-cuda (0.1.1.post1) in process, measured like
run_layad.py measures the daemon.

laya-cuda (github.com/Alexw1111/laya-cuda, PyPI `laya-cuda`) is a pure-Python CuPy + cuBLAS +
NVRTC runtime for Laya checkpoints. Its API as read from the 0.1.1.post1 wheel:

  Engine(path, device="cuda:0", max_cached_shapes=16)   one synchronous caller;
      .predict(state, questions) -> {"model", "answers", "usage"}; .last_metrics; .close()
  BatchEngine(path, max_batch_size=16, max_batch_tokens=4096, max_pending=128, max_wait_ms=1)
      .submit(state, questions) -> Future   thread-safe: callers on any thread, one worker thread
      owns the engine and packs the queued requests' question rows into one forward;
      queue.Full past max_pending; .close()

`path` may be a local directory holding model.safetensors, rl_agent_config.json,
encoder/config.json and tokenizer/tokenizer.json (laya_cuda/models.py `resolve`); the tensor names
and shapes must be exactly the Laya ones (laya_cuda/laya.py `weight_shapes`), the special tokens
are read from tokenizer/tokenizer_config.json. It needs CUDA (sm_80+), cupy, tokenizers,
safetensors, numpy and cuda.pathfinder (a CuPy dependency); it refuses a request without
questions ("Provide a nonempty mapping of questions") and choice labels that are not strings.

  sequential   Engine: every request once, in order, from the first call after the engine is
               built (its first-use graph captures included, as a user would see them)
  concurrent   BatchEngine, closed loop: `level` client threads, each submit()s and waits on the
               Future, cycling over the set for --duration seconds (or --count requests)

A refusal (any exception) is counted and its reason kept; latency figures are over the answered
requests. Writes DIR/NAME.json, DIR/NAME-answers.jsonl (sequential answers, mixedlib.py's format,
with laya-cuda's per-call metrics) and DIR/NAME-concurrent.jsonl.gz.

  run_laya_cuda.py --model CHECKPOINT_DIR --requests requests.jsonl --out-dir DIR
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mixedlib  # noqa: E402


def versions():
    out = {}
    try:
        import importlib.metadata as md
        for dist in ("laya-cuda", "cupy-cuda13x", "cupy-cuda12x", "cupy", "tokenizers", "safetensors", "numpy",
                     "cuda-pathfinder"):
            try:
                out[dist] = md.version(dist)
            except md.PackageNotFoundError:
                pass
    except ImportError:
        pass
    try:
        import cupy as cp
        out["cuda_runtime"] = cp.cuda.runtime.runtimeGetVersion()
        out["cuda_driver"] = cp.cuda.runtime.driverGetVersion()
        out["gpu"] = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception as e:  # noqa: BLE001 - reported, not fatal here
        out["cupy_error"] = str(e)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="checkpoint directory (Hugging Face Laya layout)")
    ap.add_argument("--requests", required=True)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--concurrency", default="1,8,64")
    ap.add_argument("--duration", type=float, default=10, help="seconds per concurrency level")
    ap.add_argument("--count", type=int, default=0, help="requests per level instead of --duration")
    ap.add_argument("--max-cached-shapes", type=int, default=16, help="Engine's graph slots (its default)")
    ap.add_argument("--max-batch-size", type=int, default=16, help="BatchEngine question rows per forward")
    ap.add_argument("--max-batch-tokens", type=int, default=4096, help="BatchEngine packed tokens per forward")
    ap.add_argument("--max-pending", type=int, default=128)
    ap.add_argument("--max-wait-ms", type=float, default=1.0)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--seq-budget", type=float, default=900)
    ap.add_argument("--skip-concurrent", action="store_true")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--name", default="laya-cuda")
    ap.add_argument("--label", default="")
    ap.add_argument("--commit")
    a = ap.parse_args()
    levels = mixedlib.parse_levels(a.concurrency)
    if not 0 < a.duration <= 300 or not 0 <= a.count <= 500000:
        sys.exit("run_laya_cuda: --duration must be in (0, 300], --count in [0, 500000]")
    os.makedirs(a.out_dir, exist_ok=True)
    reqs, sha = mixedlib.load_requests(a.requests, a.limit)

    import laya_cuda
    from laya_cuda import BatchEngine, Engine

    out = {"system": "laya-cuda %s in process (Engine sequential, BatchEngine concurrent)" % laya_cuda.__version__,
           "label": a.label}
    out.update(mixedlib.provenance(a.requests, sha, len(reqs), a.commit))
    out["checkpoint"] = os.path.abspath(a.model)
    out["versions"] = versions()
    out["package_file"] = laya_cuda.__file__

    t0 = time.perf_counter()
    engine = Engine(a.model, device=a.device, max_cached_shapes=a.max_cached_shapes)
    out["engine"] = {"load_s": round(time.perf_counter() - t0, 3), "max_cached_shapes": a.max_cached_shapes,
                     "checkpoint_resolved": str(engine.path)}
    print("run_laya_cuda: Engine loaded in %.2f s; sequential over %d requests" % (
        out["engine"]["load_s"], len(reqs)), flush=True)

    def last_metrics():
        m = dict(engine.last_metrics)
        m.pop("input_sha256", None)
        if "shape" in m:
            m["shape"] = list(m["shape"])
        return m

    seq, rows = mixedlib.run_sequential(engine.predict, reqs, a.seq_budget, last_metrics)
    captures = sum(1 for r in rows if r.get("metrics", {}).get("graph_capture"))
    misses = sum(1 for r in rows if r.get("metrics", {}).get("cache_miss"))
    seq["graph_captures"], seq["shape_cache_misses"] = captures, misses
    out["sequential"] = seq
    mixedlib.write_jsonl(os.path.join(a.out_dir, a.name + "-answers.jsonl"), rows)
    print("run_laya_cuda: sequential %d answered, %d rejected %s; %s" % (
        seq["answered"], seq["rejected"], json.dumps(seq["rejections"]), json.dumps(seq["latency_ok"])), flush=True)
    engine.close()

    out["concurrent"], allrec = [], []
    if not a.skip_concurrent:
        opts = dict(max_batch_size=a.max_batch_size, max_batch_tokens=a.max_batch_tokens,
                    max_pending=a.max_pending, max_wait_ms=a.max_wait_ms)
        t0 = time.perf_counter()
        be = BatchEngine(a.model, device=a.device, max_cached_shapes=a.max_cached_shapes, **opts)
        out["batch_engine"] = dict(opts, load_s=round(time.perf_counter() - t0, 3), concurrent_submit=True)
        batch_sizes = []

        def call(state, questions):
            fut = be.submit(state, questions)
            res = fut.result(timeout=300)
            batch_sizes.append(fut.metrics.get("batch_requests", 0))
            return res

        try:
            for c in levels:
                batch_sizes.clear()
                res, rec = mixedlib.run_closed_loop(call, reqs, c, a.duration, a.count, rows)
                res["mean_requests_per_forward"] = round(sum(batch_sizes) / len(batch_sizes), 2) if batch_sizes else None
                out["concurrent"].append(res)
                allrec.extend(rec)
                print("run_laya_cuda: c=%d %s req/s, p50 %s ms, p99 %s ms, %d rejected" % (
                    c, res["throughput_rps"], res["latency_ok"].get("p50_ms"), res["latency_ok"].get("p99_ms"),
                    res["rejected"]), flush=True)
        finally:
            be.close()
        mixedlib.write_jsonl(os.path.join(a.out_dir, a.name + "-concurrent.jsonl.gz"), allrec)
    mixedlib.write_json(os.path.join(a.out_dir, a.name + ".json"), out)
    print("run_laya_cuda: wrote %s" % os.path.join(a.out_dir, a.name + ".json"))


if __name__ == "__main__":
    main()
