# bench/results/experiments/bulk-spread/call1.sh - the small packs' own kernels (kn_gemm_split_small, the fused
# projections) with their bulk copies issued round the four warps instead of by warp 0's lanes (W rows) and threads
# 0..M-1 (X rows): the ingest probe (../ingest/) found a warp's bulk copies leaving ~30-60 ns apart and the warps'
# side by side, so 16 X rows from one warp cost ~0.5-1 us after the programmatic wait. Same call: the suites (the
# kernels' bits must not move), English fp16 parity (must equal 3.462e-3 / 3.515e-3), then scripts/device/binary-ab
# on the two kernel families and the forward at 16-83 tokens, base / new / base2, and new again. Stage:
# build/base/{layad-dev,bench_kernels}-base (the tree before), scripts/device/prep build/bench/bench_kernels
# build/tests/gpu_kernels build/tests/gpu_backend_cuda build/base/layad-dev-base build/base/bench_kernels-base;
# carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
run_suites
run_parity parity-english-fp16.json parity.log english
AB_SHAPES=1x16,1x30,1x40,1x83 LAYAD_RUN_DIR=$W timeout 400 bash scripts/device/binary-ab gemm_split,proj_small > /dev/null 2>&1
echo "binary-ab exit $? $((SECONDS-t0)) s"; grep -vE "^(bench_kernels|==)" "$OUT/log.txt" | head -60
timeout 100 "$B/layad-dev" bench --model "$W/english" --label "english new2" --shapes 1x16,1x30,1x40,1x83 \
  --commit "$LAYAD_COMMIT" --out "$OUT/forward-new2.json" | grep -E "^ +[0-9]+x"
echo "done $((SECONDS-t0)) s"
for l in kernels backend parity; do head -c 30000 "$W/$l.log" > "$W/$l.log.head"; done
(cd "$W" && tar czf "$OUT/logs.tgz" *.log.head)
