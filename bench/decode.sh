#!/usr/bin/env bash
# Decode speed (called from bench/run-all; also alone), in one run:
# 1. speculative decoding against plain decoding of the same target, through `sextant sample --draft D
#    --draft-k K --vs-plain`. One line per draft, k and temperature: acceptance (proposals kept), tokens per
#    target forward, speculative and plain tokens/s (wall clock, BENCH_DECODE_THREADS threads) and their
#    ratio, and how many samples were identical (greedy: all must be);
# 2. int8 weights (`sample --int8`) against fp32, per model (the target and the drafts): greedy decoding of
#    one sample, BENCH_DECODE_ROUNDS rounds of fp32 and int8 in turn, median tokens/s of each and the ratio,
#    and whether the greedy texts agree; then, with a validation shard (BENCH_DECODE_VAL, default
#    data/demo/val.shard when present; "none": skip), `eval --val-loss --int8`: fp32 and int8 validation loss per model.
# Usage: bench/decode.sh [TARGET [DRAFT...]]  (checkpoints; default: the demo's hero, drafts the demo's WSD
# rungs w32 and w64 after cooldown; `make demo` makes them). Knobs: SEXTANT, BENCH_DECODE_NEW (200 tokens
# per sample), BENCH_DECODE_N (3 samples), BENCH_DECODE_K ("1 2 4 8"), BENCH_DECODE_TEMPS ("0 1"),
# BENCH_DECODE_THREADS (1), BENCH_DECODE_PROMPT ("The President said"), BENCH_DECODE_IDS (set: the prompt is
# token ids, for models without a vocabulary), BENCH_DECODE_ROUNDS (3), BENCH_DECODE_VAL, BENCH_DECODE_SKIP
# (words: spec int8).
set -euo pipefail
SEXTANT=${SEXTANT:-./sextant}
TARGET=${1:-runs/demo/hero/checkpoint.sxt}
shift || true
DRAFTS=("$@")
[ ${#DRAFTS[@]} -gt 0 ] || DRAFTS=(runs/demo-wsd/w32-s1-b0/checkpoint.sxt runs/demo-wsd/w64-s1-b0/checkpoint.sxt)
for f in "$TARGET" "${DRAFTS[@]}"; do
    [ -f "$f" ] || { echo "bench/decode.sh: no checkpoint $f (make demo trains the default ones)" >&2; exit 2; }
done
NEW=${BENCH_DECODE_NEW:-200} N=${BENCH_DECODE_N:-3} KS=${BENCH_DECODE_K:-"1 2 4 8"} TEMPS=${BENCH_DECODE_TEMPS:-"0 1"}
PROMPT=${BENCH_DECODE_PROMPT:-"The President said"}
ids=(); [ -n "${BENCH_DECODE_IDS:-}" ] && ids=(--ids)
export OMP_NUM_THREADS=${BENCH_DECODE_THREADS:-1}
SKIP=" ${BENCH_DECODE_SKIP:-} "
if [[ "$SKIP" != *" spec "* ]]; then
echo "# speculative decoding: target $TARGET, $N samples x $NEW tokens, $OMP_NUM_THREADS thread(s), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-44s %3s %5s %10s %9s %10s %10s %7s %9s\n' draft k temp acceptance tok/fwd spec_tok/s plain_tok/s ratio identical
for d in "${DRAFTS[@]}"; do
    for t in $TEMPS; do
        for k in $KS; do
            out=$("$SEXTANT" sample --checkpoint "$TARGET" --draft "$d" --draft-k "$k" --temperature "$t" --n "$N" \
                  --max-new "$NEW" --prompt "$PROMPT" "${ids[@]}" --vs-plain 2>&1 >/dev/null) ||
                { echo "bench/decode.sh: sample failed: $out" >&2; exit 1; }
            # "speculative: ... (acceptance A), F tokens per target forward, ... = S tokens/s"
            # "plain: ... = P tokens/s; speculative/plain Rx (...); I of N samples identical"
            echo "$out" | awk -v d="$d" -v k="$k" -v t="$t" '
                /^speculative:/ { for (i = 1; i <= NF; i++) { if ($i == "(acceptance") a = $(i + 1) + 0
                                                             if ($i == "tokens" && $(i + 1) == "per") f = $(i - 1)
                                                             if ($i == "tokens/s") s = $(i - 1) } }
                /^plain:/ { for (i = 1; i <= NF; i++) { if ($i == "tokens/s;") p = $(i - 1)
                                                        if ($i == "identical") id = $(i - 4) "/" $(i - 2) } }
                END { if (s == "" || p == "") exit 1
                      printf "%-44s %3d %5s %10.3f %9.2f %10.1f %10.1f %6.2fx %9s\n", d, k, t, a, f, s, p, s / p, id }' ||
                { echo "bench/decode.sh: unexpected output: $out" >&2; exit 1; }
        done
    done
done
fi

[[ "$SKIP" == *" int8 "* ]] && exit 0
ROUNDS=${BENCH_DECODE_ROUNDS:-3}
VAL=${BENCH_DECODE_VAL:-}
[ -z "$VAL" ] && [ -f data/demo/val.shard ] && VAL=data/demo/val.shard
[ "$VAL" = none ] && VAL=
# tok_s CKPT [--int8]: generated tokens/s and the text of one greedy sample ("positions decoded ... X generated tokens/s").
tok_s() {
    "$SEXTANT" sample --checkpoint "$1" ${2:-} --temperature 0 --max-new "$NEW" --prompt "$PROMPT" "${ids[@]}" --verbose \
        2>"$work/err" >"$work/out${2:-}" || { echo "bench/decode.sh: sample failed: $(cat "$work/err")" >&2; exit 1; }
    sed -n 's/.* \([0-9.]*\) generated tokens\/s.*/\1/p' "$work/err"
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo
echo "# int8 weights (per-channel scales) against fp32: greedy, 1 sample x $NEW tokens, $ROUNDS rounds, $OMP_NUM_THREADS thread(s), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-44s %11s %11s %7s %10s\n' model fp32_tok/s int8_tok/s ratio same_text
for m in "$TARGET" "${DRAFTS[@]}"; do
    f=() q=()
    for r in $(seq "$ROUNDS"); do f+=("$(tok_s "$m")"); q+=("$(tok_s "$m" --int8)"); done
    same=no; cmp -s "$work/out" "$work/out--int8" && same=yes
    median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
    mf=$(median "${f[@]}") mq=$(median "${q[@]}")
    awk -v m="$m" -v f="$mf" -v q="$mq" -v s="$same" 'BEGIN { printf "%-44s %11.1f %11.1f %6.2fx %10s\n", m, f, q, q / f, s }'
done
if [ -n "$VAL" ]; then
    echo "# validation loss, fp32 and int8 weights ($VAL)"
    for m in "$TARGET" "${DRAFTS[@]}"; do
        echo "$m: $("$SEXTANT" eval --val-loss --int8 --val "$VAL" "$m")"
    done
fi
