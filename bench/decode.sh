#!/usr/bin/env bash
# Decode speed (called from bench/run-all; also alone): speculative decoding against plain decoding of the
# same target, in one run, through `sextant sample --draft D --draft-k K --vs-plain`. One line per draft, k
# and temperature: acceptance (proposals kept), tokens per target forward, speculative and plain tokens/s
# (wall clock, BENCH_DECODE_THREADS threads) and their ratio, and how many samples were identical (greedy:
# all must be).
# Usage: bench/decode.sh [TARGET [DRAFT...]]  (checkpoints; default: the demo's hero, drafts the demo's WSD
# rungs w32 and w64 after cooldown; `make demo` makes them). Knobs: SEXTANT, BENCH_DECODE_NEW (200 tokens
# per sample), BENCH_DECODE_N (3 samples), BENCH_DECODE_K ("1 2 4 8"), BENCH_DECODE_TEMPS ("0 1"),
# BENCH_DECODE_THREADS (1), BENCH_DECODE_PROMPT ("The President said"), BENCH_DECODE_IDS (set: the prompt is
# token ids, for models without a vocabulary).
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
