# bench/results/experiments/att-wo/call4.sh - (prepared, not run) where the fused launch's ~4.3 us a layer at 1x120
# go: Nsight Compute over one forward at 1x120 and 1x83 without and with --att-wo-tokens 128
# (scripts/device/kernel-times; the fused kernel, the LayerNorm over 16 parts and the kernels around them, each
# alone). Stage with att-wo/stage.sh (it applies att-wo.patch around the build); carry .carry.
source .carry/env.sh
printf '#!/bin/sh\nexec "$(dirname "$0")/layad-dev" "$@" --att-wo-tokens 128\n' > .carry/bin/layad-dev-wo
chmod +x .carry/bin/layad-dev-wo
KT_BINS="layad-dev layad-dev-wo" OUT=$OUT timeout 560 bash scripts/device/kernel-times 1x120 1x83
