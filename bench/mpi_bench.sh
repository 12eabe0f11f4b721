#!/usr/bin/env bash
# MPI communication overhead (issue 10; called from bench/run-all): tokens/s of one model trained by
# 2 ranks x 1 thread (mpirun, gradients summed by an all-reduce every step) versus 1 process x 2 threads,
# measured in one run, and the fraction of the 2-rank step time spent in the all-reduce (metrics.jsonl
# "allreduce_s"). On a 2-core machine this measures overhead, not speed-up: both use the same 2 cores.
# Usage: bench/mpi_bench.sh [BUILD_DIR]   Knobs: SEXTANT (./sextant), MPI_BENCH_MODEL (d2), MPI_BENCH_SEQ
# (256), MPI_BENCH_STEPS (15; the first 5 are warm-up). Prints n/a when mpirun or an MPI build is missing.
set -uo pipefail
BUILD=${1:-build}
SEXTANT=${SEXTANT:-./sextant}
MODEL=${MPI_BENCH_MODEL:-d2}
SEQ=${MPI_BENCH_SEQ:-256}
STEPS=${MPI_BENCH_STEPS:-15}
work="$BUILD/bench/mpi"
command -v mpirun >/dev/null 2>&1 || { echo "mpi overhead: n/a (mpirun not installed)"; exit 0; }
ldd "$SEXTANT" 2>/dev/null | grep -q libmpi || { echo "mpi overhead: n/a ($SEXTANT built without MPI)"; exit 0; }
rm -rf "$work"; mkdir -p "$work"
args=(train --model "$MODEL" --train synthetic:8192 --batch 8 --seq "$SEQ" --steps "$STEPS" --quiet)

# summary DIR -> "median_tok_per_s median_allreduce_fraction" over the steps after the warm-up
summary() {
    python3 - "$1/metrics.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][5:]
tps = statistics.median(r["tok_per_s"] for r in rows)
frac = statistics.median(r.get("allreduce_s", 0) * r["tok_per_s"] / (r["tokens"] / r["step"]) for r in rows)
print(f"{tps:.1f} {frac:.4f}")
PY
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$SEXTANT" "${args[@]}" --threads 2 --out "$work/p1t2" > "$work/p1t2.log" 2>&1 || { echo "mpi overhead: 1x2 run failed (see $work/p1t2.log)"; exit 1; }
mpirun --allow-run-as-root --oversubscribe -np 2 "$SEXTANT" "${args[@]}" --threads 1 --out "$work/p2t1" > "$work/p2t1.log" 2>&1 ||
    { echo "mpi overhead: 2x1 run failed (see $work/p2t1.log)"; exit 1; }
read -r one _ < <(summary "$work/p1t2")
read -r two frac < <(summary "$work/p2t1")
params=$("$SEXTANT" inspect "$MODEL" --vocab 8192 --seq "$SEQ" --batch 8 | awk '/^params total/ { print $3 }')
awk -v m="$MODEL" -v seq="$SEQ" -v one="$one" -v two="$two" -v frac="$frac" -v p="$params" 'BEGIN {
    printf "mpi overhead  %s 8x%s fp32: 1 process x 2 threads %.0f tok/s, 2 ranks x 1 thread %.0f tok/s = %.2fx; all-reduce %.1f%% of the 2-rank step (%.1f MB of gradients per step)\n",
           m, seq, one, two, two / one, 100 * frac, p * 4 / 1e6 }'
