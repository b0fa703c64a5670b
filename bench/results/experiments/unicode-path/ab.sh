#!/usr/bin/env bash
# bench/results/experiments/unicode-path/ab.sh BEFORE AFTER MODEL OUTDIR - from the repository root: the
# host side of one decision (`layad-dev bench-request`: request_parse_in and request_format, no
# forward) for two layad-dev binaries, on loadgen's q1_83tok body with a 50-word state in four
# texts: ASCII (as host-ab.sh in text-cache/), the same with two curly quotes, an em dash and an
# accented letter ("mixed"), Russian words ("cyrillic") and Chinese words ("cjk"). Each body runs
# before / after / before2 / after2 with the caches hot (--thrash-mb 0) -> OUTDIR/<text>-<v>.json
# (with COLD=1 also with 32 MB written between iterations -> OUTDIR/<text>-<v>-cold.json),
# then each binary's instructions in request_parse_in under callgrind (1,000 calls) ->
# OUTDIR/callgrind.txt. Run with the session start's and last commit's CPU-only builds (make NVCC=
# BUILD=build/cpu build/cpu/layad-dev) on the english-large checkpoint (the real ModernBERT tokenizer).
set -euo pipefail
before=$1 after=$2 model=$3 out=$4
mkdir -p "$out"
python3 - "$out" <<'PY'
import sys
o = sys.argv[1]
w = ["my", "payout", "failed", "again", "and", "the", "invoice", "shows", "a", "double", "charge", "please",
     "refund", "it", "today", "or", "escalate", "this", "ticket", "now"]
words = [w[(i * 7 + 3) % 20] for i in range(50)]  # tests/loadgen.c's make_body
mixed = list(words)
mixed[10] = "\u201c" + mixed[10] + "\u201d"
mixed[30] += " \u2014"
mixed[44] = "caf\u00e9"
ru = ("мой платёж снова не прошёл и счёт показывает двойное списание пожалуйста верните деньги сегодня "
      "или передайте заявку дальше").split()
zh = "我的 付款 又 失败 了 发票 显示 重复 扣款 请 今天 退款 或者 升级 这个 工单".split()
texts = {"ascii": " ".join(words), "mixed": " ".join(mixed),
         "cyrillic": " ".join(ru[(i * 7 + 3) % len(ru)] for i in range(50)),
         "cjk": " ".join(zh[(i * 7 + 3) % len(zh)] for i in range(50))}
for name, state in texts.items():
    open(f"{o}/body-{name}.json", "w", encoding="utf-8").write(
        '{"state": "%s", "questions": {"department": {"type": "choice", "instructions": "Which team should '
        'handle this?", "criteria": {"billing": "Payments, invoicing, refunds", "technical": "Bugs, outages, '
        'integrations", "sales": null}}}}' % state)
PY
for t in ascii mixed cyrillic cjk; do
  for v in before after before2 after2; do
    b=$after; case $v in before*) b=$before ;; esac
    "$b" bench-request --model "$model" --body "$out/body-$t.json" --iters 20000 --out "$out/$t-$v.json" > /dev/null
    if [ "${COLD:-0}" = 1 ]; then
      "$b" bench-request --model "$model" --body "$out/body-$t.json" --iters 3000 --thrash-mb 32 \
        --out "$out/$t-$v-cold.json" > /dev/null
    fi
  done
done
: > "$out/callgrind.txt"
for t in ascii mixed cyrillic cjk; do
  for v in before after; do
    b=$after; [ $v = before ] && b=$before
    valgrind --tool=callgrind --toggle-collect=request_parse_in --callgrind-out-file=/tmp/unicode-ab.cg "$b" \
      bench-request --model "$model" --body "$out/body-$t.json" --iters 1000 > /dev/null 2>&1
    n=$(callgrind_annotate /tmp/unicode-ab.cg | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
    echo "$t $v request_parse_in $n instructions in 1000 calls" >> "$out/callgrind.txt"
  done
done
python3 - "$out" <<'PY'
import json, sys
o = sys.argv[1]
for t in ("ascii", "mixed", "cyrillic", "cjk"):
    for kind in ("", "-cold"):
        try:
            row = [f"{json.load(open(f'{o}/{t}-{v}{kind}.json'))['parse']['median_us']:.2f}"
                   for v in ("before", "after", "before2", "after2")]
        except FileNotFoundError:
            continue
        print(f"{t:9s} parse{kind or ' hot'} us (before / after / before2 / after2): " + " / ".join(row))
PY
cat "$out/callgrind.txt"
