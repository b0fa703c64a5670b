# bench/results/experiments/ingest/call3.sh - the ingest probe again, its bulk copies now issued by 1 to 96 threads
# a block and as one copy of the whole slice (call 2: one thread's copies went ~0.44 us apart whatever their size,
# 9 GB/s an SM at 4 KB, 37 at 16 KB, against 139-157 GB/s by cp.async from 128 threads). Stage: scripts/device/prep
# build/bench/ingest_probe; `git rev-parse --short HEAD > .carry/commit`; carry .carry.
export OUT; source .carry/env.sh; B=$PWD/.carry/bin; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 150 "$B/ingest_probe" > "$OUT/ingest.jsonl" 2> "$OUT/ingest.err"
echo "ingest exit $? $((SECONDS-t0)) s: $(wc -l < "$OUT/ingest.jsonl") lines"; tail -3 "$OUT/ingest.err"
