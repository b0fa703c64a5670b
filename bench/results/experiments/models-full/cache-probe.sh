#!/usr/bin/env bash
# bench/results/experiments/models-full/cache-probe.sh [MODEL] - builds cache-probe.c against this tree's build/
# (make build/layad-dev first) and runs it on the English checkpoint (default build/english-large, written by
# `layad-dev mkmodel --preset english-large --tokenizer ../shared/data/modernbert-tokenizer.json`): the 40-body
# set of models-full/call2.sh, 20 passes a phase, through one checkpoint alone and through two, then the 300-body
# mixed set (bench/mixed/h200.sh's) once and three times.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
model=${1:-build/english-large}; W=$(mktemp -d)
# the Makefile's own compile flags and libraries (pkg-config's, and CUDA's where nvcc built the library)
flags=$(printf 'include Makefile\nprobe-flags:\n\t@echo "$(CFLAGS)"\n\t@echo "$(LDLIBS)"\n' |
  make -s --no-print-directory -f - probe-flags)
# shellcheck disable=SC2086
cc $(sed -n 1p <<< "$flags") -o "$W/cache-probe" bench/results/experiments/models-full/cache-probe.c \
  build/libserver.a build/liblayad.a $(sed -n 2p <<< "$flags")
python3 bench/mixed/gen_requests.py --n 40 --out "$W/set40.jsonl" > /dev/null
python3 bench/mixed/gen_requests.py --n 300 --out "$W/set300.jsonl" > /dev/null
echo "== 40 bodies, 20 passes, one checkpoint"; "$W/cache-probe" "$model" "$W/set40.jsonl" 20 alone
echo "== 40 bodies, 20 passes, two"; "$W/cache-probe" "$model" "$W/set40.jsonl" 20
echo "== 300 bodies, 1 pass"; "$W/cache-probe" "$model" "$W/set300.jsonl" 1
echo "== 300 bodies, 3 passes"; "$W/cache-probe" "$model" "$W/set300.jsonl" 3
rm -rf "$W"
