#!/usr/bin/env bash
# bench/results/experiments/att-wo-cluster/stage.sh - stages call1.sh: applies cluster.patch to the working tree,
# builds and stages the binaries (scripts/device/prep with both GPU suites, and make racecheck-build's two suites as
# gpu_kernels_rc / gpu_backend_cuda_rc), writes .carry/commit as "<HEAD>+cluster", and takes the patch back out,
# whatever fails. Run from the repository root with nvcc on PATH and a clean tree; then carry .carry (with
# .carry/ref/english.ref for the parity).
set -euo pipefail
patch=bench/results/experiments/att-wo-cluster/cluster.patch
git diff --quiet -- kernels model tests || { echo "stage.sh: kernels/, model/ or tests/ has changes" >&2; exit 1; }
git apply "$patch"
trap 'git apply -R "$patch"' EXIT
make -j2 racecheck-build
mkdir -p build/rc
cp build/racecheck/tests/gpu_kernels build/rc/gpu_kernels_rc
cp build/racecheck/tests/gpu_backend_cuda build/rc/gpu_backend_cuda_rc
scripts/device/prep build/tests/gpu_kernels build/tests/gpu_backend_cuda build/rc/gpu_kernels_rc \
  build/rc/gpu_backend_cuda_rc
echo "$(git rev-parse --short HEAD)+cluster" > .carry/commit
