# scripts/device/run-env.sh - sourced by a call script on the lent GPU machine, from the repository root: our
# binaries and libraries (.carry/env.sh), LAYAD_COMMIT from .carry/commit, B (the binaries) and W (the run folder,
# /tmp/layad-run unless set), and the tiny and English-large checkpoints written into W.
# shellcheck disable=SC1091
source .carry/env.sh
export LAYAD_COMMIT; LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=${W:-/tmp/layad-run}; mkdir -p "$W"
"$B/layad-dev" mkmodel --preset tiny --out "$W/tiny" > /dev/null
"$B/layad-dev" mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json \
  --out "$W/english" > /dev/null
