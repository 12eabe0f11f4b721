#!/usr/bin/env bash
# bench/loaded.sh: training on a shared machine (part of `make bench`; issue 23). Times the demo hero's
# shape (d2-hd16-w128, batch 8 x 128, vocab 2048, synthetic tokens) for BENCH_LOADED_STEPS steps with the
# machine idle, with one and two busy processes (shell busy loops) and with one busy process at nice 19
# (a background job the kernel gives ~1.4% of a core against a thread at nice 0, which --threads 0 should
# not make room for), under the old thread setup and the new one, in turn within the same run:
#   old: --threads <all cores>, libgomp's default wait (spin ~300000 rounds before sleeping: GOMP_SPINCOUNT=300000)
#   new: sextant's defaults (spin 30000 rounds then sleep, set by sextant itself; --threads 0 follows the free cores)
# Prints one line per load: seconds of each (best of BENCH_LOADED_ROUNDS) and old/new (the speed-up).
# Knobs: SEXTANT (./sextant), BENCH_LOADED_STEPS (150), BENCH_LOADED_MODEL (d2-hd16-w128), BENCH_LOADED_ROUNDS (1), BENCH_LOADED_BUSY
# ("0 1 1@nice19 2": N busy processes, N@niceK at nice K).
set -uo pipefail
S=${SEXTANT:-./sextant}
BUILD=${1:-build}
STEPS=${BENCH_LOADED_STEPS:-150}
MODEL=${BENCH_LOADED_MODEL:-d2-hd16-w128}
ROUNDS=${BENCH_LOADED_ROUNDS:-1}
work="$BUILD/bench/loaded"
rm -rf "$work"; mkdir -p "$work"
busy_pids=()
stop_busy() { for p in "${busy_pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; busy_pids=(); }
trap stop_busy EXIT

# run_once NAME [env...] -- [flags...]: seconds of one training run (or "fail").
run_once() {
    local name=$1; shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
    rm -rf "$work/$name"
    local t0=$EPOCHREALTIME
    env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OMP_NUM_THREADS "${envs[@]}" "$S" train --model "$MODEL" --train synthetic:2048 --batch 8 --seq 128 --steps "$STEPS" \
        --quiet --out "$work/$name" "$@" >"$work/$name.log" 2>&1 || { echo fail; return; }
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'
}
best() { tr ' ' '\n' | grep -v '^$' | sort -g | head -1; }

echo "# training on a loaded machine: $MODEL 8x128 vocab 2048, $STEPS steps, $(nproc) cores; best of $ROUNDS"
echo "# old: --threads $(nproc) with libgomp's spinning wait; new: sextant's defaults (short spin then sleep, free cores)"
printf '%-8s %9s %9s %9s  %s\n' busy old_s new_s old/new "new: threads at the first -> last step"
for b in ${BENCH_LOADED_BUSY:-0 1 1@nice19 2}; do
    n=${b%%@*} k=0
    [[ $b == *@nice* ]] && k=${b#*@nice}
    for ((i = 0; i < n; i++)); do
        nice -n "$k" bash -c "while :; do :; done # ${SEXTANT_LOADED_TAG:-sextant-loaded-bench}" & busy_pids+=($!)
    done
    sleep 1   # let the busy loops settle on their cores
    olds="" news=""
    for ((r = 0; r < ROUNDS; r++)); do
        olds+=" $(run_once "old-b$b" GOMP_SPINCOUNT=300000 -- --threads "$(nproc)")"
        news+=" $(run_once "new-b$b" -- )"
    done
    stop_busy
    o=$(echo "$olds" | best) n=$(echo "$news" | best)
    th=$(sed -n '1p;$p' "$work/new-b$b/metrics.jsonl" 2>/dev/null | sed 's/.*"threads":\([0-9]*\).*/\1/' | paste -sd' ' - | sed 's/ / -> /')
    ratio=$(awk -v o="$o" -v n="$n" 'BEGIN { if (o + 0 > 0 && n + 0 > 0) printf "%.2fx", o / n; else print "n/a" }')
    printf '%-8s %9s %9s %9s  %s\n' "$b" "$o" "$n" "$ratio" "${th:-?}"
done
