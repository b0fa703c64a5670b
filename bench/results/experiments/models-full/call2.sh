# bench/results/experiments/models-full/call2.sh - does alternating two models cost a request time? One daemon serving
# English-large and mmBERT-base (as call1.sh), at concurrency 1: English bodies only, then the two interleaved,
# then mmBERT bodies only, then English only again; 5 s closed loop each (run_layad.py against the running daemon,
# its /metrics after each phase, so the serving stages of a phase are the difference of two files). The same 40
# bodies in each phase (the pair: the 40 English and 40 mmBERT ones interleaved). Carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
mkmodel_mmbert "$W/mmbert"
python3 bench/mixed/gen_requests.py --n 40 --out "$W/set.jsonl" > /dev/null
python3 bench/results/experiments/models-full/bodies.py "$W/set.jsonl" "$W" en=english ml=multilingual
"$B/layad" serve --device cuda --dtype fp16 --port 18190 --log-requests false --model english="$W/english" \
  --model multilingual="$W/mmbert" > "$OUT/serve.log" 2>&1 & pid=$!
for _ in $(seq 300); do curl -fsS http://127.0.0.1:18190/readyz > /dev/null 2>&1 && break; sleep 0.2; done
echo "ready $((SECONDS-t0)) s"
for p in en pair ml en2; do
  timeout 40 python3 bench/mixed/run_layad.py --requests "$W/${p%2}.jsonl" --port 18190 --out-dir "$OUT/runs" \
    --name "$p" --concurrency 1 --duration 5 2>&1 | grep -E "c=1" | sed "s/^/$p: /"
done
kill -TERM $pid; wait $pid
cd "$OUT" && tar czf runs.tgz runs && rm -rf runs && echo "done $((SECONDS-t0)) s"
