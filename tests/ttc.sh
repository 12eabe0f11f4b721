#!/usr/bin/env bash
# The test-time-compute pipeline end to end at smoke size: policy training, verifier training on the
# policy's labelled samples, every strategy, JSON and SVG outputs (the numbers are meaningless at this size).
set -u
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
SEXTANT=${SEXTANT:-./sextant} scripts/ttc-demo "$tmp/t" --smoke > "$tmp/log" 2>&1 || { cat "$tmp/log"; echo "ttc-demo --smoke failed"; exit 1; }
for f in ttc.json ttc_strategies.svg ttc_flops.svg ttc_sizes.svg verifiers/orm_head.sxt verifiers/prm_head.sxt verifiers/verifiers.json; do
    [ -s "$tmp/t/$f" ] || { echo "missing $f"; cat "$tmp/log"; exit 1; }
done
grep -q '"majority' "$tmp/t/ttc.json" || { echo "ttc.json lacks the voting strategy"; exit 1; }
# Every chart names what it shows (issue 23): the policy and the problem count.
text() { sed 's/<tspan x[^>]*>/ /g; s/<[^>]*>//g' "$1"; }   # a long title wraps onto a second line
text "$tmp/t/ttc_strategies.svg" | grep -q 'Accuracy vs samples N: policy [^ ]*checkpoint.sxt, [0-9]* problems' || { echo "strategies chart title"; exit 1; }
text "$tmp/t/ttc_sizes.svg" | grep -q 'equal inference FLOPs: [0-9]* policies, [0-9]* problems' || { echo "sizes chart title"; exit 1; }
# Every strategy has a number at every budget (beam search printed nan below N = 4 and above 16 before).
# (Columns 6 on: the strategies; the coverage fit may be nan at smoke size, where nothing is solved.)
table=$(sed -n '/^    N    tokens/,/^GFLOP/p' "$tmp/log")
[ "$(echo "$table" | wc -l)" -ge 4 ] || { echo "no strategies table"; cat "$tmp/log"; exit 1; }
if echo "$table" | awk 'NR > 1 && !/^GFLOP/ { for (i = 6; i <= NF; i++) if ($i == "nan" || $i == "-") bad = 1 } END { exit !bad }'; then
    echo "$table"; echo "a strategy without a number"; exit 1
fi
for k in '"beam_prm"' '"lookahead2_prm"' '"dvts_prm"' '"flops_per_problem"' '"test_auroc"' '"compute_optimal_per_bucket"' \
         '"equal_flops"' '"weighted_prm_flops_per_problem"' '"optimal_flops"'; do
    grep -q "$k" "$tmp/t/ttc.json" || { echo "ttc.json lacks $k"; exit 1; }
done
for k in '"orm_head"' '"prm_head"' '"auroc"' '"step_ece"' '"rollouts"'; do
    grep -q "$k" "$tmp/t/verifiers/verifiers.json" || { echo "verifiers.json lacks $k"; exit 1; }
done
# A budget where the cross-validated choice never reaches best-of-N prints '-', not nan.
if sed -n '/^compute-optimal (strategy/,/^compute-optimal per/p' "$tmp/log" | grep -qw 'nan\|nanx'; then
    sed -n '/^compute-optimal (strategy/,/^compute-optimal per/p' "$tmp/log"; echo "nan in the compute-optimal table"; exit 1
fi
# The per-bucket savings and the equal-FLOPs table are printed, one row per bucket and per budget.
grep -q '^compute-optimal per difficulty bucket' "$tmp/log" && grep -q '^equal inference FLOPs across the policy ladder' "$tmp/log" ||
    { echo "no per-bucket or equal-FLOPs table"; cat "$tmp/log"; exit 1; }
[ "$(sed -n '/^equal inference FLOPs/,/^verifiers on/p' "$tmp/log" | grep -c '^ *[0-9]')" -eq 4 ] || { echo "equal-FLOPs rows"; exit 1; }
# A value head on a policy it was not trained on is refused with a message, not run.
out=$("$SEXTANT" ttc run --policy "$tmp/t/policy-small/checkpoint.sxt" --orm "$tmp/t/verifiers/orm_head.sxt" \
      --prm "$tmp/t/verifiers/prm_head.sxt" --out "$tmp/bad" --problems 2 --n 2 2>&1) && { echo "mismatched head accepted"; exit 1; }
echo "$out" | grep -q "value head was trained on a trunk" || { echo "mismatched head: $out"; exit 1; }
# A model of another vocabulary (not from ttc train) is refused by name, not decoded out of range (before: an
# internal error in decode.c); so are a negative temperature and zero trials.
"$SEXTANT" train --model d1-hd8-w16 --train synthetic:64 --batch 2 --seq 8 --steps 2 --quiet --out "$tmp/lm" > /dev/null 2>&1 ||
    { echo "train the other model"; exit 1; }
out=$("$SEXTANT" ttc run --policy "$tmp/lm/checkpoint.sxt" --orm "$tmp/lm/checkpoint.sxt" --prm "$tmp/lm/checkpoint.sxt" \
      --out "$tmp/bad" --problems 2 --n 2 2>&1) && { echo "a 64-token model accepted"; exit 1; }
echo "$out" | grep -q "lm/checkpoint.sxt: a model of 64 tokens; test-time compute runs on the arithmetic task's byte-level models" ||
    { echo "another vocabulary: $out"; exit 1; }
out=$("$SEXTANT" ttc verifiers --policy "$tmp/lm/checkpoint.sxt" --out "$tmp/bad" 2>&1) && { echo "verifiers on a 64-token model"; exit 1; }
echo "$out" | grep -q "a model of 64 tokens" || { echo "verifiers, another vocabulary: $out"; exit 1; }
out=$("$SEXTANT" ttc run --policy "$tmp/t/policy-small/checkpoint.sxt" --orm "$tmp/t/verifiers/orm_head.sxt" \
      --prm "$tmp/t/verifiers/prm_head.sxt" --out "$tmp/bad" --temperature -1 2>&1) && { echo "--temperature -1 accepted"; exit 1; }
echo "$out" | grep -q -- "--temperature must be 0 or more" || { echo "--temperature -1: $out"; exit 1; }
# The beam width of a search that does not run is refused (before: ignored), even at its default value.
out=$("$SEXTANT" ttc run --policy "$tmp/t/policy-small/checkpoint.sxt" --orm "$tmp/t/verifiers/orm_head.sxt" \
      --prm "$tmp/t/verifiers/prm_head.sxt" --out "$tmp/bad" --search-max 0 --width 4 2>&1) && { echo "--width without a search accepted"; exit 1; }
echo "$out" | grep -q -- "--width is the tree search's beam width: with --search-max 0 there is no tree search" ||
    { echo "--width with --search-max 0: $out"; exit 1; }
echo "ttc.sh: ok"
