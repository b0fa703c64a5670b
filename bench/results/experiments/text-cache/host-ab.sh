#!/usr/bin/env bash
# bench/results/experiments/text-cache/host-ab.sh BEFORE AFTER MODEL OUTDIR - from the repository root: the
# host side of one decision (`layad-dev bench-request`: request_parse_in and request_format, no forward) for
# two layad-dev binaries on loadgen's q1_83tok body with a 50-word state (282 bytes, never a text-cache
# hit), before / after / before2 / after2, with the caches hot (--thrash-mb 0) and with 32 MB written
# between iterations (--thrash-mb 32) -> OUTDIR/bench-request-{before,after,before2,after2}-{hot,cold}.json;
# then each binary's instruction counts of the two functions under callgrind (1,000 iterations each)
# -> OUTDIR/callgrind.txt. The host changes' A/B ran it with 169a3d2 and the session's last commit
# (CPU-only builds, make NVCC= build/layad-dev) on the english-large checkpoint (its real tokenizer).
set -euo pipefail
before=$1 after=$2 model=$3 out=$4
mkdir -p "$out"
body=$out/q1_83tok-50w.json
python3 - "$body" <<'PY'
import sys
w = ["my", "payout", "failed", "again", "and", "the", "invoice", "shows", "a", "double", "charge", "please",
     "refund", "it", "today", "or", "escalate", "this", "ticket", "now"]
state = " ".join(w[(i * 7 + 3) % 20] for i in range(50))  # tests/loadgen.c's make_body
open(sys.argv[1], "w").write(
    '{"state": "%s", "questions": {"department": {"type": "choice", "instructions": "Which team should '
    'handle this?", "criteria": {"billing": "Payments, invoicing, refunds", "technical": "Bugs, outages, '
    'integrations", "sales": null}}}}' % state)
PY
for v in before after before2 after2; do
  b=$after; case $v in before*) b=$before ;; esac
  "$b" bench-request --model "$model" --body "$body" --iters 20000 --out "$out/bench-request-$v-hot.json" > /dev/null
  "$b" bench-request --model "$model" --body "$body" --iters 3000 --thrash-mb 32 \
    --out "$out/bench-request-$v-cold.json" > /dev/null
done
: > "$out/callgrind.txt"
for v in before after; do
  b=$after; [ $v = before ] && b=$before
  for fn in request_parse_in request_format; do
    valgrind --tool=callgrind --toggle-collect=$fn --callgrind-out-file=/tmp/host-ab.cg "$b" bench-request \
      --model "$model" --body "$body" --iters 1000 > /dev/null 2>&1
    n=$(callgrind_annotate /tmp/host-ab.cg | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
    echo "$v $fn $n instructions in 1000 calls" >> "$out/callgrind.txt"
  done
done
python3 - "$out" <<'PY'
import json, sys
o = sys.argv[1]
for v in ("before", "after", "before2", "after2"):
    h = json.load(open(f"{o}/bench-request-{v}-hot.json")); c = json.load(open(f"{o}/bench-request-{v}-cold.json"))
    print(f"{v:8s} hot parse {h['parse']['median_us']:.2f} format {h['format']['median_us']:.2f} us | "
          f"cold parse {c['parse']['median_us']:.2f} format {c['format']['median_us']:.2f} us")
PY
cat "$out/callgrind.txt"
