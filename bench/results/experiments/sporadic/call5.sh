# bench/results/experiments/sporadic/call5.sh - the last session's call4.sh, folded in here (device_nudge false /
# true / false / true at pauses, the backend suite first), plus two more daemons, nudge off and on, while the script
# holds a CPU latency request of 0 us (/dev/cpu_dma_latency, the kernel's PM QoS: no core enters an idle state
# deeper than polling while the file is open). The question for the second part: how much of what a request pays
# after a pause is the host's cores waking (the ~0.17 ms outside the daemon's clocks, the parse on cold caches),
# before the daemon gets a key that holds such a request itself. Carry .carry (scripts/device/prep build/loadgen
# build/tests/gpu_backend_cuda; `git rev-parse --short HEAD > .carry/commit`). ~7 minutes.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W/state; t0=$SECONDS; port=18192
for s in /sys/devices/system/cpu/cpu0/cpuidle/state*; do
  echo "cpuidle $(cat $s/name) latency $(cat $s/latency) us disable $(cat $s/disable)"
done 2> /dev/null | tee $OUT/cpuidle.txt
cat /sys/devices/system/cpu/cpuidle/current_driver /sys/devices/system/cpu/cpuidle/current_governor* 2> /dev/null \
  | tee -a $OUT/cpuidle.txt
$B/layad-dev mkmodel --preset tiny --out $W/tiny > /dev/null
LAYAD_TINY=$W/tiny timeout 100 $B/gpu_backend_cuda > $OUT/gpu_backend_cuda.log 2>&1
echo "gpu_backend_cuda exit $?"; grep -E "Checks|F:" $OUT/gpu_backend_cuda.log
$B/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english \
  > /dev/null
source bench/results/experiments/sporadic/pauses.sh
AB_LIMIT_S=470
for v in off on off2 on2; do
  n=false; case $v in on*) n=true ;; esac
  ab_daemon $v $B/layad --device-nudge $n
done
if exec 3> /dev/cpu_dma_latency && printf '\x00\x00\x00\x00' >&3; then
  echo "cpu latency request 0 us held"
  for v in qoff qon; do
    n=false; case $v in qon) n=true ;; esac
    ab_daemon $v $B/layad --device-nudge $n
  done
  exec 3>&-
else
  echo "no cpu latency request (cannot write /dev/cpu_dma_latency)"
fi
ab_summary off on off2 on2 qoff qon
cd $OUT && tar czf loadgen.tgz loadgen-*.json && rm -f loadgen-*.json
cd $W && tar czf $OUT/raw.tgz metrics-*.txt serve-*.log
