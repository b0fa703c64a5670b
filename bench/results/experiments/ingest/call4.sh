# bench/results/experiments/ingest/call4.sh - the ingest probe once more: bulk copies of 512 B to 192 KB completing on
# one barrier (as the library's kernels load their tiles) or on one barrier each, from 1 to 128 issuing threads, and
# a weight tile of the small split kernel (32 rows of 512 B from DRAM) as row copies and as one copy. Call 3 found
# bulk copies of 2 KB on their own barriers ~0.13-0.18 us apart however many threads issued them. Stage:
# scripts/device/prep build/bench/ingest_probe; `git rev-parse --short HEAD > .carry/commit`; carry .carry.
export OUT; source .carry/env.sh; B=$PWD/.carry/bin; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 150 "$B/ingest_probe" > "$OUT/ingest.jsonl" 2> "$OUT/ingest.err"
echo "ingest exit $? $((SECONDS-t0)) s: $(wc -l < "$OUT/ingest.jsonl") lines"; tail -3 "$OUT/ingest.err"
