# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the
# binaries of rope-attention.patch (it applies to main as of 2026-12-04's last commit; it and
# fused-proj.patch both add kernels/rope.cuh) staged as layad-dev-rope, gpu_kernels-rope and
# gpu_backend_cuda-rope:
#   git worktree add /tmp/rope HEAD && cd /tmp/rope && git apply <repo>/bench/results/experiments/rope-attention/rope-attention.patch
#   PATH=/usr/local/cuda/bin:$PATH make -j2 build/layad-dev build/tests/gpu_kernels build/tests/gpu_backend_cuda
# The second form of RoPE inside the attention (Q rotated in its fragments with angles read before the
# wait, each key tile rotated in shared memory with its table rows staged beside it, no spills at 168
# registers) against RoPE's own launch, same binary (--rope-attention-tokens 0 / 1000000, A/B/A/B,
# every bucket); its bit-exact kernel and backend tests. Prepared on 2026-12-04; not yet run (no device
# was lent that session).
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
for s in gpu_kernels gpu_backend_cuda; do timeout 120 $BIN/$s-rope > $OUT/$s-rope.log 2>&1; echo "$s-rope exit $? $((SECONDS-t0)) s"; grep -E "Checks|rotating|rope in attention" $OUT/$s-rope.log | tail -3; done
LAYAD_COMMIT="$LAYAD_COMMIT + rope-attention.patch" scripts/device/flag-ab $BIN/layad-dev-rope --rope-attention-tokens 0 1000000 1x16,1x40,1x83,1x150,1x512,8x512
echo "done $((SECONDS-t0)) s"
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
