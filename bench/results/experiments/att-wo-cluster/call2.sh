# bench/results/experiments/att-wo-cluster/call2.sh - call1.sh, then with the time left (DL2, seconds of the
# whole call) racecheck on the padded build (stage.sh's gpu_backend_cuda_rc) over the backend suite's cases that
# run the fused attention out-projection on by default and had not run under the tool since it landed
# (CASES; every 48th row), into rc.tgz. The patch's default is clusters of 1, the landed per-head form.
export OUT; t00=$SECONDS; DL2=${DL2:-570}
DL=${DL:-480} bash bench/results/experiments/att-wo-cluster/call1.sh
source scripts/device/run-env.sh; t0=$t00; DL=$DL2
export LAYAD_TEST_ROW_STEP=48
for c in ${CASES:-parity_fp16 parity_bf16 split_branch_rows packing_order_and_k}; do
  sanitize racecheck "$B/gpu_backend_cuda_rc" "$c" "${CAP:-80}"
done
(cd "$W" && tar czf "$OUT/rc.tgz" ./racecheck-gpu_backend_cuda_rc-*.kernels ./racecheck-gpu_backend_cuda_rc-*.log.tail 2>/dev/null)
echo "call2 done $((SECONDS-t00)) s"
