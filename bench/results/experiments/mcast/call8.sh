# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the
# session start's daemon as layad-base (ff83903): layad alone on bench/mixed/peers.sh's fixed
# requests (Python client over loopback), the session's start against its end, base / new / base /
# new, because the four-system call (../../h200/peers-h200.json's successor, 3519e38) showed layad
# 4-7% slower than the last session's call on another machine
export OUT; source .carry/env.sh; LAYAD_LIBS=$LD_LIBRARY_PATH
BIN=$PWD/.carry/bin; W=/tmp/peers-run; mkdir -p $W
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
env -u LD_LIBRARY_PATH python3 bench/mixed/gen_fixed.py --repeat 40 --out $W/requests.jsonl
for v in base new base2 new2; do b=$BIN/layad; case $v in base*) b=$BIN/layad-base;; esac
  timeout 100 env -u LD_LIBRARY_PATH PYTHONUNBUFFERED=1 python3 bench/mixed/run_layad.py --requests $W/requests.jsonl \
    --port 18191 --out-dir $W/out-$v --duration 3 --concurrency 1 --ready-timeout 90 --label "H200, layad $v, loopback" \
    --launch "env LD_LIBRARY_PATH=$LAYAD_LIBS $b serve --model $W/english --device cuda --dtype fp16 --port 18191 --log-requests false" > $W/run-$v.log 2>&1
  echo "== $v exit $?"; env -u LD_LIBRARY_PATH python3 bench/mixed/peers_report.py --dir $W/out-$v --meta $W/requests.jsonl.meta.json --out $OUT/layad-fixed-$v.json | tail -2
done
