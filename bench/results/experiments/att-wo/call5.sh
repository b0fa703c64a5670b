# bench/results/experiments/att-wo/call5.sh - call3.sh and call4.sh in one call (one machine start): the patch's
# last change under its tests, the A/B/A/B and parity (call3.sh), then Nsight Compute with and without the option at
# 1x120 and 1x83 (call4.sh). Stage with att-wo/stage.sh; carry .carry (with .carry/ref/english.ref).
t0=$SECONDS
timeout 300 bash bench/results/experiments/att-wo/call3.sh
echo "call3 part $((SECONDS-t0)) s"
bash bench/results/experiments/att-wo/call4.sh
echo "call5 done $((SECONDS-t0)) s"
