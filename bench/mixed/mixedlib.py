"""mixedlib.py - what the mixed-traffic runners share: the request set, latency figures, the run's
provenance (command, commit, machine, input hash), and the answers files.

Standard library only, so the runners work with any python3 (the GPU machine's included).

Answers file (one per system, `<system>-answers.jsonl`): one line per request of the set, in its
order, `{"i": index, "ok": bool, "status": HTTP status or null, "ms": wall time, "error": text or
null, "body": the response object or null}`. compare.py reads these, whatever produced them.
"""
import gzip
import hashlib
import json
import os
import platform
import re
import socket
import subprocess
import sys
import threading
import time


def load_requests(path, limit=None):
    """(bodies, sha256 of the whole file, path): the request set, one JSON body per line."""
    with open(path, "rb") as f:
        data = f.read()
    bodies = [json.loads(line) for line in data.splitlines() if line.strip()]
    if limit:
        bodies = bodies[:limit]
    return bodies, hashlib.sha256(data).hexdigest()


def percentile(sorted_ms, q):
    """Linear interpolation between closest ranks (numpy's default), q in [0, 100]."""
    if not sorted_ms:
        return None
    k = (len(sorted_ms) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(sorted_ms) - 1)
    return sorted_ms[lo] + (sorted_ms[hi] - sorted_ms[lo]) * (k - lo)


def latency(ms):
    """p50/p95/p99/max/mean of a list of milliseconds, rounded to microseconds."""
    s = sorted(ms)
    if not s:
        return {"n": 0}
    r = lambda x: round(x, 3)
    return {"n": len(s), "p50_ms": r(percentile(s, 50)), "p95_ms": r(percentile(s, 95)),
            "p99_ms": r(percentile(s, 99)), "max_ms": r(s[-1]), "min_ms": r(s[0]),
            "mean_ms": r(sum(s) / len(s))}


def git_commit(explicit=None):
    """The commit the run measures: --commit, else $LAYAD_COMMIT, else .carry/commit, else git."""
    if explicit:
        return explicit
    if os.environ.get("LAYAD_COMMIT"):
        return os.environ["LAYAD_COMMIT"]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        with open(os.path.join(root, ".carry", "commit")) as f:
            return f.read().strip()
    except OSError:
        pass
    try:
        c = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True, timeout=10)
        if c.returncode == 0:
            dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=20).stdout.strip()
            return c.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def _run(cmd):
    try:
        c = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        return c.stdout.strip() if c.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def machine():
    """Hostname, OS, CPUs, Python, and the GPUs as nvidia-smi lists them (absent: null)."""
    smi = _run(["nvidia-smi", "-L"])
    snap = _run(["nvidia-smi", "--query-gpu=index,name,driver_version,pstate,utilization.gpu,memory.used,"
                 "memory.total,temperature.gpu,power.draw,clocks.sm,clocks.mem", "--format=csv,noheader"])
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), None)
    except OSError:
        pass
    return {"hostname": socket.gethostname(), "platform": platform.platform(), "cpu": cpu,
            "cpu_count": os.cpu_count(), "python": sys.version.split()[0],
            "nvidia_smi_L": smi.splitlines() if smi else None,
            "nvidia_smi": snap.splitlines() if snap else None}


def provenance(requests_path, sha, n, commit=None):
    return {"command": " ".join([os.path.basename(sys.executable)] + sys.argv),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "git_commit": git_commit(commit), "machine": machine(),
            "input": {"path": requests_path, "sha256": sha, "requests": n}}


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


def read_json(path):
    """The JSON document at path, or None when it is missing or not JSON (a system that did not run)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_jsonl(path, rows):
    """Rows as JSON lines; gzip-compressed when the path ends in .gz."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")


def read_jsonl(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def answer_row(i, ok, ms, body=None, status=None, error=None):
    return {"i": i, "ok": ok, "status": status, "ms": round(ms, 3), "error": error, "body": body}


def counts(values):
    out = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return dict(sorted(out.items()))


def parse_levels(text):
    levels = [int(x) for x in text.split(",") if x.strip()]
    if not levels or any(c < 1 or c > 256 for c in levels):
        raise ValueError("concurrency levels must be 1..256")
    return levels


# --- in-process systems (laya-cuda, the official package): one call per request ---

def _error_text(e):
    return "%s: %s" % (type(e).__name__, str(e)[:200])


def error_kind(text):
    """An error text with quoted names and numbers blanked, so that refusals group by reason."""
    return re.sub(r"\d+", "N", re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text))


def _canon(obj):
    return json.dumps(obj, ensure_ascii=False, sort_keys=False, separators=(",", ":"))


def run_sequential(predict, bodies, budget_s=900, metrics=None):
    """Every request once, in order, from the first: predict(state, questions) -> response dict.

    An exception is a rejected request (its text is kept). metrics(), when given, is called after
    each request and its dict stored with it (e.g. laya-cuda's shape class and graph capture).
    Returns (summary, rows in the answers-file format)."""
    rows, t_start = [], time.monotonic()
    for i, body in enumerate(bodies):
        if time.monotonic() - t_start > budget_s:
            break
        t0 = time.perf_counter()
        try:
            res, err = predict(body["state"], body["questions"]), None
        except Exception as e:  # noqa: BLE001 - a refusal of any kind is what is counted
            res, err = None, _error_text(e)
        ms = (time.perf_counter() - t0) * 1000
        row = answer_row(i, err is None, ms, res, None, err)
        if metrics is not None and err is None:  # a refusal leaves the previous call's metrics
            try:
                row["metrics"] = metrics()
            except Exception:  # noqa: BLE001
                pass
        rows.append(row)
    ok = [r["ms"] for r in rows if r["ok"]]
    return {"requests_sent": len(rows), "complete": len(rows) == len(bodies),
            "wall_s": round(time.monotonic() - t_start, 3),
            "answered": len(ok), "rejected": len(rows) - len(ok),
            "rejections": counts(error_kind(r["error"]) for r in rows if not r["ok"]),
            "latency_ok": latency(ok), "latency_all": latency([r["ms"] for r in rows]),
            "first_request_ms": rows[0]["ms"] if rows else None}, rows


def run_closed_loop(call, bodies, level, duration, count, seq_rows, timeout=120):
    """`level` client threads in a closed loop over the set (cycling) for `duration` seconds, or
    `count` requests in all when count > 0. call(state, questions) blocks until the answer (or
    raises: a rejection). Each answer is compared with the sequential answer to the same request.
    Returns (summary, records)."""
    lock, state = threading.Lock(), {"k": 0}
    records = []
    seq = {r["i"]: _canon(r["body"]) for r in seq_rows if r["ok"]}
    start_at = time.monotonic() + 0.2
    deadline = start_at + duration

    def client():
        local = []
        time.sleep(max(0.0, start_at - time.monotonic()))
        while True:
            if not count and time.monotonic() >= deadline:
                break
            with lock:
                k = state["k"]
                if count and k >= count:
                    break
                state["k"] = k + 1
            i = k % len(bodies)
            t_send = time.monotonic()
            t0 = time.perf_counter()
            try:
                res, err = call(bodies[i]["state"], bodies[i]["questions"]), None
            except Exception as e:  # noqa: BLE001
                res, err = None, _error_text(e)
            ms = (time.perf_counter() - t0) * 1000
            same = err is None and seq.get(i) == _canon(res)
            local.append({"c": level, "i": i, "ok": err is None, "ms": round(ms, 3), "t_send": t_send,
                          "t_done": time.monotonic(), "same_as_sequential": same,
                          "body": None if same else res, "error": err})
        with lock:
            records.extend(local)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(level)]
    for t in threads:
        t.start()
    limit = time.monotonic() + duration + timeout + 60 if not count else None
    for t in threads:
        t.join(None if limit is None else max(0.1, limit - time.monotonic()))
    hung = sum(1 for t in threads if t.is_alive())
    with lock:
        recs = list(records)
    ok = [r for r in recs if r["ok"]]
    span = (max(r["t_done"] for r in recs) - min(r["t_send"] for r in recs)) if recs else 0
    for r in recs:
        del r["t_send"], r["t_done"]
    return {"concurrency": level, "requests": len(recs), "span_s": round(span, 3),
            "throughput_rps": round(len(ok) / span, 1) if span > 0 else None,
            "answered": len(ok), "rejected": len(recs) - len(ok),
            "rejections": counts(error_kind(r["error"]) for r in recs if not r["ok"]),
            "latency_ok": latency([r["ms"] for r in ok]),
            "differs_from_sequential": sum(1 for r in ok if r["i"] in seq and not r["same_as_sequential"]),
            "compared_with_sequential": sum(1 for r in ok if r["i"] in seq),
            "clients_still_running_at_timeout": hung}, recs
