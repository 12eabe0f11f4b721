#!/usr/bin/env bash
# Decode speed (called from bench/run-all; also alone), in one run. Speeds are tokens per CPU second (the
# process's CPU time, BENCH_DECODE_THREADS threads): on a shared, busy machine it moves far less with the load
# than wall time does. Each comparison runs its two sides in turn, BENCH_DECODE_ROUNDS rounds, and prints the
# median and best of each side and the ratio of the medians.
# 0. With BENCH_DECODE_BASE=OTHER_SEXTANT (e.g. main's binary before a change): plain greedy decoding by this
#    binary against that one, per model (the target and the drafts), and whether their texts agree;
# 1. speculative decoding against plain decoding of the same target, through `sextant sample --draft D
#    --draft-k K --vs-plain` (both in one process, so each round is one interleaved pair). One line per draft,
#    k and temperature: acceptance (proposals kept), tokens per target forward, speculative and plain
#    tokens/s and the ratio (median and best over the rounds), and how many samples were identical (greedy:
#    all must be);
# 2. int8 weights (`sample --int8`) against fp32, per model: greedy decoding of one sample, and whether the
#    greedy texts agree; then, with a validation shard (BENCH_DECODE_VAL, default data/demo/val.shard when
#    present; "none": skip), `eval --val-loss --int8`: fp32 and int8 validation loss per model.
# Usage: bench/decode.sh [TARGET [DRAFT...]]  (checkpoints; default: the demo's hero, drafts the demo's cosine
# rungs w16, w32 and w48, the best drafts measured; `make demo` makes them). Measured on this machine
# (docs/INFERENCE.md): speculative/plain at best 0.92x greedy (w16, k 1) and 0.74x at T = 1; plain decoding
# 2.65x (hero) to 3.8x (w16) faster than before the decoder packed its weights once; int8 1.22x on the hero.
# Knobs: SEXTANT, BENCH_DECODE_BASE,
# BENCH_DECODE_NEW (200 tokens per sample), BENCH_DECODE_N (3 samples), BENCH_DECODE_K ("1 2 3"),
# BENCH_DECODE_TEMPS ("0 1"), BENCH_DECODE_THREADS (1), BENCH_DECODE_PROMPT ("The President said"),
# BENCH_DECODE_IDS (set: the prompt is token ids, for models without a vocabulary), BENCH_DECODE_ROUNDS (3),
# BENCH_DECODE_VAL, BENCH_DECODE_SKIP (words: spec int8).
set -euo pipefail
SEXTANT=${SEXTANT:-./sextant}
TARGET=${1:-runs/demo/hero/checkpoint.sxt}
shift || true
DRAFTS=("$@")
[ ${#DRAFTS[@]} -gt 0 ] || DRAFTS=(runs/demo-cosine/w16-s1/checkpoint.sxt runs/demo-cosine/w32-s1/checkpoint.sxt
                                  runs/demo-cosine/w48-s1/checkpoint.sxt)
for f in "$TARGET" "${DRAFTS[@]}"; do
    [ -f "$f" ] || { echo "bench/decode.sh: no checkpoint $f (make demo trains the default ones)" >&2; exit 2; }
done
NEW=${BENCH_DECODE_NEW:-200} N=${BENCH_DECODE_N:-3} KS=${BENCH_DECODE_K:-"1 2 3"} TEMPS=${BENCH_DECODE_TEMPS:-"0 1"}
PROMPT=${BENCH_DECODE_PROMPT:-"The President said"}
ROUNDS=${BENCH_DECODE_ROUNDS:-3}
BASE=${BENCH_DECODE_BASE:-}
ids=(); [ -n "${BENCH_DECODE_IDS:-}" ] && ids=(--ids)
export OMP_NUM_THREADS=${BENCH_DECODE_THREADS:-1}
SKIP=" ${BENCH_DECODE_SKIP:-} "
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
# "median best" of the numbers given.
median_best() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%s %s\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[NR] }'
}

# plain BIN CKPT TAG [--int8]: generated tokens per CPU second of one greedy sample, from `sample --verbose`
# ("P positions decoded (Q prompt, ...), ... S s CPU, ...: ... R per CPU second"; a binary from before that
# rate was printed: (P - Q) / S, S to 10 ms); its text goes to $work/out.TAG.
plain() {
    "$1" sample --checkpoint "$2" ${4:-} --temperature 0 --max-new "$NEW" --prompt "$PROMPT" "${ids[@]}" --verbose \
        2>"$work/err" >"$work/out.$3" || { echo "bench/decode.sh: sample failed: $(cat "$work/err")" >&2; exit 1; }
    awk '/positions decoded/ { for (i = 1; i <= NF; i++) { if ($i == "CPU," && $(i - 1) == "s") s = $(i - 2)
                                                           if ($i == "per" && $(i + 1) == "CPU") r = $(i - 1) }
                               print r != "" ? r : ($1 - substr($4, 2)) / s }' "$work/err"
}

# compare NAME_A NAME_B CKPT CMD_A... -- CMD_B...: ROUNDS rounds of "plain" A then B on CKPT; one table row.
compare() {
    local m=$1 a=() b=() r mb_a mb_b same=no
    for r in $(seq "$ROUNDS"); do a+=("$(plain "$2" "$m" a $4)"); b+=("$(plain "$3" "$m" b $5)"); done
    cmp -s "$work/out.a" "$work/out.b" && same=yes
    mb_a=$(median_best "${a[@]}") mb_b=$(median_best "${b[@]}")
    awk -v m="$m" -v a="$mb_a" -v b="$mb_b" -v s="$same" 'BEGIN { split(a, x, " "); split(b, y, " ")
        printf "%-44s %9.0f %9.0f %9.0f %9.0f %7.2fx %10s\n", m, x[1], x[2], y[1], y[2], x[1] / y[1], s }'
}

if [ -n "$BASE" ]; then
    echo "# plain greedy decoding, $SEXTANT against $BASE: 1 sample x $NEW tokens, $ROUNDS rounds in turn, $OMP_NUM_THREADS thread(s), tokens per CPU second, load $(load)"
    printf '%-44s %9s %9s %9s %9s %8s %10s\n' model new_med new_best base_med base_best ratio same_text
    for m in "$TARGET" "${DRAFTS[@]}"; do compare "$m" "$SEXTANT" "$BASE" "" ""; done
    echo
fi

if [[ "$SKIP" != *" spec "* ]]; then
echo "# speculative decoding: target $TARGET, $N samples x $NEW tokens, $ROUNDS rounds, $OMP_NUM_THREADS thread(s), tokens per CPU second, load $(load)"
printf '%-44s %3s %5s %10s %8s %9s %9s %8s %8s %9s\n' draft k temp acceptance tok/fwd spec_med plain_med ratio best identical
for d in "${DRAFTS[@]}"; do
    for t in $TEMPS; do
        for k in $KS; do
            : >"$work/rounds"
            for r in $(seq "$ROUNDS"); do
                out=$("$SEXTANT" sample --checkpoint "$TARGET" --draft "$d" --draft-k "$k" --temperature "$t" --n "$N" \
                      --max-new "$NEW" --prompt "$PROMPT" "${ids[@]}" --vs-plain 2>&1 >/dev/null) ||
                    { echo "bench/decode.sh: sample failed: $out" >&2; exit 1; }
                # "speculative: ... (acceptance A; ...), F tokens per target forward, ... = S per CPU second)"
                # "plain: ... = P per CPU second); speculative/plain ...; I of N samples identical"
                echo "$out" | awk '
                    /^speculative:/ { for (i = 1; i <= NF; i++) { if ($i == "(acceptance") a = $(i + 1) + 0
                                                                 if ($i == "tokens" && $(i + 1) == "per") f = $(i - 1)
                                                                 if ($i == "CPU" && $(i + 1) == "second)") s = $(i - 2) } }
                    /^plain:/ { for (i = 1; i <= NF; i++) { if ($i == "CPU" && $(i + 1) == "second);") p = $(i - 2)
                                                            if ($i == "identical") id = $(i - 4) "/" $(i - 2) } }
                    END { if (s == "" || p == "") exit 1; print a, f, s, p, s / p, id }' >>"$work/rounds" ||
                    { echo "bench/decode.sh: unexpected output: $out" >&2; exit 1; }
            done
            mb_s=$(median_best $(cut -d' ' -f3 "$work/rounds")) mb_p=$(median_best $(cut -d' ' -f4 "$work/rounds"))
            mb_r=$(median_best $(cut -d' ' -f5 "$work/rounds"))
            # acceptance and tokens per forward: the same every round (a fixed seed); identical: the worst round.
            awk -v d="$d" -v k="$k" -v t="$t" -v s="$mb_s" -v p="$mb_p" -v r="$mb_r" '
                { a = $1; f = $2; split($6, x, "/"); if (id == "" || x[1] < worst) { worst = x[1]; id = $6 } }
                END { split(s, S, " "); split(p, P, " "); split(r, R, " ")
                      printf "%-44s %3d %5s %10.3f %8.2f %9.0f %9.0f %7.2fx %7.2fx %9s\n", d, k, t, a, f, S[1], P[1], R[1], R[2], id }' \
                "$work/rounds"
        done
    done
done
fi

[[ "$SKIP" == *" int8 "* ]] && exit 0
VAL=${BENCH_DECODE_VAL:-}
[ -z "$VAL" ] && [ -f data/demo/val.shard ] && VAL=data/demo/val.shard
[ "$VAL" = none ] && VAL=
echo
echo "# int8 weights (per-channel scales) against fp32: greedy, 1 sample x $NEW tokens, $ROUNDS rounds in turn, $OMP_NUM_THREADS thread(s), tokens per CPU second, load $(load)"
printf '%-44s %9s %9s %9s %9s %8s %10s\n' model int8_med int8_best fp32_med fp32_best ratio same_text
for m in "$TARGET" "${DRAFTS[@]}"; do compare "$m" "$SEXTANT" "$SEXTANT" --int8 ""; done
if [ -n "$VAL" ]; then
    echo "# validation loss, fp32 and int8 weights ($VAL)"
    for m in "$TARGET" "${DRAFTS[@]}"; do
        echo "$m: $("$SEXTANT" eval --val-loss --int8 --val "$VAL" "$m")"
    done
fi
