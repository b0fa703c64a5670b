#!/usr/bin/env python3
"""gen_requests.py - a seeded set of varied /v1/systemone request bodies (mixed traffic).

The mix of varied real traffic: every request a new combination of 0-6 questions (choice, score,
noul), 1-60 options per choice question, and one state of 3 to 1,500 words, either a string or a
JSON object. Question shapes follow ../shared/docs/api.md and laya-model.md section 4.1: choice
criteria as a label -> description mapping (a description may be null or "") or a list of
labels; score criteria a list of level descriptions; noul criteria absent or a false/true
mapping, sometimes with `labels`. Labels are strings, so every request is valid for the official
package and for layad; a request without questions is valid too (empty answers, no forward).

Deterministic: only integer draws from random.Random(seed) (no libm floats), one fixed word list
embedded below, compact JSON with sorted-free insertion order. Same seed and count, same bytes,
same sha256, on any Python 3.

  gen_requests.py [--seed 20261202] [--n 300] [--out requests.jsonl]

Writes OUT (one request body per line) and OUT.meta.json (seed, n, sha256 of OUT, the mix's
statistics), and prints the sha256.
"""
import argparse
import hashlib
import json
import random
import sys

GENERATOR_VERSION = 1

# ~600 common English words (nouns, verbs, adjectives, function words), fixed forever: changing
# this list changes every generated set.
WORDS = """
the a an and or but if then because while when where which who what how why this that these those
is are was were be been being have has had do does did will would can could should may might must
i you he she it we they me him her us them my your his its our their mine yours not no yes very
really just also only still already again never always often sometimes usually today yesterday
tomorrow now later soon before after during since until about above across against along among
around at by for from in into near of off on onto out over through to toward under up upon with
within without account address agent amount answer app application area article bank bill billing
board body book box branch budget bug build business button call card care case cash change charge
chat check city claim client code comment company complaint computer contract copy cost country
course credit customer data date day deadline delivery department design detail device discount
document door dollar email employee engine error event experience fee field file form friend fund
goal group guide hardware help home hour idea image invoice issue item job key language laptop
law letter level license limit line link list loan location lock login manager market meeting
member message method minute mistake model money month name network night note notice number offer
office order owner package page partner password payment people period person phone photo plan
platform point policy price printer problem process product profile program project purchase
question rate reason receipt record refund region release report request result review risk room
route rule sale schedule school screen season second security server service session setting
shipment shop side site size software solution space staff stage state status step store story
subscription supplier support system table task team term test text thing ticket time title tool
total track training transfer travel trial type update upgrade user value vendor version video
view wallet warehouse warranty website week window word work year accept add allow answer apply
arrive ask assign become begin believe borrow break bring buy cancel carry catch choose close come
complete confirm connect consider contact continue create cut decide deliver depend describe
destroy develop disable download drop enable end enter escalate expect explain fail feel fill find
finish fix follow forget get give go grow happen hear hold hope include increase keep know learn
leave let like listen live look lose make mean meet miss move need notice open pay pick plan play
prefer prepare print provide pull push put reach read receive recommend refuse remember remove
repeat replace reply report require reset resolve restart return run save say see seem sell send
set share ship show sign start stay stop submit suggest switch take talk tell thank think try turn
understand unlock use verify wait want watch work worry write able active angry annual available
bad basic better big broken busy calm careful certain cheap clear closed common complete correct
critical current damaged dark dead different difficult direct double early easy empty entire
expensive extra fair false fast final fine first free frequent friendly full good great happy
hard heavy helpful high important impossible incorrect late legal light local long low main major
manual minor missing modern monthly new next normal old open original other overdue own patient
pending personal polite poor possible previous private quick quiet ready real recent regular
remote safe same secure serious short simple slow small special stable strange strong sudden
sure technical temporary terrible tired total true unable unclear unhappy unknown upset urgent
useful valid weekly whole wrong young billing shipping refunds outage invoices duplicate premium
standard enterprise mobile desktop browser firmware battery screen keyboard camera speaker
""".split()

SUBJECT_HEADS = ["Question about", "Problem with", "Update on", "Request for", "Follow up on",
                 "Issue with", "Help with", "Feedback on", "Complaint about", "Note on"]
QID_STEMS = ["department", "urgency", "sentiment", "topic", "intent", "priority", "escalate",
             "refund", "language", "product", "severity", "channel", "risk", "tone", "category",
             "resolved", "next_step", "owner", "churn", "spam"]
TIERS = ["free", "basic", "pro", "business", "enterprise"]
CHANNELS = ["email", "chat", "phone", "web form", "social"]
NOUL_LABELS = [{"false": "no", "true": "yes"}, {"false": "B", "true": "A"},
               {"false": "does not apply", "true": "applies"}]

# State length buckets (words, inclusive) and their weights: integers only, so the draw is the
# same on every platform. Many short states, a long tail up to 1,500 words.
STATE_BUCKETS = [((3, 10), 15), ((11, 40), 25), ((41, 120), 25), ((121, 400), 20), ((401, 1500), 15)]


def weighted(rng, pairs):
    total = sum(w for _, w in pairs)
    r = rng.randrange(total)
    for value, w in pairs:
        if r < w:
            return value
        r -= w
    raise AssertionError


def phrase(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def sentence(rng, n, end="."):
    s = phrase(rng, n)
    return s[:1].upper() + s[1:] + end


def text(rng, n_words):
    """n_words words in sentences of 4-18 words, with an occasional number or amount."""
    out, left = [], n_words
    while left > 0:
        k = min(left, rng.randint(4, 18))
        words = [rng.choice(WORDS) for _ in range(k)]
        if k > 5 and rng.randrange(6) == 0:
            words[rng.randrange(1, k)] = rng.choice(["#%d" % rng.randint(1000, 99999),
                                                     "$%d.%02d" % (rng.randint(1, 999), rng.randrange(100)),
                                                     "%d" % rng.randint(2, 60)])
        s = " ".join(words)
        out.append(s[:1].upper() + s[1:] + rng.choice([".", ".", ".", "?", "!"]))
        left -= k
    return " ".join(out)


def state(rng, n_words, kind):
    if kind == "str":
        return text(rng, n_words)
    subject_words = min(n_words, rng.randint(2, 8))
    body_words = n_words - subject_words
    d = {"subject": rng.choice(SUBJECT_HEADS) + " " + phrase(rng, subject_words)}
    if body_words > 0:
        d["body"] = text(rng, body_words)
    if rng.randrange(2):
        d["customer"] = {"id": rng.randint(10000, 9999999), "tier": rng.choice(TIERS),
                         "since": rng.randint(2009, 2026)}
    if rng.randrange(2):
        d["channel"] = rng.choice(CHANNELS)
    if rng.randrange(3) == 0:
        d["amount"] = rng.randint(100, 500000) / 100  # exact IEEE division: same repr everywhere
    if rng.randrange(4) == 0:
        d["open_tickets"] = rng.randint(0, 12)
    return d


def labels(rng, n):
    """n distinct option labels: single words, snake_case pairs or short phrases."""
    out, seen = [], set()
    style = rng.randrange(3)
    while len(out) < n:
        if style == 0 and n <= 40:
            lab = rng.choice(WORDS)
        elif style == 1 or style == 0:
            lab = rng.choice(WORDS) + "_" + rng.choice(WORDS)
        else:
            lab = phrase(rng, rng.randint(1, 4)).capitalize()
        if lab not in seen:
            seen.add(lab)
            out.append(lab)
    return out


def description(rng):
    r = rng.randrange(20)
    if r == 0:
        return None
    if r == 1:
        return ""
    return phrase(rng, rng.randint(2, 12))


def choice_q(rng):
    r = rng.randrange(100)
    n = 1 if r < 5 else rng.randint(2, 5) if r < 50 else rng.randint(6, 10) if r < 70 else rng.randint(11, 60)
    labs = labels(rng, n)
    crit = {lab: description(rng) for lab in labs} if rng.randrange(5) < 3 else labs
    return {"type": "choice", "instructions": sentence(rng, rng.randint(4, 16), "?"), "criteria": crit}


def score_q(rng):
    n = rng.randint(3, 5) if rng.randrange(5) < 3 else rng.randint(2, 10)
    return {"type": "score", "instructions": sentence(rng, rng.randint(4, 14), "?"),
            "criteria": [phrase(rng, rng.randint(1, 6)) for _ in range(n)]}


def noul_q(rng):
    q = {"type": "noul", "instructions": sentence(rng, rng.randint(4, 14))}
    r = rng.randrange(10)
    if r < 4:
        q["criteria"] = {"true": phrase(rng, rng.randint(2, 8)), "false": phrase(rng, rng.randint(2, 8))}
    elif r < 6:
        q["criteria"] = {rng.choice(["true", "false"]): phrase(rng, rng.randint(2, 8))}
    if rng.randrange(10) == 0:
        q["labels"] = dict(rng.choice(NOUL_LABELS))
    return q


def request(rng):
    n_q = rng.randint(0, 6)
    (lo, hi) = weighted(rng, STATE_BUCKETS)
    n_words = rng.randint(lo, hi)
    kind = "str" if rng.randrange(10) < 7 else "dict"
    body = {"state": state(rng, n_words, kind), "questions": {}}
    stems = rng.sample(QID_STEMS, n_q)
    for j, stem in enumerate(stems):
        make = weighted(rng, [(choice_q, 50), (score_q, 25), (noul_q, 25)])
        body["questions"]["%s_%d" % (stem, j)] = make(rng)
    return body, n_words, kind


def signature(body, n_words, kind):
    """What makes a request a new combination: state kind and length, and the question shapes."""
    qs = tuple((q["type"], len(q.get("criteria") or ())) for q in body["questions"].values())
    return kind, n_words, qs


def generate(seed, n):
    rng = random.Random(seed)
    seen, out, stats = set(), [], {"questions": {}, "types": {}, "choice_options": [], "state_words": [],
                                   "state_kinds": {}, "retries": 0}
    while len(out) < n:
        body, n_words, kind = request(rng)
        sig = signature(body, n_words, kind)
        if sig in seen:
            stats["retries"] += 1
            continue
        seen.add(sig)
        out.append(body)
        nq = len(body["questions"])
        stats["questions"][str(nq)] = stats["questions"].get(str(nq), 0) + 1
        stats["state_words"].append(n_words)
        stats["state_kinds"][kind] = stats["state_kinds"].get(kind, 0) + 1
        for q in body["questions"].values():
            stats["types"][q["type"]] = stats["types"].get(q["type"], 0) + 1
            if q["type"] == "choice":
                stats["choice_options"].append(len(q["criteria"]))
    return out, stats


def summary(stats):
    w, o = sorted(stats["state_words"]), sorted(stats["choice_options"])
    return {"questions_per_request": dict(sorted(stats["questions"].items())),
            "question_types": stats["types"],
            "choice_options": {"min": o[0], "median": o[len(o) // 2], "max": o[-1],
                               "over_10": sum(1 for x in o if x > 10)} if o else None,
            "state_words": {"min": w[0], "median": w[len(w) // 2], "max": w[-1]},
            "state_kinds": stats["state_kinds"], "duplicate_draws_skipped": stats["retries"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--out", default="requests.jsonl")
    a = ap.parse_args()
    if not 1 <= a.n <= 100000:
        sys.exit("gen_requests: --n must be 1..100000")
    bodies, stats = generate(a.seed, a.n)
    data = "".join(json.dumps(b, ensure_ascii=False, separators=(",", ":")) + "\n" for b in bodies).encode()
    with open(a.out, "wb") as f:
        f.write(data)
    sha = hashlib.sha256(data).hexdigest()
    meta = {"generator": "bench/mixed/gen_requests.py", "generator_version": GENERATOR_VERSION,
            "seed": a.seed, "n": a.n, "file": a.out, "bytes": len(data), "sha256": sha,
            "mix": summary(stats)}
    with open(a.out + ".meta.json", "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print("gen_requests: %d requests, seed %d -> %s (%d bytes) sha256 %s" % (a.n, a.seed, a.out, len(data), sha))


if __name__ == "__main__":
    main()
