#!/usr/bin/env python3
"""gen_fixed.py - the three fixed requests of the four-system comparison (bench/mixed/peers.sh),
each repeated: a short state with one 4-option choice question (77 input tokens with the
ModernBERT tokenizer), a long one with the same question (509 tokens), and a short state with
three questions, choice, score and noul (201 tokens in three rows).
They cycle short, long, three, short, ... so every system sees each kind after the others, as
mixed traffic would; per-kind figures come from the request's index (i % 3).

Text from gen_requests.py's word list and sentence maker with a fixed seed: same bytes on any
Python 3.

  gen_fixed.py --repeat 40 --out requests.jsonl     (also writes requests.jsonl.meta.json)
"""
import argparse
import hashlib
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_requests as g  # noqa: E402

KINDS = ("short_1q", "long_1q", "three_q")


def fixed(seed=20261203):
    rng = random.Random(seed)
    choice4 = {"type": "choice", "instructions": "Which team should handle this ticket?",
               "criteria": {"billing": "payments, refunds and invoices", "technical": "bugs and outages",
                            "sales": "quotes and upgrades", "other": None}}
    score5 = {"type": "score", "instructions": "How urgent is it?",
              "criteria": ["not urgent", "low", "medium", "high", "critical"]}
    noul = {"type": "noul", "instructions": "Does the customer ask for a refund?"}
    return [
        {"state": g.text(rng, 34), "questions": {"route": choice4}},
        {"state": g.text(rng, 412), "questions": {"route": choice4}},
        {"state": g.text(rng, 28), "questions": {"route": choice4, "urgency": score5, "refund": noul}},
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=40)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    bodies = fixed()
    lines = [json.dumps(bodies[i % 3], ensure_ascii=False) for i in range(3 * a.repeat)]
    data = ("\n".join(lines) + "\n").encode()
    with open(a.out, "wb") as f:
        f.write(data)
    meta = {"generator": "bench/mixed/gen_fixed.py", "repeat": a.repeat, "kinds": list(KINDS),
            "kind_of_request": "KINDS[i % 3]", "n": len(lines), "sha256": hashlib.sha256(data).hexdigest()}
    with open(a.out + ".meta.json", "w") as f:
        json.dump(meta, f, indent=1)
    print("gen_fixed: %d requests, sha256 %s" % (len(lines), meta["sha256"]))


if __name__ == "__main__":
    main()
