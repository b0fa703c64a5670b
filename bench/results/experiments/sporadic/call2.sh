# bench/results/experiments/sporadic/call2.sh - run from the repository root on the lent GPU machine, carrying
# .carry (scripts/device/prep build/loadgen and 8ba1ba9's layad as .carry/bin/layad-before; the working tree's
# layad wakes the scheduler's sleeping threads when a decision's headers arrive). One state directory (the
# GEMM tuning cache of the first start, read by the others). Each daemon in turn, before / prewake / before2 /
# prewake2: loadgen at concurrency 1 with pauses of 0, 2, 20 and 200 ms after every answer. ~5 minutes.
# (Rewritten after it ran to share pauses.sh with call5.sh, the same steps; the reports it made carry
# --meta binary=, now variant=.)
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W/state; t0=$SECONDS; port=18192
$B/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english \
  > /dev/null
source bench/results/experiments/sporadic/pauses.sh
for v in before prewake before2 prewake2; do
  b=$B/layad; case $v in before*) b=$B/layad-before ;; esac
  AB_LIMIT_S=500 ab_daemon $v $b
done
ab_summary before prewake before2 prewake2
# the device tool returns at most 8 files: one archive of the reports, one of the daemons' logs and metrics
cd $OUT && tar czf loadgen.tgz loadgen-*.json && rm -f loadgen-*.json
cd $W && tar czf $OUT/raw.tgz metrics-*.txt serve-*.log
