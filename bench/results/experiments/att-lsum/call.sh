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
#   perf:  the forward, main / off / tree, twice; the kernel in both forms
# Everything lands in results.tgz.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W; t0=$SECONDS
[ -f build/tiny/model.safetensors ] || $B/layad-dev mkmodel --preset tiny --out build/tiny > /dev/null
[ -f "$W/english/model.safetensors" ] || $B/layad-dev mkmodel --preset english-large \
  --tokenizer .carry/shared/modernbert-tokenizer.json --out "$W/english" > /dev/null
left() { [ $((SECONDS - t0)) -lt $1 ] || { echo "skipped (time): $2"; return 1; }; }
case ${1:-} in
short)
CK_RUN_CASE=attention timeout 60 $B/gpu_kernels > $OUT/gpu_kernels-attention.log 2>&1
echo "gpu_kernels (attention) exit $? $((SECONDS-t0)) s"; grep -E "Checks|F:|differ" $OUT/gpu_kernels-attention.log | head -5
timeout 120 $B/gpu_backend_cuda > $OUT/gpu_backend_cuda.log 2>&1
echo "gpu_backend_cuda exit $? $((SECONDS-t0)) s"; grep -E "Checks|F:|max\|dp\||attention forms" $OUT/gpu_backend_cuda.log
for v in main tree; do
  b=$B/layad-dev; case $v in main*) b=$B/layad-dev-main ;; esac
  left 200 "forward $v" && timeout 60 $b bench --model $W/english --shapes 1x83,1x150,1x512,2x512,8x512 --groups 3 \
    --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
for v in "" main; do
  d=${v:+-$v}
  left 250 "parity english $v" && { timeout 40 $B/layad-dev$d parity-fast --model $W/english --label english$d \
    --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16$d.json > $OUT/parity-english-fp16$d.log 2>&1
    echo "parity english fp16$d exit $? $((SECONDS-t0)) s"; grep -E "max" $OUT/parity-english-fp16$d.log | head -2; }
done
left 270 "forward off" && timeout 50 $B/layad-dev bench --model $W/english --shapes 1x150,1x512,2x512 --groups 3 \
  --att-pack-tokens 0 --commit "$LAYAD_COMMIT (off)" --out $OUT/forward-off.json | grep -E "^ +[0-9]+x" | sed "s/^/off /"
;;
all)
CK_RUN_CASE=attention timeout 100 $B/gpu_kernels > $OUT/gpu_kernels-attention.log 2>&1
echo "gpu_kernels (attention) exit $? $((SECONDS-t0)) s"; grep -E "Checks|F:|differ" $OUT/gpu_kernels-attention.log | head -5
timeout 150 $B/gpu_backend_cuda > $OUT/gpu_backend_cuda.log 2>&1
echo "gpu_backend_cuda exit $? $((SECONDS-t0)) s"; grep -E "Checks|F:|max\|dp\||attention forms" $OUT/gpu_backend_cuda.log
for v in main tree off; do
  b=$B/layad-dev; a=""; case $v in main*) b=$B/layad-dev-main ;; off*) a="--att-pack-tokens 0" ;; esac
  left 200 "forward $v" && timeout 90 $b bench --model $W/english --shapes 1x83,1x150,1x256,1x512,2x512,8x512 $a \
    --groups 3 --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
for v in "" main lsum; do
  d=${v:+-$v}
  left 270 "parity $v" && { timeout 40 $B/layad-dev$d parity-fast --model build/tiny --label tiny$d --dtype fp16 \
    --out $OUT/parity-tiny$d.json > $OUT/parity-tiny$d.log 2>&1; echo "parity tiny$d exit $?"; }
  left 280 "parity english $v" && { timeout 60 $B/layad-dev$d parity-fast --model $W/english --label english$d \
    --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16$d.json > $OUT/parity-english-fp16$d.log 2>&1
    echo "parity english fp16$d exit $? $((SECONDS-t0)) s"; }
done
left 320 "kernels" && { timeout 60 $B/bench_kernels $OUT/kernels-attention.json --only=attention_form > $OUT/kernels.log 2>&1
  echo "bench_kernels exit $? $((SECONDS-t0)) s"; grep -E "^attention" $OUT/kernels.log; }
for v in main2 tree2; do
  b=$B/layad-dev; case $v in main*) b=$B/layad-dev-main ;; esac
  left 340 "forward $v" && timeout 60 $b bench --model $W/english --shapes 1x150,1x256,1x512,2x512 --groups 3 \
    --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
;;
tests)
CK_RUN_CASE=attention timeout 100 $B/gpu_kernels > $OUT/gpu_kernels-attention.log 2>&1
echo "gpu_kernels (attention) exit $? $((SECONDS-t0)) s"; grep -E "Checks|F:|differ" $OUT/gpu_kernels-attention.log | head -5
timeout 200 $B/gpu_backend_cuda > $OUT/gpu_backend_cuda.log 2>&1
echo "gpu_backend_cuda exit $? $((SECONDS-t0)) s"; grep -E "Checks|F:|max\|dp\||attention forms" $OUT/gpu_backend_cuda.log
for v in "" main lsum; do
  d=${v:+-$v}
  timeout 60 $B/layad-dev$d parity-fast --model build/tiny --label tiny$d --dtype fp16 --out $OUT/parity-tiny$d.json \
    > $OUT/parity-tiny$d.log 2>&1; echo "parity tiny$d exit $?"
  for dt in fp16 bf16; do
    timeout 90 $B/layad-dev$d parity-fast --model $W/english --label english$d --ref .carry/ref/english.ref --dtype $dt \
      --out $OUT/parity-english-$dt$d.json > $OUT/parity-english-$dt$d.log 2>&1
    echo "parity english $dt$d exit $? $((SECONDS-t0)) s"
  done
done
python3 - "$OUT" <<'PY'
import glob, json, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], 'parity-*.json'))):
    d = json.load(open(f))
    for dt, v in d.get('dtypes', {}).items():
        a = v.get('gpu_graph_vs_cpu_fp32', {}).get('all', {})
        print(os.path.basename(f), dt, 'max|dp| %.3e mean %.3e max|dlogit| %.3e' % (
            a.get('max_abs_dp', -1), a.get('mean_row_max_abs_dp', -1), a.get('max_abs_dlogit', -1)))
PY
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
rem=$((560 - (SECONDS - t0)))
if [ -n "$cs" ] && [ $rem -gt 40 ]; then
  CK_RUN_CASE=attention timeout $rem "$cs" --tool memcheck --error-exitcode 9 $B/gpu_kernels \
    > $OUT/memcheck-attention.log 2>&1
  echo "memcheck exit $? $((SECONDS-t0)) s"; tail -2 $OUT/memcheck-attention.log
else echo "skipped: memcheck"; fi
;;
perf)
for v in main off tree main2 off2 tree2; do
  b=$B/layad-dev; a=""; case $v in main*) b=$B/layad-dev-main ;; off*) a="--att-pack-tokens 0" ;; esac
  [ $((SECONDS - t0)) -lt 420 ] || { echo "skipped $v"; continue; }
  timeout 120 $b bench --model $W/english --shapes 1x83,1x150,1x256,1x512,2x512,8x512,64x512 $a \
    --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
timeout 100 $B/bench_kernels $OUT/kernels-attention.json --only=attention_form,attention > $OUT/kernels.log 2>&1
echo "bench_kernels exit $? $((SECONDS-t0)) s"; grep -E "^attention" $OUT/kernels.log
timeout 60 $B/bench_kernels-main $OUT/kernels-attention-main.json --only=attention > $OUT/kernels-main.log 2>&1
echo "bench_kernels-main exit $? $((SECONDS-t0)) s"; grep -E "^attention" $OUT/kernels-main.log
;;
*) echo "usage: $0 short|all|tests|perf" >&2; exit 2 ;;
esac
echo "done $((SECONDS-t0)) s"
cd $OUT && tar czf results.tgz --exclude=results.tgz * && find . -type f ! -name results.tgz -delete
