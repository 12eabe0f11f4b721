#!/usr/bin/env bash
# bench/seed_batch_bound.sh: how much could training S seeds of a demo rung in one process (issue 22,
# "seed-batched rungs") gain over separate one-thread runs? S seeds share no weights and no data order, so
# batched they do at least the arithmetic of one model at S x the batch; one model's tokens per CPU-second
# at batch S x B over those at batch B therefore bound the gain. Prints that ratio per width (the demo
# ladder's rungs d2-hd16-w{16,32,64}, vocab 2048, seq 128, batch 8 and S = 2, 4), from CPU time (user +
# sys), not wall time, so that other work on the machine matters less; each case is the best of ROUNDS,
# and its startup is removed by differencing a short and a long run. Needs make demo (data/demo).
# Knobs: SEXTANT, WIDTHS ("16 32 64"), ROUNDS (3), STEPS_LO (40), STEPS_HI (200).
set -euo pipefail
S=${SEXTANT:-./sextant}
[ -f data/demo/train.shard ] || { echo "seed_batch_bound: run make demo first (it makes data/demo/*.shard)" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
lo=${STEPS_LO:-40} hi=${STEPS_HI:-200}

cpu() {   # WIDTH BATCH STEPS -> CPU seconds of one training run, the best of ROUNDS
    local best=""
    for _ in $(seq "${ROUNDS:-3}"); do
        /usr/bin/time -f "%U %S" -o "$tmp/t" "$S" train --model "d2-hd16-w$1" --train data/demo/train.shard \
            --val data/demo/val.shard --batch "$2" --seq 128 --steps "$3" --threads 1 --eval-batches 1 --quiet \
            --out "$tmp/r" > /dev/null 2>&1
        rm -rf "$tmp/r"
        best=$(awk -v b="$best" '{ t = $1 + $2; print (b == "" || t < b) ? t : b }' "$tmp/t")
    done
    echo "$best"
}

printf '%-6s %-6s %14s %8s\n' width batch "tok/CPU-s" "vs b8"
for w in ${WIDTHS:-16 32 64}; do
    base=""
    for b in 8 16 32; do
        rate=$(awk -v l="$(cpu "$w" "$b" "$lo")" -v h="$(cpu "$w" "$b" "$hi")" -v n=$((hi - lo)) -v b="$b" \
               'BEGIN { printf "%.0f", n * b * 128 / (h - l) }')
        base=${base:-$rate}
        printf '%-6s %-6s %14s %7.2fx\n' "$w" "$b" "$rate" "$(awk -v r="$rate" -v b="$base" 'BEGIN { print r / b }')"
    done
done
