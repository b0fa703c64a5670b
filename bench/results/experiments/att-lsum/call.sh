# run from the repository root on the lent GPU machine, carrying .carry as staged by
# bench/results/experiments/att-lsum/stage.sh: `bash .carry/call.sh short` (one call, ~5 minutes), or `all`
# (~7 minutes), or `tests` then `perf` (two calls). Binaries: unsuffixed = HEAD + lsum.patch + att-pack.patch
# ("tree" below: l from the rounded P, key tiles in two halves, the two-group form for packs of few tiles),
# -lsum = HEAD + lsum.patch, -main = HEAD.
#   short: the attention cases, the backend suite, the forward main / tree, English fp16 parity, the tree with
#          att_pack_tokens 0 ("off"), each step while time is left
#   all:   the same plus parity on tiny and for -lsum, the kernel's two forms, then main and tree again
#   tests: the attention cases (both launch forms equal bit for bit, against the CPU, rows alone == packed);
#          the backend suite (parity, the two attention forms); parity-fast on tiny (fp16) and English (fp16,
#          bf16) for the tree, main and lsum; memcheck on the attention cases as long as time is left
#   verify: the suites, parity of the tree (tiny fp16, English fp16 and bf16), the forward main / tree, then
#          memcheck on the attention cases
#   perf:  the forward, main / off / tree, twice; the kernel in both forms
# Everything lands in results.tgz.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W; t0=$SECONDS
[ -f build/tiny/model.safetensors ] || $B/layad-dev mkmodel --preset tiny --out build/tiny > /dev/null
[ -f "$W/english/model.safetensors" ] || $B/layad-dev mkmodel --preset english-large \
  --tokenizer .carry/shared/modernbert-tokenizer.json --out "$W/english" > /dev/null
left() { [ $((SECONDS - t0)) -lt $1 ] || { echo "skipped (time): $2"; return 1; }; }
# suites LIMIT: the attention cases, then the whole backend suite (its parity lines, the two attention forms)
suites() {
  CK_RUN_CASE=attention timeout 100 $B/gpu_kernels > $OUT/gpu_kernels-attention.log 2>&1
  echo "gpu_kernels (attention) exit $? $((SECONDS-t0)) s"
  grep -E "Checks|F:|differ" $OUT/gpu_kernels-attention.log | head -5
  timeout $1 $B/gpu_backend_cuda > $OUT/gpu_backend_cuda.log 2>&1
  echo "gpu_backend_cuda exit $? $((SECONDS-t0)) s"
  grep -E "Checks|F:|max\|dp\||attention forms" $OUT/gpu_backend_cuda.log
}
# forward NAME SHAPES [ARGS]: layad-dev bench of main (NAME main*), or of the patched tree
forward() {
  local b=$B/layad-dev
  case $1 in main*) b=$B/layad-dev-main ;; esac
  timeout 90 $b bench --model $W/english --shapes $2 ${3:-} --groups 3 --commit "$LAYAD_COMMIT ($1)" \
    --out $OUT/forward-$1.json | grep -E "^ +[0-9]+x" | sed "s/^/$1 /"
}
# parity MODEL SUFFIX DTYPE: parity-fast of layad-dev SUFFIX (tiny: its own reference; English: the cached one)
parity() {
  local ref="" name=$1$2-$3
  [ $1 = english ] && ref="--ref .carry/ref/english.ref"
  timeout 60 $B/layad-dev$2 parity-fast --model $( [ $1 = tiny ] && echo build/tiny || echo $W/english ) $ref \
    --label $name --dtype $3 --out $OUT/parity-$name.json > $OUT/parity-$name.log 2>&1
  echo "parity $name exit $? $((SECONDS-t0)) s"
}
summary() {
  python3 - "$OUT" <<'PY'
import glob, json, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], 'parity-*.json'))):
    d = json.load(open(f))
    for dt, v in d.get('dtypes', {}).items():
        a = v.get('gpu_graph_vs_cpu_fp32', {}).get('all', {})
        print(os.path.basename(f), dt, 'max|dp| %.3e mean %.3e max|dlogit| %.3e' % (
            a.get('max_abs_dp', -1), a.get('mean_row_max_abs_dp', -1), a.get('max_abs_dlogit', -1)))
PY
}
kernels() {
  timeout 60 $B/bench_kernels $OUT/kernels-attention.json --only=attention_form > $OUT/kernels.log 2>&1
  echo "bench_kernels exit $? $((SECONDS-t0)) s"; grep -E "^attention" $OUT/kernels.log
}
# memcheck END: the attention cases under compute-sanitizer while the call is under END seconds
memcheck() {
  local cs rem=$(($1 - (SECONDS - t0)))
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  if [ -n "$cs" ] && [ $rem -gt 40 ]; then
    CK_RUN_CASE=attention timeout $rem "$cs" --tool memcheck --error-exitcode 9 $B/gpu_kernels \
      > $OUT/memcheck-attention.log 2>&1
    echo "memcheck exit $? $((SECONDS-t0)) s"; tail -2 $OUT/memcheck-attention.log
  else echo "skipped: memcheck"; fi
}
S=1x83,1x150,1x256,1x512,2x512,8x512
case ${1:-} in
short)
suites 120
for v in main tree; do left 200 "forward $v" && forward $v 1x83,1x150,1x512,2x512,8x512; done
for d in "" -main; do left 250 "parity $d" && parity english "$d" fp16; done
left 270 "forward off" && forward off 1x150,1x512,2x512 "--att-pack-tokens 0"
summary
;;
all)
suites 150
for v in main tree off; do
  left 200 "forward $v" && forward $v $S "$( [ $v = off ] && echo --att-pack-tokens 0 )"
done
for d in "" -main -lsum; do
  left 270 "parity $d" && parity tiny "$d" fp16
  left 280 "parity english $d" && parity english "$d" fp16
done
summary
left 320 "kernels" && kernels
for v in main2 tree2; do left 340 "forward $v" && forward $v 1x150,1x256,1x512,2x512; done
;;
tests)
suites 200
for d in "" -main -lsum; do
  parity tiny "$d" fp16
  for dt in fp16 bf16; do parity english "$d" $dt; done
done
summary
memcheck 560
;;
verify)
suites 150
parity tiny "" fp16
for dt in fp16 bf16; do parity english "" $dt; done
summary
for v in main tree; do forward $v 1x83,1x150,1x512,2x512,8x512; done
memcheck 400
;;
perf)
for v in main off tree main2 off2 tree2; do
  forward $v $S,64x512 "$( case $v in off*) echo --att-pack-tokens 0 ;; esac )"
done
kernels
;;
*) echo "usage: $0 short|all|tests|verify|perf" >&2; exit 2 ;;
esac
echo "done $((SECONDS-t0)) s"
cd $OUT && tar czf results.tgz --exclude=results.tgz * && find . -type f ! -name results.tgz -delete
