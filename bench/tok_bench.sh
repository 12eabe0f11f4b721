#!/usr/bin/env bash
# Tokenizer benchmark (called from bench/run-all): encodes the default training corpus with the GPT-2
# vocabulary by sextant and by gpt-tokenizer 4.0.0 under node, side by side in one run, checks the ids are
# identical, and reports MB/s of both and their ratio (both single-threaded); then times training an
# 8192-token BPE vocabulary on the same corpus. Usage: bench/tok_bench.sh [BUILD_DIR]  (SEXTANT: the binary)
set -euo pipefail
BUILD=${1:-build}
SEXTANT=${SEXTANT:-./sextant}
DATA=${SEXTANT_DATA:-data}
scripts/fetch-data "$DATA"
work="$BUILD/bench/tok"
mkdir -p "$work"
pkg="$work/gpt-tokenizer"
[ -f "$pkg/package.json" ] || { mkdir -p "$pkg" && tar -xzf "$DATA/npm/gpt-tokenizer-4.0.0.tgz" -C "$pkg" --strip-components=1; }
corpus="$DATA/corpus/train.txt"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"

read -r js_bytes js_tokens js_s < <(node bench/tok_gpt_tokenizer.js "$pkg" r50k_base "$corpus" "$work/ids.js.txt")
sx_line=$(OMP_NUM_THREADS=1 "$SEXTANT" tokenize encode --vocab "$DATA/vocab/gpt2" --stats \
          --out "$work/ids.sx.txt" "$corpus" 2>&1 >/dev/null)
# "encoded B bytes into N tokens in S s: X MB/s"
read -r sx_bytes sx_tokens sx_s < <(echo "$sx_line" | awk '{print $2, $5, $8}')
if cmp -s "$work/ids.sx.txt" "$work/ids.js.txt"; then same=yes; else same=NO; fi
awk -v b="$js_bytes" -v n="$js_tokens" -v js="$js_s" -v sx="$sx_s" -v nsx="$sx_tokens" -v same="$same" 'BEGIN {
    printf "tokenize encode  %-36s %8.1f MB  %8d tokens  gpt-tokenizer %6.2f MB/s  sextant %6.2f MB/s  ratio %5.2fx  ids identical: %s\n",
           "GPT-2 vocab, default corpus, 1 thread", b / 1e6, nsx, b / 1e6 / js, b / 1e6 / sx, js / sx, same }'
[ "$same" = yes ] || { echo "tokenize encode: ids differ from gpt-tokenizer (see $work/ids.*.txt)" >&2; exit 1; }

start=$(date +%s.%N)
train_line=$("$SEXTANT" tokenize train --vocab-size 8192 --out "$work/bpe8192.sxv" "$corpus" 2>&1)
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v line="$train_line" 'BEGIN {
    printf "tokenize train   %-36s %8.2f s  (limit 60 s)  [%s]\n", "8192-token BPE, default corpus", e - s, line }'
