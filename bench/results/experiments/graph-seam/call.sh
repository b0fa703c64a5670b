# bench/results/experiments/graph-seam/call.sh - prepared, not run: does launching a bucket's forward as two graphs
# (graph_seam_layers: the first N encoder layers, then the rest) take back what the ~280-node graph's launch call
# costs before the device starts (sporadic/call7-h100: launch 11.5 us closed loop, 61.5 us after 200 ms pauses;
# run - gpu 9.4 / 41.6 us)? Run from the repository root on the lent GPU machine, carrying .carry
# (scripts/device/prep build/loadgen build/tests/gpu_backend_cuda; `git rev-parse --short HEAD > .carry/commit`).
# ~7 minutes: the backend suite (seam_rows: two graphs bit for bit one graph and eager), the forward A/B/A/B at
# the small shapes, then the daemon with graph_seam_layers 0 / 2 / 0 / 2 at pauses of 0-200 ms
# (sporadic/pauses.sh; the summary shows run, launch and gpu), and one more daemon polling 20 ms after its work
# (worker_spin_us 20000). Keep the seam only if run - gpu falls and the forward and q1_83tok p50 do not rise.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W/state; t0=$SECONDS; port=18192
$B/layad-dev mkmodel --preset tiny --out $W/tiny > /dev/null
LAYAD_TINY=$W/tiny timeout 100 $B/gpu_backend_cuda > $OUT/gpu_backend_cuda.log 2>&1
echo "gpu_backend_cuda exit $?"; grep -E "Checks|:F:|:E:" $OUT/gpu_backend_cuda.log
LAYAD_RUN_DIR=$W bash scripts/device/flag-ab $B/layad-dev --graph-seam-layers 0 2 1x16,1x83,1x512,8x512
source bench/results/experiments/sporadic/pauses.sh
AB_LIMIT_S=510
for v in one two one2 two2; do
  n=0; case $v in two*) n=2 ;; esac
  ab_daemon $v $B/layad --graph-seam-layers $n
done
# the launch after 2-20 ms pauses with the worker and the loop polling through them (20 ms, not 1)
ab_daemon spin20 $B/layad --graph-seam-layers 0 --worker-spin-us 20000
ab_summary one two one2 two2 spin20
cd $OUT && tar czf loadgen.tgz loadgen-*.json && rm -f loadgen-*.json
cd $W && tar czf $OUT/raw.tgz metrics-*.txt serve-*.log
