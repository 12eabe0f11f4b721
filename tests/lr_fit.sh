#!/usr/bin/env bash
# sextant lr-fit: the best peak LR among finished runs. Four copies of one real run, given peak LRs 0.005,
# 0.01, 0.02, 0.04 and final losses on the parabola 3 + 0.05 (ln(LR / 0.012))^2: the fit through the best
# (0.01) and its two neighbours puts the vertex at 0.012 exactly, whatever the fourth point says. Then the
# refusals: too few runs, another model, another schedule (another seed is fine), an unfinished run, losses that do not curve upward, a bad --ref.
set -u
S=${SEXTANT:-./sextant}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

"$S" train --model d1-hd16-w32 --train synthetic:64 --batch 2 --seq 8 --steps 2 --quiet --out "$tmp/base" >/dev/null 2>&1 ||
    fail "train the template run"
# copy LR LOSS NAME: the template with optimizer.lr = LR and the final validation loss LOSS
copy() {
    cp -r "$tmp/base" "$tmp/$3"
    jq --argjson lr "$1" '.optimizer.lr = $lr' "$tmp/base/config.json" > "$tmp/$3/config.json"
    jq -c --argjson l "$2" 'if has("val_loss") then .val_loss = $l else . end' "$tmp/base/metrics.jsonl" > "$tmp/$3/metrics.jsonl"
}
loss() { awk -v lr="$1" -v c="$2" 'BEGIN { x = log(lr / 0.012); printf "%.10f", 3 + c * x * x }'; }
for lr in 0.005 0.01 0.02 0.04; do copy "$lr" "$(loss $lr 0.05)" "r$lr"; done

out=$("$S" lr-fit "$tmp"/r0.005 "$tmp"/r0.01 "$tmp"/r0.02 "$tmp"/r0.04 --ref 0.01 2>&1) || fail "lr-fit: $out"
echo "$out" | grep -q "best LR 0.012 (standard error of its ln" || fail "the vertex is not 0.012: $out"
echo "$out" | grep -q "; 1.20x 0.01$" || fail "no multiple of --ref: $out"
echo "$out" | grep -q "peak LR 0.04 .*final validation loss $(printf %.4f "$(loss 0.04 0.05)")" || fail "the runs' points are not listed: $out"

out=$("$S" lr-fit "$tmp"/r0.005 "$tmp"/r0.01 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "give at least three finished runs" || fail "two runs (rc $rc): $out"
jq '.model = "d1-hd16-w48"' "$tmp/r0.02/config.json" > "$tmp/w48.json" && cp "$tmp/w48.json" "$tmp/r0.02/config.json"
out=$("$S" lr-fit "$tmp"/r0.005 "$tmp"/r0.01 "$tmp"/r0.02 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "r0.02: d1-hd16-w48 on 32 tokens, but the first run is d1-hd16-w32 on 32 tokens" ||
    fail "another model (rc $rc): $out"
for lr in 0.005 0.01; do copy "$lr" "$(loss $lr 0.05)" "s$lr"; done
jq '.flags.schedule = "wsd" | .flags.seed = 7' "$tmp/s0.01/config.json" > "$tmp/wsd.json" && cp "$tmp/wsd.json" "$tmp/s0.01/config.json"
out=$("$S" lr-fit "$tmp"/s0.005 "$tmp"/s0.01 "$tmp"/r0.04 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q 's0.01: trained with other settings than the first run: --schedule "wsd" (the first run: "' &&
    ! echo "$out" | grep -q -- "--seed" || fail "another schedule (rc $rc): $out"
rm "$tmp/r0.04/DONE"
out=$("$S" lr-fit "$tmp"/r0.005 "$tmp"/r0.01 "$tmp"/r0.04 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "r0.04: the run has not finished" || fail "an unfinished run (rc $rc): $out"
for lr in 0.005 0.01 0.02; do copy "$lr" "$(loss $lr -0.05)" "n$lr"; done
out=$("$S" lr-fit "$tmp"/n0.005 "$tmp"/n0.01 "$tmp"/n0.02 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "do not curve upward" || fail "a parabola opening downward (rc $rc): $out"
out=$("$S" lr-fit "$tmp"/r0.005 "$tmp"/r0.01 "$tmp"/r0.02 --ref -1 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q -- "--ref: give a positive LR" || fail "--ref -1 (rc $rc): $out"

echo "lr_fit.sh: $fails failed"
[ $fails -eq 0 ]
