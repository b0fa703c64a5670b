#!/usr/bin/env bash
# bench/results/experiments/att-wo/stage.sh - stages call3.sh / call4.sh: applies att-wo.patch to the working
# tree, builds and stages the binaries (scripts/device/prep with the two GPU suites), writes .carry/commit as
# "<HEAD>+att-wo", and takes the patch back out, whatever fails. Run from the repository root with nvcc on PATH
# and a clean tree; then carry .carry (and .carry/ref/english.ref for call3.sh's parity).
set -euo pipefail
patch=bench/results/experiments/att-wo/att-wo.patch
git diff --quiet -- kernels model tests || { echo "stage.sh: kernels/, model/ or tests/ has changes" >&2; exit 1; }
git apply "$patch"
trap 'git apply -R "$patch"' EXIT
scripts/device/prep build/tests/gpu_kernels build/tests/gpu_backend_cuda
echo "$(git rev-parse --short HEAD)+att-wo" > .carry/commit
