# scripts/device/run-env.sh - sourced by a call script on the lent GPU machine, from the repository root: our
# binaries and libraries (.carry/env.sh), LAYAD_COMMIT from .carry/commit, B (the binaries) and W (the run folder,
# /tmp/layad-run unless set), and the tiny and English-large checkpoints written into W; mkmodel_mmbert DIR writes
# the mmBERT-base geometry when a call asks for it; run_suites, run_case, run_parity and bench_abab are the checks and the
# A/B/A/B forward that experiment calls share, and sanitize one suite case under compute-sanitizer ($cs).
# shellcheck disable=SC1091
source .carry/env.sh
export LAYAD_COMMIT; LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=${W:-/tmp/layad-run}; mkdir -p "$W"
# Once a call: a second script of the same call finds them written. Keyed by the carried commit, since a
# machine has kept its run folder from one call to the next, whose mkmodel may write other checkpoints.
if [ "$(cat "$W/models.commit" 2>/dev/null)" != "$LAYAD_COMMIT" ]; then
  "$B/layad-dev" mkmodel --preset tiny --out "$W/tiny" > /dev/null &&
    "$B/layad-dev" mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json \
      --out "$W/english" > /dev/null &&
    echo "$LAYAD_COMMIT" > "$W/models.commit"
fi
# mkmodel_mmbert DIR: the mmBERT-base geometry with random weights and the ModernBERT tokenizer (the only real
# tokenizer carried), its special tokens written into the tokenizer's and the encoder's configs (as
# bench/results/experiments/bulk-x/call3.sh first did).
mkmodel_mmbert() {
  "$B/layad-dev" mkmodel --preset mmbert-base --tokenizer .carry/shared/modernbert-tokenizer.json --out "$1" > /dev/null 2>&1
  cat > "$1/tokenizer/tokenizer_config.json" <<'JSON'
{"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]", "unk_token": "[UNK]", "model_max_length": 8192, "tokenizer_class": "PreTrainedTokenizerFast"}
JSON
  sed -i 's/"pad_token_id": 0/"pad_token_id": 50283/; s/"eos_token_id": 1/"eos_token_id": 50282/; s/"bos_token_id": 2/"bos_token_id": 50281/; s/"cls_token_id": 2/"cls_token_id": 50281/; s/"sep_token_id": 1/"sep_token_id": 50282/' "$1/encoder/config.json"
}
# run_suites: the kernel and backend suites ($W/kernels.log, $W/backend.log), their summaries printed with the
# seconds since the caller's t0.
run_suites() {
  timeout 120 "$B/gpu_kernels" > "$W/kernels.log" 2>&1; echo "kernels exit $? $((SECONDS-t0)) s: $(grep -h Checks "$W/kernels.log")"
  LAYAD_TINY=$W/tiny timeout 120 "$B/gpu_backend_cuda" > "$W/backend.log" 2>&1
  echo "backend exit $? $((SECONDS-t0)) s: $(grep -h Checks "$W/backend.log")"
}
# run_case BINARY CASE LOG-NAME CAP: one case of a GPU suite alone (CK_RUN_CASE; the backend suite's tiny checkpoint
# set) into $W/LOG-NAME, at most CAP seconds, its exit and summary printed with the seconds since the caller's t0.
run_case() {
  CK_RUN_CASE=$2 LAYAD_TINY=$W/tiny timeout "$4" "$1" > "$W/$3" 2>&1
  echo "$(basename "$1") $2 exit $? $((SECONDS-t0)) s: $(grep -h Checks "$W/$3")"
}
# run_parity OUT-NAME LOG-NAME LABEL [ARG...]: English fp16 parity-fast against .carry/ref/english.ref into
# $OUT/OUT-NAME, its log $W/LOG-NAME, its gates printed.
run_parity() {
  local out=$1 log=$2 label=$3; shift 3
  timeout 120 "$B/layad-dev" parity-fast --model "$W/english" --dtype fp16 --label "$label" "$@" \
    --ref .carry/ref/english.ref --out "$OUT/$out" > "$W/$log" 2>&1
  echo "parity ($label) exit $? $((SECONDS-t0)) s"; grep -E "gates" "$W/$log" | head -2
}
# bench_abab SHAPES NAME-A BINARY-A NAME-B BINARY-B: `bench` on the English checkpoint, A, B, A again, B again
# (the second runs named NAME-A2, NAME-B2), each into $OUT/forward-NAME.json, the timed rows printed.
bench_abab() {
  local shapes=$1 r
  for r in "$2:$3" "$4:$5" "${2}2:$3" "${4}2:$5"; do
    echo "== ${r%%:*}"
    timeout 100 "${r#*:}" bench --model "$W/english" --shapes "$shapes" --commit "$LAYAD_COMMIT (${r%%:*})" \
      --out "$OUT/forward-${r%%:*}.json" | grep -E "^ +[0-9]+x"
  done
}
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
# sanitize TOOL BINARY CASE CAP: one case of a GPU suite (all: every case) under compute-sanitizer's TOOL ($cs), the
# tuner off and the backend suite's buckets captured as its forwards reach them (LAYAD_TEST_LAZY_WARM), at most CAP
# seconds and what is left before the caller's deadline DL (seconds after its t0); prints the exit, the summary and
# the kernels its reports name other than cuBLASLt's (nvjet), writes $W/TOOL-BINARY-CASE.kernels (every kernel a
# report names, counted) and .log.tail (the log's last 20 KB).
sanitize() {
  local tool=$1 bin=$2 case=$3 cap=$4 left log
  left=$((DL - (SECONDS - t0))); [ "$cap" -le "$left" ] || cap=$left
  [ "$cap" -ge 20 ] || { echo "$tool $case: not run (time)"; return; }
  log=$W/$tool-$(basename "$bin")-$case.log
  local sel=(CK_RUN_CASE="$case"); [ "$case" = all ] && sel=()
  env LAYAD_TINY="$W/tiny" LAYAD_TEST_NO_TUNE=1 LAYAD_TEST_LAZY_WARM=1 "${sel[@]}" timeout "$cap" "$cs" --tool "$tool" "$bin" > "$log" 2>&1
  echo "$tool $(basename "$bin") $case: exit $? at $((SECONDS-t0)) s (cap $cap): $(grep -hE 'SUMMARY|Checks:' "$log" | tr '\n' ' ')"
  grep -q 'Checks:' "$log" || echo "    no Checks line: cut short (compute-sanitizer exits 0 when timeout stops it)"
  awk '/Race reported between/ { sub(/.* access at /, ""); sub(/\+0x.*/, ""); print; next }
       /Uninitialized __global__ memory read/ { u = 1; next }
       u && / at / { sub(/.* at /, ""); sub(/\+0x.*/, ""); print "uninitialized read in " $0; u = 0 }' "$log" |
    sed 's/(.*//' | sort | uniq -c | sort -rn > "${log%.log}.kernels"
  grep -v nvjet "${log%.log}.kernels" | sed 's/^/    not cuBLASLt: /' | head -8
  grep -c nvjet "${log%.log}.kernels" | sed 's/^/    cuBLASLt kernels named: /'
  tail -c 20000 "$log" > "$log.tail"
}
