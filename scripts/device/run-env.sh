# scripts/device/run-env.sh - sourced by a call script on the lent GPU machine, from the repository root: our
# binaries and libraries (.carry/env.sh), LAYAD_COMMIT from .carry/commit, B (the binaries) and W (the run folder,
# /tmp/layad-run unless set), and the tiny and English-large checkpoints written into W; mkmodel_mmbert DIR writes
# the mmBERT-base geometry when a call asks for it.
# shellcheck disable=SC1091
source .carry/env.sh
export LAYAD_COMMIT; LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=${W:-/tmp/layad-run}; mkdir -p "$W"
"$B/layad-dev" mkmodel --preset tiny --out "$W/tiny" > /dev/null
"$B/layad-dev" mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json \
  --out "$W/english" > /dev/null
# mkmodel_mmbert DIR: the mmBERT-base geometry with random weights and the ModernBERT tokenizer (the only real
# tokenizer carried), its special tokens written into the tokenizer's and the encoder's configs (as
# bench/results/experiments/bulk-x/call3.sh first did).
mkmodel_mmbert() {
  "$B/layad-dev" mkmodel --preset mmbert-base --tokenizer .carry/shared/modernbert-tokenizer.json --out "$1" > /dev/null 2>&1
  cat > "$1/tokenizer/tokenizer_config.json" <<'JSON'
{"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]", "unk_token": "[UNK]", "model_max_length": 8192, "tokenizer_class": "PreTrainedTokenizerFast"}
JSON
  sed -i 's/"pad_token_id": 0/"pad_token_id": 50283/; s/"eos_token_id": 1/"eos_token_id": 50282/; s/"bos_token_id": 2/"bos_token_id": 50281/; s/"cls_token_id": 2/"cls_token_id": 50281/; s/"sep_token_id": 1/"sep_token_id": 50282/' "$1/encoder/config.json"
}
