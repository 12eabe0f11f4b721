#!/usr/bin/env bash
# int8 weight-only inference on a small trained model: `eval --val-loss` reproduces the training run's last
# validation loss (same windows), `--int8` keeps it within 1% of fp32, and `sample --int8` decodes.
set -u
S=${SEXTANT:-./sextant}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for i in $(seq 1 300); do echo "Line $i: the quick brown fox jumps over the lazy dog, and the cat sat on mat $((i % 7))."; done > "$tmp/c.txt"
"$S" tokenize train --vocab-size 300 --out "$tmp/v.sxv" "$tmp/c.txt" 2>/dev/null || fail "tokenize train"
"$S" tokenize shard --vocab "$tmp/v.sxv" --out "$tmp/t.shard" "$tmp/c.txt" 2>/dev/null || fail "tokenize shard"
"$S" train --model d1-w64-hd16 --train "$tmp/t.shard" --val "$tmp/t.shard" --batch 4 --seq 32 --steps 80 --lr 0.01 \
    --eval-batches 4 --quiet --out "$tmp/run" 2>/dev/null || fail "train"
want=$(grep val_loss "$tmp/run/metrics.jsonl" | tail -1 | sed 's/.*"val_loss": *\([0-9.]*\).*/\1/')
out=$("$S" eval --val-loss --batches 4 --batch 4 --seq 32 "$tmp/run/checkpoint.sxt" 2>&1) || fail "eval --val-loss: $out"
got=$(echo "$out" | sed -n 's/^val_loss \([0-9.]*\) on 4 batches of 4 x 32 tokens of .*/\1/p')
awk -v a="$got" -v b="$want" 'BEGIN { exit !(a != "" && b > 0 && a - b < 1e-4 && b - a < 1e-4) }' ||
    fail "eval --val-loss $got, the run's last val_loss $want: $out"
out=$("$S" eval --val-loss --int8 --batches 4 --batch 4 --seq 32 "$tmp/run/checkpoint.sxt" 2>&1) || fail "eval --int8: $out"
echo "$out"
read -r fp q rel < <(echo "$out" | sed -n 's/^val_loss fp32 \([0-9.]*\) int8 \([0-9.]*\) (\([-+0-9.]*\)%; int8 weights .*/\1 \2 \3/p')
[ "$fp" = "$got" ] || fail "the fp32 loss beside int8 ($fp) is not the plain one ($got)"
awk -v f="$fp" -v q="$q" -v r="$rel" 'BEGIN { d = (q - f) / f; exit !(f > 0 && q != f && d < 0.01 && d > -0.01 && (d * 100 - r) ^ 2 < 0.0025) }' ||
    fail "int8 loss $q not within 1% of fp32 $fp (or not different, or the printed % is wrong): $out"
"$S" sample --checkpoint "$tmp/run/checkpoint.sxt" --int8 --prompt "The quick" --max-new 8 --temperature 0 --verbose \
    2>"$tmp/s.err" >/dev/null || fail "sample --int8: $(cat "$tmp/s.err")"
grep -Eq 'generated tokens/s, [0-9.]+ per CPU second \(int8 weights\)$' "$tmp/s.err" || fail "sample --int8 --verbose: $(cat "$tmp/s.err")"
out=$("$S" eval "$tmp/run/checkpoint.sxt" 2>&1) && fail "eval with neither --task nor --val-loss"
echo "$out" | grep -q -- "--task is required (cloze, choice, choice_pmi or arith), or --val-loss" || fail "eval without --task: $out"
# A run trained with a relative --val, evaluated from another directory: told to give --val (before: "cannot
# open shard t.shard: No such file or directory").
(cd "$tmp" && "$S" train --model d1-w64-hd16 --train t.shard --val t.shard --batch 4 --seq 32 --steps 2 --quiet --out rel 2>/dev/null) ||
    fail "train with relative paths"
out=$("$S" eval --val-loss --batches 1 --batch 4 --seq 32 "$tmp/rel/checkpoint.sxt" 2>&1) && fail "eval found a relative --val"
echo "$out" | grep -q "the run's validation data t.shard is not there from this directory .*: give --val" || fail "relative --val: $out"
out=$("$S" sample --checkpoint "$tmp/rel/checkpoint.sxt" --prompt "the" --max-new 2 2>&1) && fail "sample found a relative vocabulary"
echo "$out" | grep -q "the run's vocabulary ./v.sxv is not there from this directory .*: give --vocab" || fail "relative vocabulary: $out"

[ $fails -eq 0 ] && echo "int8: all checks passed"
exit $((fails > 0))
