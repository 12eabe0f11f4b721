#!/usr/bin/env bash
# Extra cross-entropy targets end to end (train --mtp, --prefix-aux; ladder keys mtp, prefix_aux): train_loss
# stays the next-token loss (step 1 equals a plain run's), the extra term and its weights are logged apart and
# reach zero at --aux-end, the prefix map comes from the vocabulary beside the shard or from --prefix-vocab
# (sextant's own, GPT-2's directory, a tiktoken rank file), and bad settings are refused with a hint.
set -u
S=$(realpath "${SEXTANT:-./sextant}")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

for i in $(seq 400); do echo "the banana and the bananas, a band of bandits banned $i bandanas"; done > "$tmp/text.txt"
"$S" tokenize train --vocab-size 300 --out "$tmp/v.sxv" "$tmp/text.txt" 2>/dev/null || fail "vocabulary"
"$S" tokenize shard --vocab "$tmp/v.sxv" --out "$tmp/s.bin" "$tmp/text.txt" 2>/dev/null || fail "shard"

common=(--model d1-w32-hd8 --train "$tmp/s.bin" --steps 8 --batch 2 --seq 32 --threads 1 --quiet)
"$S" train "${common[@]}" --out "$tmp/plain" 2>/dev/null || fail "plain run"
"$S" train "${common[@]}" --mtp 2 --prefix-aux 0.25 --aux-end 0.5 --out "$tmp/aux" 2>/dev/null || fail "run with extra targets"
first() { jq -r "select(.step == $2) | $3" "$1/metrics.jsonl"; }
[ "$(first "$tmp/plain" 1 .train_loss)" = "$(first "$tmp/aux" 1 .train_loss)" ] ||
    fail "step 1's train_loss must be the next-token loss: $(first "$tmp/plain" 1 .train_loss) vs $(first "$tmp/aux" 1 .train_loss)"
[ "$(first "$tmp/plain" 8 .train_loss)" != "$(first "$tmp/aux" 8 .train_loss)" ] || fail "the extra targets changed nothing"
[ "$(first "$tmp/aux" 1 '.extra_w | @csv')" = "0.5,0.25,0.25" ] || fail "initial weights: $(first "$tmp/aux" 1 .extra_w)"
awk -v l="$(first "$tmp/aux" 1 .extra_loss)" 'BEGIN { exit !(l > 1) }' || fail "step 1's extra loss: $(first "$tmp/aux" 1 .extra_loss)"
# --aux-end 0.5 of 8 steps: step 5 (progress 0.5) onwards trains the plain loss only.
[ "$(first "$tmp/aux" 5 '[.extra_loss, (.extra_w | add)] | @csv')" = "0,0" ] || fail "weights at --aux-end: $(first "$tmp/aux" 5 .extra_w)"
[ "$(jq -r 'has("extra_loss")' "$tmp/plain/metrics.jsonl" | sort -u)" = "false" ] || fail "a plain run logs no extra loss"

# The prefix map of other vocabularies, given with --prefix-vocab (synthetic data has none beside it).
"$S" train --model d1-w32-hd8 --train synthetic:300 --steps 2 --prefix-aux 0.25 --quiet --out "$tmp/syn" 2> "$tmp/err" &&
    fail "--prefix-aux on synthetic data without a vocabulary"
grep -q "give --prefix-vocab" "$tmp/err" || fail "no hint: $(cat "$tmp/err")"
for voc in "$tmp/v.sxv" tests/data/gpt2 tests/data/r50k_base.tiktoken.gz; do
    rm -rf "$tmp/syn"
    "$S" train --model d1-w32-hd8 --train synthetic:300 --steps 2 --batch 2 --seq 16 --prefix-aux 0.25 --prefix-vocab "$voc" \
        --quiet --out "$tmp/syn" 2> "$tmp/err" || fail "--prefix-vocab $voc: $(cat "$tmp/err")"
done
"$S" train --model d1-w32-hd8 --train synthetic:300 --steps 2 --mtp 8 --quiet --out "$tmp/m8" 2> "$tmp/err" && fail "--mtp 8"
grep -q -- "--mtp must be between 0 (off) and 7" "$tmp/err" || fail "--mtp 8 message: $(cat "$tmp/err")"

# Ladder keys: every run of the ladder trains with them.
cat > "$tmp/x.ladder" <<SPEC
name x
train $tmp/s.bin
model d1-hd8-w{width}
widths 16
seeds 1
tokens_per_param 2
seq 16
batch 2
eval_batches 1
mtp 1
prefix_aux 0.1
aux_end 0.8
SPEC
"$S" ladder run "$tmp/x.ladder" --out "$tmp/lad" 2> "$tmp/err" || fail "ladder with extra targets: $(tail -3 "$tmp/err")"
[ "$(jq -r '.flags | [.mtp, ."prefix-aux", ."aux-end"] | @csv' "$tmp"/lad/w16-s1/config.json)" = '1,0.1,0.8' ] ||
    fail "ladder run flags: $(jq -c .flags "$tmp"/lad/w16-s1/config.json)"
[ "$(first "$tmp/lad/w16-s1" 1 '.extra_w | map(. * 1e6 | round / 1e6) | @csv')" = "0.5,0.1" ] || fail "ladder run weights"

[ $fails -eq 0 ] && echo "extra_targets: ok"
exit $((fails > 0))
