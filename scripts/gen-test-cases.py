#!/usr/bin/env python3
"""gen-test-cases.py - expected values for tests/test_pyjson.c, test_answers.c and test_prompt.c,
computed by Python itself and by the official `laya` package (its own functions, not a copy).

  LAYAD_VENV=/work/venv scripts/gen-test-cases.py [--tiny build/tiny] [--out tests/fixtures/pycases.json]

Run through scripts/parity's virtualenv; the output is committed so CI needs no PyPI.
"""
import argparse
import json
import math
import random
import struct
import sys


def f64_bits(x):
    return "%016x" % struct.unpack("<Q", struct.pack("<d", x))[0]


def f32_bits(x):
    return "%08x" % struct.unpack("<I", struct.pack("<f", x))[0]


def repr_cases(rng):
    vals = [0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 1e-05, 1.5e-05, 0.0001, 0.00012, 1e16, 1e15, 123456789012345.6,
            9999999999999998.0, 1e22, 1e-7, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 3.141592653589793,
            100000.0, 1234.5, 0.30000000000000004, 2.675, 1e100, 123e-20, float("inf"), float("-inf")]
    for _ in range(400):
        e = rng.randint(-30, 30)
        vals.append(rng.random() * 10 ** e * rng.choice([1, -1]))
    for _ in range(200):
        vals.append(float(struct.unpack("<f", struct.pack("<f", rng.random()))[0]))
    return [[f64_bits(v), repr(v)] for v in vals]


def round_cases(rng):
    vals = [0.03125, 0.00005, 0.00015, 0.5, 0.99995, 0.12345, 2.675, 1.00005, 0.0, 1.0, 0.9999499999999999,
            -0.00001, 254.99995]
    for _ in range(500):
        vals.append(float(struct.unpack("<f", struct.pack("<f", rng.random()))[0]))
    for _ in range(200):
        vals.append(rng.random() * 300)
    for _ in range(100):  # exact ties at the 5th decimal
        vals.append(rng.randint(0, 99999) / 100000.0 + 0.000005 * rng.choice([0, 1]))
    return [[f64_bits(v), f64_bits(round(v, 4))] for v in vals]


def dumps_cases():
    texts = [
        '{"a": 1, "b": [1, 2.5, "x"], "c": {"d": null, "e": true, "f": false}}',
        '[1e-05, 1e16, 1E400, -1e999, NaN, Infinity, -Infinity, -0.0, -0, 0.1, 100000.0, 1.0, 5e-324]',
        '{"big": 123456789012345678901234567890, "neg": -42, "zero": 0}',
        '"caf\\u00e9 \\u65e5\\u672c \\ud83d\\ude80 \\u0000\\u0001\\u001f\\u007f \\u2028 \\"q\\" \\\\ \\/ \\b\\f\\n\\r\\t"',
        '{"\\u00e9": {"\\n": []}, "": {}, "dup": 1, "x": 2, "dup": 3}',
        '[[], {}, [[]], "", " "]',
        '{"nested": {"deep": {"deeper": [1, {"k": "v"}]}}}',
        '  [ 1 , 2 ]  ',
        '"\\uD834\\uDD1E"',
        '12', '-3.5', 'true', 'null', '"plain"',
    ]
    out = []
    for t in texts:
        v = json.loads(t)
        s = str(v) if not isinstance(v, (dict, list)) else None
        out.append({"text": t, "dumps": json.dumps(v, ensure_ascii=False), "str": s})
    return out


def bad_json_cases():
    return ['', '{', '{"a" 1}', '[1,]', '{"a": 1,}', '01', '1.', '.5', '+1', 'nul', '"\\x"', '"\\ud800"',
            '"\\udc00x"', '"a\nb"', '[1] 2', "{'a': 1}", 'NaNx', '[-]', '{"a": 1}}', '"\\u12"']


def answers_cases(rng):
    import numpy as np
    from laya.common import answer_confidence, confidence_from_probs, temp_bucket, clamp_temperature
    import torch
    cases = []
    temps = [1.9063563346862793, 1.7601518630981445, 1.0000158548355103, 0.5, 1.2514300346374512,
             1.983399510383606, 1.6369030475616455, 1.0, 5.0]
    ks = [1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 15, 16, 17, 31, 64, 100, 127, 128, 129, 200, 255, 256, 300]
    for i in range(300):
        k = ks[i % len(ks)]
        scale = rng.choice([0.1, 1.0, 3.0, 10.0, 40.0])
        lg = np.array([rng.gauss(0, 1) * scale for _ in range(k)], dtype=np.float32)
        if rng.random() < 0.1 and k > 1:
            lg[1] = lg[0]  # ties: argmax takes the first
        t = rng.choice(temps)
        order = None
        if rng.random() < 0.15 and k > 1:
            order = list(range(k))
            rng.shuffle(order)
        # exactly the package's _decode_answers arithmetic
        z = lg / t
        p = np.exp(z - z.max())
        p /= p.sum()
        from laya.common import unpermute_probs
        p = unpermute_probs(p, order)
        act = torch.tensor([[rng.gauss(0, 1) * rng.choice([0.5, 3, 20]), rng.gauss(0, 1) * 3]], dtype=torch.float32)
        ap = torch.softmax(act.float(), -1).numpy()
        cases.append({
            "logits": [f32_bits(float(x)) for x in lg], "temperature": f64_bits(t), "order": order,
            "probs": [f32_bits(float(x)) for x in p],
            "entropy_confidence": f64_bits(confidence_from_probs(p, k)),
            "answer_confidence": f64_bits(answer_confidence(p, k)),
            "score": f64_bits(round(float((np.arange(k) * p).sum()), 4)),
            "act": [f32_bits(float(x)) for x in act[0]], "act_probability": f32_bits(float(ap[0, 0])),
            "argmax": int(p.argmax())})
    return cases


def prompt_cases(tiny):
    """Rows from the package's own build_sequence on the tiny checkpoint's tokenizer."""
    from transformers import AutoTokenizer
    import laya.agent as agent_mod
    from laya.common import build_sequence
    from laya.agent import Agent
    tok = agent_mod._load_tokenizer(tiny + "/tokenizer", json.load(open(tiny + "/rl_agent_config.json")))
    base = {"type": "choice", "instructions": "Which team handles this [MASK] request?",
            "criteria": {"billing": "refund [MASK] invoices", "technical": None, "sales": ""}}
    many = {"type": "choice", "instructions": "pick one of many options please",
            "criteria": ["option number %d with a long shared description of the refund" % i for i in range(40)]}
    long_opt = {"type": "score", "instructions": "how urgent",
                "criteria": [" ".join(["urgent refund"] * 40), "calm", {"k": [1, 2.5]}]}
    noul = {"type": "noul", "instructions": ["list", "instructions"], "labels": {"false": " no ", "true": "yes"},
            "criteria": {"TRUE": 0, "false": False}}
    long_state = " ".join(["the customer wants a refund for the invoice today"] * 80)
    turns = [{"role": "user", "content": "message %d about billing refund" % i} for i in range(60)]
    cases = []
    for qdef, st, ml, hml in [
            (base, "hello please refund [MASK] me", 512, 128),
            (base, long_state, 512, 128), (base, turns, 512, 128), (base, turns, 64, 128),
            (base, long_state, 40, 20), (many, "short state", 512, 128), (many, "short", 512, 40),
            (many, "short", 1024, 128), (long_opt, {"a": 1e-05, "b": [True, None]}, 512, 128),
            (long_opt, "x", 512, 30), (noul, "is it urgent", 512, 128), (noul, "x", 512, 10),
            (base, "", 16, 8), (many, "x", 100, 128)]:
        Agent._check_question("q", qdef)
        q = Agent._to_internal(qdef)
        truncate_left = isinstance(st, list)
        rec = {"question": qdef, "state": st, "max_len": ml, "head_max_len": hml}
        seq, markers, stats, tstats = build_sequence(tok, st, q, ml, hml, truncate_left=truncate_left,
                                                     return_stats=True, return_truncation_stats=True)
        rec.update({"ids": seq, "markers": markers, "distinct": stats["options_distinct"],
                    "tokens_per_option": stats["tokens_per_option"], "state_tokens": tstats["state_tokens"],
                    "state_tokens_used": tstats["state_tokens_used"],
                    "error": len(markers) != stats["options"]})
        cases.append(rec)
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiny", default="build/tiny")
    ap.add_argument("--out", default="tests/fixtures/pycases.json")
    a = ap.parse_args()
    rng = random.Random(4242)
    data = {"repr": repr_cases(rng), "round4": round_cases(rng), "dumps": dumps_cases(),
            "bad_json": bad_json_cases(), "answers": answers_cases(rng), "prompt": prompt_cases(a.tiny)}
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, allow_nan=True)
        f.write("\n")
    print("wrote %s: %s" % (a.out, {k: len(v) for k, v in data.items()}))


if __name__ == "__main__":
    sys.exit(main())
