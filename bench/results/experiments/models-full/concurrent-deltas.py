#!/usr/bin/env python3
"""concurrent-deltas.py RUNS_DIR NAME... - how far each concurrent answer that differs from its sequential one
(run_layad.py's NAME-concurrent.jsonl.gz against NAME-answers.jsonl) lies from it: the largest difference of any
number in the body, how many numbers differ by each amount, and how many strings (chosen labels, the model's
name) differ. Batched rows land in other buckets than a request alone, whose GEMMs round differently."""
import gzip
import json
import sys


def leaves(o, path=""):
    if isinstance(o, dict):
        for k, v in o.items():
            yield from leaves(v, path + "/" + k)
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from leaves(v, "%s/%d" % (path, i))
    else:
        yield path, o


def deltas(d, name):
    seq = [json.loads(line) for line in open("%s/%s-answers.jsonl" % (d, name))]
    n = worst = other = 0
    top, hist = None, {}
    for line in gzip.open("%s/%s-concurrent.jsonl.gz" % (d, name)):
        r = json.loads(line)
        if r.get("body") is None:
            continue
        n += 1
        a, b = dict(leaves(seq[r["i"]]["body"])), dict(leaves(json.loads(r["body"])))
        if a.keys() != b.keys():
            other += 1
            continue
        for k, v in a.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                other += v != b[k]
                continue
            diff = round(abs(v - b[k]), 4)
            if diff:
                hist[diff] = hist.get(diff, 0) + 1
            if diff > worst:
                worst, top = diff, (r["i"], k, v, b[k])
    return {"name": name, "differing_bodies": n, "max_abs_delta": worst, "at": top, "strings_or_keys_differing": other,
            "numbers_by_delta": dict(sorted(hist.items())[:8])}


if __name__ == "__main__":
    for name in sys.argv[2:]:
        print(json.dumps(deltas(sys.argv[1], name)))
