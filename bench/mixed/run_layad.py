#!/usr/bin/env python3
"""run_layad.py - a running (or launched) layad, driven over HTTP on loopback with the mixed set.

Two measurements, in this order, on the same daemon:

  sequential   from the first request after /readyz answers 200, every request of the set once,
               one after another on one keep-alive connection: per-request wall time (send to
               last body byte), p50/p95/p99/max; every response saved.
  concurrent   closed loop at each concurrency level (default 1, 8, 64): that many clients, each
               on its own keep-alive connection, send the set's requests in turn (cycling) for
               --duration seconds (or --count requests) and send the next as soon as the previous
               answers. Requests/s = answered / (last answer - first send); p50/p99 over the
               2xx answers; status counts; each body compared with the sequential answer to the
               same request (byte-identical or not: batching with others may change low bits).

Clients are spread over a few worker processes (--procs) so that Python's GIL does not cap the
request rate; each process runs its share of clients as threads (http.client, blocking).

  run_layad.py --requests requests.jsonl --port 8080 --out-dir DIR
  run_layad.py --requests requests.jsonl --port 18321 --out-dir DIR \\
      --launch "build/layad serve --model build/tiny --device cpu --port 18321"

--launch starts the daemon itself (no shell; its output goes to DIR/layad-serve.log), measures the
time until /readyz is 200, and stops it with SIGTERM at the end. Only loopback addresses are
accepted. Writes DIR/NAME.json (figures and provenance), DIR/NAME-answers.jsonl (the sequential
responses, mixedlib.py's answers format), DIR/NAME-concurrent.jsonl.gz (every concurrent response:
level, index, status, ms, and the body where it differs from the sequential one) and
DIR/NAME-metrics.txt (/metrics at the end).
"""
import argparse
import http.client
import ipaddress
import json
import multiprocessing
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mixedlib  # noqa: E402

MAX_DURATION_S = 300
MAX_COUNT = 500000
HEADERS = {"Content-Type": "application/json", "Connection": "keep-alive"}


def loopback_only(host):
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror as e:
        sys.exit("run_layad: cannot resolve %s: %s" % (host, e))
    for info in infos:
        if not ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback:
            sys.exit("run_layad: %s is not a loopback address; this benchmark talks to loopback only" % host)


def get(host, port, path, timeout=5):
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def server_timing(value):
    """'queue;dur=0.12, infer;dur=3.4' -> {'queue': 0.12, 'infer': 3.4} (ms)."""
    out = {}
    for part in (value or "").split(","):
        name, _, rest = part.strip().partition(";")
        if rest.startswith("dur="):
            try:
                out[name] = float(rest[4:])
            except ValueError:
                pass
    return out


class Client:
    """One keep-alive connection; post() returns (status or None, body bytes, headers, error)."""

    def __init__(self, host, port, endpoint, timeout):
        self.host, self.port, self.endpoint, self.timeout = host, port, endpoint, timeout
        self.conn, self.reconnects = None, 0

    def post(self, body):
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
                self.reconnects += 1
            reused = attempt == 0 and self.conn.sock is not None
            try:
                self.conn.request("POST", self.endpoint, body, HEADERS)
                r = self.conn.getresponse()
                data = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    self.close()
                return r.status, data, r, None
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                self.close()
                if not reused:  # a fresh connection failed: not a keep-alive race, report it
                    return None, b"", None, "%s: %s" % (type(e).__name__, e)
            except (OSError, http.client.HTTPException) as e:
                self.close()
                return None, b"", None, "%s: %s" % (type(e).__name__, e)
        return None, b"", None, "connection closed twice"

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def wait_ready(host, port, timeout_s, proc=None):
    """Seconds until GET /readyz answers 200 (polled every 20 ms); exits on timeout or daemon death."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if proc is not None and proc.poll() is not None:
            sys.exit("run_layad: the launched daemon exited with %s before it was ready" % proc.returncode)
        try:
            status, _ = get(host, port, "/readyz", timeout=2)
            if status == 200:
                return time.monotonic() - t0
        except OSError:
            pass
        time.sleep(0.02)
    sys.exit("run_layad: /readyz not 200 after %.0f s" % timeout_s)


def device_counters(a):
    """The workers' counters summed over devices (/health), or None when unavailable."""
    try:
        h = json.loads(get(a.host, a.port, "/health")[1])
        keys = ("forwards", "rows", "tokens", "busy_seconds")
        return {k: sum(d.get(k, 0) for d in h.get("devices", [])) for k in keys}
    except (OSError, ValueError, AttributeError):
        return None


def device_delta(before, after, span_s):
    """What the devices did during one level: forwards, real tokens, and the share of the
    level's span they spent in forwards (busy_fraction near 1: the GPU, not the clients or
    the server, bounds the throughput)."""
    if before is None or after is None or not span_s:
        return None
    d = {k: after[k] - before[k] for k in before}
    f = d["forwards"]
    return {"forwards": f, "rows": d["rows"], "tokens": d["tokens"],
            "busy_s": round(d["busy_seconds"], 3), "busy_fraction": round(d["busy_seconds"] / span_s, 3),
            "tokens_per_s": round(d["tokens"] / span_s), "tokens_per_forward": round(d["tokens"] / f, 1) if f else None,
            "ms_per_forward": round(1000 * d["busy_seconds"] / f, 3) if f else None}


def decode(data):
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return data.decode("utf-8", "replace")


def sequential(a, bodies, budget_s):
    cl = Client(a.host, a.port, a.endpoint, a.timeout)
    rows, raw, ms_ok, timing = [], [], [], {"queue": [], "infer": []}
    t_start = time.monotonic()
    for i, body in enumerate(bodies):
        if time.monotonic() - t_start > budget_s:
            break
        t0 = time.perf_counter()
        status, data, resp, err = cl.post(body)
        ms = (time.perf_counter() - t0) * 1000
        raw.append(data if status is not None else None)
        ok = status == 200
        rows.append(mixedlib.answer_row(i, ok, ms, decode(data) if status is not None else None, status, err))
        if ok:
            ms_ok.append(ms)
            st = server_timing(resp.getheader("Server-Timing"))
            rows[-1]["server_timing_ms"] = st  # each answer's own stages: which side a slow one was slow on
            for k in timing:
                if k in st:
                    timing[k].append(st[k])
    cl.close()
    wall = time.monotonic() - t_start
    res = {"requests_sent": len(rows), "complete": len(rows) == len(bodies), "wall_s": round(wall, 3),
           "status": mixedlib.counts(r["status"] if r["status"] is not None else "error" for r in rows),
           "latency_ok": mixedlib.latency(ms_ok),
           "latency_all": mixedlib.latency([r["ms"] for r in rows]),
           "first_request_ms": rows[0]["ms"] if rows else None,
           "server_timing_ms": {k: mixedlib.latency(v) for k, v in timing.items() if v},
           "reconnects": cl.reconnects - 1}
    return res, rows, raw


# --- concurrent closed loop: module globals are inherited by the forked worker processes ---
_BODIES, _SEQ_RAW = [], []


def _worker(a, nthreads, start_at, deadline, count, counter, level, q):
    out, lock = [], threading.Lock()

    def client():
        cl, local = Client(a.host, a.port, a.endpoint, a.timeout), []
        time.sleep(max(0.0, start_at - time.monotonic()))
        while True:
            if not count and time.monotonic() >= deadline:
                break
            with counter.get_lock():
                k = counter.value
                if count and k >= count:
                    break
                counter.value = k + 1
            i = k % len(_BODIES)
            t_send = time.monotonic()
            t0 = time.perf_counter()
            status, data, _, err = cl.post(_BODIES[i])
            ms = (time.perf_counter() - t0) * 1000
            seq = _SEQ_RAW[i] if i < len(_SEQ_RAW) else None
            same = status is not None and seq is not None and data == seq
            local.append({"c": level, "i": i, "status": status, "ms": round(ms, 3), "t_send": t_send,
                          "t_done": time.monotonic(), "same_as_sequential": same,
                          "body": None if same or status is None else data.decode("utf-8", "replace"),
                          "error": err})
        cl.close()
        with lock:
            out.extend(local)

    threads = [threading.Thread(target=client) for _ in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    q.put(out)


def concurrent(a, level, procs):
    ctx = multiprocessing.get_context("fork")
    counter, q = ctx.Value("q", 0), ctx.Queue()
    procs = max(1, min(procs, level))
    share = [level // procs + (1 if p < level % procs else 0) for p in range(procs)]
    start_at = time.monotonic() + 0.3 + 0.02 * procs
    deadline = start_at + a.duration
    workers = [ctx.Process(target=_worker, args=(a, n, start_at, deadline, a.count, counter, level, q))
               for n in share]
    for w in workers:
        w.start()
    records = []
    for _ in workers:  # read before join: a full pipe would block the child
        records.extend(q.get(timeout=a.duration + 4 * a.timeout + 120 if not a.count else None))
    for w in workers:
        w.join()
    ok = [r for r in records if r["status"] is not None and 200 <= r["status"] < 300]
    span = (max(r["t_done"] for r in records) - min(r["t_send"] for r in records)) if records else 0
    seq_ok = [r for r in ok if r["i"] < len(_SEQ_RAW) and _SEQ_RAW[r["i"]] is not None]
    res = {"concurrency": level, "procs": procs, "requests": len(records), "span_s": round(span, 3),
           "throughput_rps": round(len(ok) / span, 1) if span > 0 else None,
           "status": mixedlib.counts(r["status"] if r["status"] is not None else "error" for r in records),
           "latency_ok": mixedlib.latency([r["ms"] for r in ok]),
           "differs_from_sequential": sum(1 for r in seq_ok if not r["same_as_sequential"]),
           "compared_with_sequential": len(seq_ok)}
    for r in records:
        del r["t_send"], r["t_done"]
    return res, records


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--endpoint", default="/v1/systemone")
    ap.add_argument("--launch", help="daemon command to start (no shell), stopped with SIGTERM at the end")
    ap.add_argument("--ready-timeout", type=float, default=600)
    ap.add_argument("--timeout", type=float, default=60, help="per request, seconds")
    ap.add_argument("--concurrency", default="1,8,64")
    ap.add_argument("--duration", type=float, default=10, help="seconds per concurrency level")
    ap.add_argument("--count", type=int, default=0, help="requests per level instead of --duration")
    ap.add_argument("--procs", type=int, default=0, help="client processes per level (0: min(level, 4))")
    ap.add_argument("--limit", type=int, default=0, help="use only the first N requests of the set")
    ap.add_argument("--seq-budget", type=float, default=900, help="sequential phase cap, seconds")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--name", default="layad")
    ap.add_argument("--label", default="")
    ap.add_argument("--commit", help="commit measured (default: $LAYAD_COMMIT, .carry/commit, git)")
    a = ap.parse_args()
    levels = mixedlib.parse_levels(a.concurrency)
    if not 0 < a.duration <= MAX_DURATION_S or not 0 <= a.count <= MAX_COUNT:
        sys.exit("run_layad: --duration must be in (0, %d], --count in [0, %d]" % (MAX_DURATION_S, MAX_COUNT))
    loopback_only(a.host)
    # a timeout(1) or Ctrl-C still stops a launched daemon (the finally below)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("run_layad: terminated"))
    os.makedirs(a.out_dir, exist_ok=True)
    reqs, sha = mixedlib.load_requests(a.requests, a.limit)
    global _BODIES, _SEQ_RAW
    _BODIES = [json.dumps(b, ensure_ascii=False, separators=(",", ":")).encode() for b in reqs]
    out = {"system": "layad over HTTP (%s, loopback, Python http.client keep-alive)" % a.endpoint,
           "label": a.label}
    out.update(mixedlib.provenance(a.requests, sha, len(reqs), a.commit))

    proc, log = None, None
    if a.launch:
        log = open(os.path.join(a.out_dir, a.name + "-serve.log"), "wb")
        t0 = time.monotonic()
        proc = subprocess.Popen(shlex.split(a.launch), stdout=log, stderr=subprocess.STDOUT)
        out["launch"] = {"command": a.launch}
    try:
        ready_s = wait_ready(a.host, a.port, a.ready_timeout, proc)
        if proc is not None:
            out["launch"]["ready_s"] = round(time.monotonic() - t0, 3)
        out["ready_wait_s"] = round(ready_s, 3)
        print("run_layad: ready; sequential over %d requests" % len(_BODIES), flush=True)
        seq, rows, raw = sequential(a, _BODIES, a.seq_budget)
        _SEQ_RAW = raw
        out["sequential"] = seq
        mixedlib.write_jsonl(os.path.join(a.out_dir, a.name + "-answers.jsonl"), rows)
        print("run_layad: sequential %s" % json.dumps(seq["latency_ok"]), flush=True)
        try:
            out["health"] = decode(get(a.host, a.port, "/health")[1])
        except OSError as e:
            out["health"] = "unavailable: %s" % e
        out["concurrent"], allrec = [], []
        for c in levels:
            procs = a.procs or min(c, 4)
            before = device_counters(a)
            res, rec = concurrent(a, c, procs)
            res["device"] = device_delta(before, device_counters(a), res["span_s"])
            out["concurrent"].append(res)
            allrec.extend(rec)
            print("run_layad: c=%d %s req/s, p50 %s ms, p99 %s ms, status %s, device %s" % (
                c, res["throughput_rps"], res["latency_ok"].get("p50_ms"), res["latency_ok"].get("p99_ms"),
                res["status"], json.dumps(res["device"])), flush=True)
        mixedlib.write_jsonl(os.path.join(a.out_dir, a.name + "-concurrent.jsonl.gz"), allrec)
        try:
            status, metrics = get(a.host, a.port, "/metrics")
            with open(os.path.join(a.out_dir, a.name + "-metrics.txt"), "wb") as f:
                f.write(metrics)
        except OSError:
            pass
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                out.setdefault("launch", {})["exit"] = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                out.setdefault("launch", {})["exit"] = "killed after 60 s"
            log.close()
    mixedlib.write_json(os.path.join(a.out_dir, a.name + ".json"), out)
    print("run_layad: wrote %s" % os.path.join(a.out_dir, a.name + ".json"))


if __name__ == "__main__":
    main()
