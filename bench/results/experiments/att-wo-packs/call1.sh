# bench/results/experiments/att-wo-packs/call1.sh - what the fused attention out-projection's cap on the pack form
# costs: in buckets of up to 48 tokens (att_wo_tokens' default) the pack form holds only the 2 tiles one wave of
# the fused launch takes (cuda_pack_tiles), so a pack of 3-12 query tiles there runs the grid-form attention,
# unfused, where with --att-wo-tokens 0 it runs the two-group pack form (up to kn_attention_pack_tiles, 12 on
# 132 SMs). The forward A/B/A/B, tree against --att-wo-tokens 0, at packs of 1-4 query tiles (64 tokens a tile)
# in 16-48-token buckets, the most such a bucket holds here (rows of at least 10 tokens, synth_uniform's least),
# and two controls past 48 tokens. Carry .carry (scripts/device/prep;
# `git rev-parse --short HEAD > .carry/commit`).
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
printf '#!/bin/sh\nexec %s "$@" --att-wo-tokens 0\n' "$B/layad-dev" > "$W/nowo"; chmod +x "$W/nowo"
bench_abab 1x16,2x16,3x16,4x12,6x8,12x4,3x10,4x8,2x24,1x83,4x20 tree "$B/layad-dev" nowo "$W/nowo"
echo "done $((SECONDS-t0)) s"
