#!/usr/bin/env bash
# bench/mixed/peers.sh - four systems on the same three fixed requests (gen_fixed.py: 77, 509 and
# 201 input tokens, repeated), one after the other in one device call on the lent H200, on the
# same English-geometry checkpoint: layad over HTTP (Python client, loopback, fp16), laya-cuda
# 0.1.1.post1 in process (fp16), and the official `laya` 0.4.15 twice in bf16 autocast, its stock
# PyTorch eager forward and its TileLang fast path (Agent.accelerate()); then peers_report.py.
#
# Needs, in the working tree that travels: .carry/ (scripts/device/prep) and
# bench/mixed/wheels/peers-site.txz: laya, laya-cuda, tilelang 0.1.15, apache-tvm-ffi, z3-solver
# and torch-c-dlpack-ext installed into one folder here and xz-packed (README.md, "Four systems");
# carry both. PEERS_REPEAT (default 40) repeats of each request.
#
# Writes to $OUT: peers-h200.json (peers_report.py), log.txt, peers-raw.tgz (every system's JSON
# and answers, the compare files, the daemon's log).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/peers-out}
W=${PEERS_RUN_DIR:-/tmp/peers-run}
REPEAT=${PEERS_REPEAT:-40}
PORT=${PEERS_PORT:-18191}
mkdir -p "$OUT" "$W/out"
exec > >(tee -a "$OUT/log.txt") 2>&1
echo "== bench/mixed/peers.sh at $(date -u +%FT%TZ): repeat=$REPEAT"
# shellcheck disable=SC1091
source .carry/env.sh
LAYAD_LIBS=$LD_LIBRARY_PATH
export LAYAD_COMMIT=${LAYAD_COMMIT:-$(cat .carry/commit 2>/dev/null || echo unknown)}
BIN=$PWD/.carry/bin
SITE=$W/site
PYENV=(env -u LD_LIBRARY_PATH PYTHONPATH="$SITE" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}")
py() { "${PYENV[@]}" python3 "$@"; }
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,clocks.sm,power.draw --format=csv || true
py --version
# the machine's card names the labels (a call asked for an H200 may get an H100)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | sed 's/^NVIDIA //')
GPU=${GPU:-unknown GPU}
mkdir -p "$SITE" && tar -C "$SITE" -xJf bench/mixed/wheels/peers-site.txz || echo "peers-site unpack failed"

if [ ! -f "$W/english/model.safetensors" ]; then
  "$BIN/layad-dev" mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out "$W/english"
fi
sha256sum "$W/english/model.safetensors"
py bench/mixed/gen_fixed.py --repeat "$REPEAT" --out "$W/requests.jsonl"

echo "== layad (serve --device cuda --dtype fp16)"
timeout 150 env -u LD_LIBRARY_PATH PYTHONUNBUFFERED=1 python3 bench/mixed/run_layad.py --requests "$W/requests.jsonl" \
  --port "$PORT" --out-dir "$W/out" --duration 3 --concurrency 1 --ready-timeout 120 \
  --label "$GPU, layad CUDA fp16, english-large geometry (random weights), loopback" \
  --launch "env LD_LIBRARY_PATH=$LAYAD_LIBS $BIN/layad serve --model $W/english --device cuda --dtype fp16 --port $PORT --log-requests false"
echo "run_layad exit $?"

echo "== laya-cuda (Engine, fp16)"
timeout 150 "${PYENV[@]}" python3 bench/mixed/run_laya_cuda.py --model "$W/english" --requests "$W/requests.jsonl" \
  --out-dir "$W/out" --duration 3 --concurrency 1 --label "$GPU, laya-cuda fp16, english-large geometry (random weights)"
echo "run_laya_cuda exit $?"

echo "== official laya, stock (bf16 autocast)"
timeout 150 "${PYENV[@]}" python3 bench/mixed/run_official.py --model "$W/english" --requests "$W/requests.jsonl" \
  --out-dir "$W/out" --precision bf16 --name official-stock \
  --label "$GPU, official laya bf16 stock, english-large geometry (random weights)"
echo "run_official stock exit $?"

echo "== official laya, TileLang fast path (bf16)"
timeout 330 "${PYENV[@]}" python3 bench/mixed/run_official.py --model "$W/english" --requests "$W/requests.jsonl" \
  --out-dir "$W/out" --precision bf16 --accelerate --name official-fast \
  --label "$GPU, official laya bf16 TileLang fast path, english-large geometry (random weights)"
echo "run_official fast exit $?"

echo "== compare, report"
for o in stock fast; do
  [ -f "$W/out/official-$o-answers.jsonl" ] || continue
  py bench/mixed/compare.py --set layad="$W/out/layad-answers.jsonl" --set laya-cuda="$W/out/laya-cuda-answers.jsonl" \
    --set official="$W/out/official-$o-answers.jsonl" --out "$W/out/compare-$o.json" > /dev/null
done
py bench/mixed/peers_report.py --dir "$W/out" --meta "$W/requests.jsonl.meta.json" --out "$OUT/peers-h200.json" \
  --note "$GPU, one device call (bench/mixed/peers.sh): layad at $LAYAD_COMMIT, laya-cuda, official stock and TileLang fast path, one after the other on the same checkpoint and requests"
tar -C "$W/out" -czf "$OUT/peers-raw.tgz" .
echo "== done at $(date -u +%FT%TZ)"
