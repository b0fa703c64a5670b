#!/usr/bin/env bash
# bench/mixed/h200.sh - the mixed-traffic benchmark on the lent GPU machine, in one device call:
# layad (HTTP, loopback), laya-cuda 0.1.1.post1 in process, and the official `laya` 0.4.15 on the
# same English-geometry checkpoint and the same requests, one system after the other (never two
# on the GPU at once), then compare.py over their answers.
#
# Needs, in the working tree that travels: .carry/ staged by scripts/device/prep (bin/layad,
# bin/layad-dev, env.sh, the ModernBERT tokenizer) and bench/mixed/wheels/ with the two wheels
# (README.md, "wheels"); carry both. The checkpoint is generated there with layad-dev mkmodel
# (deterministic, same sha256 as here); the requests with gen_requests.py (same sha256 too).
#
# Environment (defaults): MIXED_N=300 MIXED_SEED=20261202 MIXED_DURATION=10 (seconds per
# concurrency level) MIXED_LEVELS=1,8,64 LAYAD_DTYPE=fp16 MIXED_OFFICIAL=fp32 (fp32|fp16|bf16|skip)
# MIXED_LAYA_CUDA=1 (0: skip) OUT (where results go; $OUT on the device machine).
#
# Writes to $OUT: results-h200.json (collect.py: the set's meta, every system's figures, compare),
# log.txt, and mixed-raw.tgz (the per-system JSON, answers files, concurrent responses, daemon log
# and /metrics).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/mixed-out}
W=${MIXED_RUN_DIR:-/tmp/mixed-run}
N=${MIXED_N:-300}
SEED=${MIXED_SEED:-20261202}
DUR=${MIXED_DURATION:-10}
LEVELS=${MIXED_LEVELS:-1,8,64}
DTYPE=${LAYAD_DTYPE:-fp16}
OFFICIAL=${MIXED_OFFICIAL:-fp32}
PORT=${MIXED_PORT:-18190}
mkdir -p "$OUT" "$W/out"
exec > >(tee -a "$OUT/log.txt") 2>&1
echo "== bench/mixed/h200.sh at $(date -u +%FT%TZ): n=$N seed=$SEED duration=$DUR levels=$LEVELS dtype=$DTYPE official=$OFFICIAL"
# shellcheck disable=SC1091
source .carry/env.sh                       # LD_LIBRARY_PATH for layad; Python runs without it
LAYAD_LIBS=$LD_LIBRARY_PATH
export LAYAD_COMMIT=${LAYAD_COMMIT:-$(cat .carry/commit 2>/dev/null || echo unknown)}
BIN=$PWD/.carry/bin
TOK=$PWD/.carry/shared/modernbert-tokenizer.json
py() { env -u LD_LIBRARY_PATH PYTHONPATH=/tmp/mixed-site PYTHONUNBUFFERED=1 python3 "$@"; }
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,clocks.sm,power.draw --format=csv || true
py --version

echo "== wheels -> /tmp/mixed-site (--no-deps)"
env -u LD_LIBRARY_PATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --ignore-requires-python --upgrade --target /tmp/mixed-site bench/mixed/wheels/*.whl || echo "pip install failed"

echo "== checkpoint: layad-dev mkmodel --preset english-large"
if [ ! -f "$W/english/model.safetensors" ]; then
  t0=$SECONDS
  "$BIN/layad-dev" mkmodel --preset english-large --tokenizer "$TOK" --out "$W/english" && echo "mkmodel: $((SECONDS - t0)) s"
fi
sha256sum "$W/english/model.safetensors"

echo "== requests"
py bench/mixed/gen_requests.py --seed "$SEED" --n "$N" --out "$W/requests.jsonl"

echo "== layad (serve --device cuda --dtype $DTYPE)"
timeout 220 env -u LD_LIBRARY_PATH PYTHONUNBUFFERED=1 python3 bench/mixed/run_layad.py --requests "$W/requests.jsonl" \
  --port "$PORT" --out-dir "$W/out" --duration "$DUR" --concurrency "$LEVELS" --ready-timeout 120 \
  --label "H200, layad CUDA $DTYPE, english-large geometry (random weights), loopback" \
  --launch "env LD_LIBRARY_PATH=$LAYAD_LIBS $BIN/layad serve --model $W/english --device cuda --dtype $DTYPE --port $PORT --log-requests false"
echo "run_layad exit $?"

if [ "${MIXED_LAYA_CUDA:-1}" != 0 ]; then
  echo "== laya-cuda (Engine sequential, BatchEngine concurrent)"
  timeout 180 env -u LD_LIBRARY_PATH CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" PYTHONPATH=/tmp/mixed-site \
    PYTHONUNBUFFERED=1 python3 bench/mixed/run_laya_cuda.py --model "$W/english" --requests "$W/requests.jsonl" --out-dir "$W/out" \
    --duration "$DUR" --concurrency "$LEVELS" --label "H200, laya-cuda fp16, english-large geometry (random weights)"
  echo "run_laya_cuda exit $?"
fi

if [ "$OFFICIAL" != skip ]; then
  echo "== official laya ($OFFICIAL)"
  timeout 140 env -u LD_LIBRARY_PATH PYTHONPATH=/tmp/mixed-site PYTHONUNBUFFERED=1 python3 bench/mixed/run_official.py \
    --model "$W/english" --requests "$W/requests.jsonl" --out-dir "$W/out" --precision "$OFFICIAL" \
    --label "H200, official laya $OFFICIAL, english-large geometry (random weights)"
  echo "run_official exit $?"
fi

echo "== compare, collect"
py bench/mixed/compare.py --dir "$W/out" --requests "$W/requests.jsonl" --out "$W/out/compare.json"
cp "$W/requests.jsonl.meta.json" "$W/out/requests.meta.json"
py bench/mixed/collect.py --dir "$W/out" --out "$OUT/results-h200.json" \
  --note "H200, one device call (bench/mixed/h200.sh): layad at $LAYAD_COMMIT ($DTYPE), laya-cuda, official ($OFFICIAL), one after the other on the same checkpoint and requests"
tar -C "$W/out" -czf "$OUT/mixed-raw.tgz" .
echo "== done at $(date -u +%FT%TZ)"
