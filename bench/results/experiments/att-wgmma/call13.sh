# bench/results/experiments/att-wgmma/call13.sh - why call12's racecheck of the split case ended with exit 9: the case plain, then
# under racecheck with the kernel log's tail (dmesg) beside it. Stage: as call12.sh.
source .carry/env.sh; cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer); t0=$SECONDS
CK_RUN_CASE=split CK_VERBOSITY=verbose timeout 60 .carry/bin/gpu_kernels > /tmp/plain.log 2>&1; echo "plain split exit $? $((SECONDS-t0)) s"; tail -3 /tmp/plain.log
CK_RUN_CASE=split CK_VERBOSITY=verbose timeout 100 "$cs" --tool racecheck --print-level info .carry/bin/gpu_kernels > /tmp/rc.log 2>&1
echo "racecheck split exit $? $((SECONDS-t0)) s"; head -c 3000 /tmp/rc.log; echo ...; tail -c 2500 /tmp/rc.log
dmesg 2>/dev/null | tail -5; free -g | head -2
