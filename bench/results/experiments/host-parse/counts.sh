#!/usr/bin/env bash
# bench/results/experiments/host-parse/counts.sh BASE_BUILD NEW_BUILD MODEL OUT - from the repository root:
# instruction counts (callgrind, deterministic where this machine's wall times move by +-30%) of the request
# parse for two builds of the library (each a build/ folder with liblayad.a, libserver.a and layad-dev; a CPU-only
# `make NVCC= build/layad-dev` is enough) on MODEL's tokenizer (build/english-large: ModernBERT's):
#   1. models-full/cache-probe.c linked against each build, one pass over the 300-body mixed set of
#      bench/mixed/gen_requests.py (/v1/systemone bodies), request_parse_in only, through MODEL and through the
#      mmbert-tiny checkpoint (`layad-dev mkmodel --preset mmbert-tiny`: a Gemma-like tokenizer, Replace + Metaspace
#      as mmBERT's, with a 4,455-token vocabulary);
#   2. each build's `layad-dev bench-request` (request_parse_in, then request_format; 1,000 calls) on
#      loadgen's q1_83tok body (42 state words) in its four texts (ascii, typographic, russian, chinese)
#      and on its q1_512tok body (433 ascii words).
# -> OUT/counts.txt (one line a build and case) and OUT/probe-*.txt (the probe's hit counts and times).
set -euo pipefail
base=$1 new=$2 model=$3 out=$4
mkdir -p "$out"
W=$(mktemp -d)
flags=$(printf 'include Makefile\nprobe-flags:\n\t@echo "$(CFLAGS)"\n\t@echo "$(LDLIBS)"\n' |
  make -s --no-print-directory NVCC= -f - probe-flags)
python3 bench/mixed/gen_requests.py --n 300 --out "$W/set300.jsonl" > /dev/null
"$new/layad-dev" mkmodel --preset mmbert-tiny --out "$W/mmbert-tiny" > /dev/null
python3 - "$W" <<'PY'
import json, sys
# tests/loadgen.c's words and make_body: state = words[(i * 7 + 3) % 20], one question
words = {
    "ascii": "my payout failed again and the invoice shows a double charge please refund it today or escalate this ticket now".split(),
    "typographic": ["\u201cmy", "payout\u201d", "failed\u2014", "again", "and", "the", "invoice", "shows", "a", "double",
                    "charge\u2026", "please", "refund", "it\u2019s", "today", "or", "escalate", "caf\u00e9", "ticket", "na\u00efve"],
    "russian": "мой платёж снова не прошёл и счёт показывает двойное списание пожалуйста верните деньги сегодня или передайте заявку дальше срочно сейчас".split(),
    "chinese": "我的 付款 又 失败 了 发票 显示 重复 扣款 请 今天 退款 或者 升级 这个 工单 马上 处理 谢谢 紧急".split(),
}
q = ('"questions": {"department": {"type": "choice", "instructions": "Which team should handle this?", '
     '"criteria": {"billing": "Payments, invoicing, refunds", "technical": "Bugs, outages, integrations", "sales": null}}}')
for name, n in [(t, 42) for t in words] + [("ascii512", 433)]:
    w = words["ascii" if name == "ascii512" else name]
    state = " ".join(w[(i * 7 + 3) % 20] for i in range(n))
    open(f"{sys.argv[1]}/body-{name}.json", "w", encoding="utf-8").write(json.dumps({"state": state}, ensure_ascii=False)[:-1] + ", " + q + "}")
PY
: > "$out/counts.txt"
count() { # NAME FUNCTION COMMAND...: callgrind's total for FUNCTION
  local name=$1 fn=$2; shift 2
  valgrind --tool=callgrind --toggle-collect="$fn" --callgrind-out-file="$W/cg" "$@" > "$W/stdout" 2>/dev/null
  echo "$name $fn $(callgrind_annotate "$W/cg" | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')" >> "$out/counts.txt"
}
for v in base new; do
  b=$base; [ $v = new ] && b=$new
  # shellcheck disable=SC2086
  cc $(sed -n 1p <<< "$flags") -o "$W/probe-$v" bench/results/experiments/models-full/cache-probe.c \
    "$b/libserver.a" "$b/liblayad.a" $(sed -n 2p <<< "$flags")
  count "$v set300" request_parse_in "$W/probe-$v" "$model" "$W/set300.jsonl" 1 alone
  cp "$W/stdout" "$out/probe-$v.txt"
  count "$v set300-mmbert-tiny" request_parse_in "$W/probe-$v" "$W/mmbert-tiny" "$W/set300.jsonl" 1 alone
  cp "$W/stdout" "$out/probe-mmbert-tiny-$v.txt"
  for body in ascii typographic russian chinese ascii512; do
    for fn in request_parse_in request_format; do
      count "$v $body" $fn "$b/layad-dev" bench-request --model "$model" --body "$W/body-$body.json" --iters 1000
    done
  done
done
rm -rf "$W"
cat "$out/counts.txt"
