# bench/results/experiments/att-wgmma/call9.sh - the attention padded to equal named-barrier counts
# (racecheck-pad.patch applied; since in the tree behind -DKN_ATT_PAD_BARRIERS=1, off by default) against
# the tree before it, same call: scripts/device/binary-ab attention at the small packs where the two-group
# form runs and at 8x512; then the padded tree's attention cases under racecheck.
# Stage: build/base/{layad-dev,bench_kernels}-base (the tree before), then scripts/device/prep
# build/bench/bench_kernels build/tests/gpu_kernels build/base/layad-dev-base build/base/bench_kernels-base.
export OUT; t0=$SECONDS
AB_SHAPES=1x83,1x150,1x512,8x512 bash scripts/device/binary-ab attention
source .carry/env.sh; cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
CK_RUN_CASE=attention timeout 90 "$cs" --tool racecheck .carry/bin/gpu_kernels > /tmp/rc.log 2>&1
echo "racecheck exit $? $((SECONDS-t0)) s: $(grep -hE 'RACECHECK SUMMARY|Checks' /tmp/rc.log | tr '\n' ' ')"
