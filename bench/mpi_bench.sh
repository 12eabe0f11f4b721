#!/usr/bin/env bash
# MPI communication (issues 10 and 24; called from bench/run-all), in one run:
# - overhead: tokens/s of one model trained by 2 ranks x 1 thread (mpirun, gradients summed every step)
#   versus 1 process x 2 threads, and the share of the 2-rank step spent waiting for the all-reduce
#   (metrics.jsonl "allreduce_s"). On a 2-core machine this measures overhead, not speed-up: both use the
#   same 2 cores.
# - overlap: the all-reduce time hidden behind the backward: 2-rank runs with the blocking all-reduce after
#   the backward (--bucket-mb 0) and with buckets started during it (--bucket-mb MPI_BENCH_BUCKET),
#   interleaved over MPI_BENCH_ROUNDS rounds; the milliseconds per step each waits for the all-reduce after
#   the backward (medians), their difference (hidden), and the step-time ratio.
# Usage: bench/mpi_bench.sh [BUILD_DIR]   Knobs: SEXTANT (./sextant), MPI_BENCH_MODEL (d2), MPI_BENCH_SEQ
# (256), MPI_BENCH_STEPS (15; the first 5 are warm-up), MPI_BENCH_BUCKET (4, MiB), MPI_BENCH_ROUNDS (2).
# Prints n/a when mpirun or an MPI build is missing.
set -uo pipefail
BUILD=${1:-build}
SEXTANT=${SEXTANT:-./sextant}
MODEL=${MPI_BENCH_MODEL:-d2}
SEQ=${MPI_BENCH_SEQ:-256}
STEPS=${MPI_BENCH_STEPS:-15}
BUCKET=${MPI_BENCH_BUCKET:-4}
ROUNDS=${MPI_BENCH_ROUNDS:-2}
work="$BUILD/bench/mpi"
command -v mpirun >/dev/null 2>&1 || { echo "mpi overhead: n/a (mpirun not installed)"; exit 0; }
# Not `ldd | grep -q` under pipefail: grep -q leaves at the first match, ldd can then die of SIGPIPE, and the
# pipeline fails (a CI run on a busy machine reported an MPI build as "built without MPI" so).
grep -q libmpi <(ldd "$SEXTANT" 2>/dev/null) || { echo "mpi overhead: n/a ($SEXTANT built without MPI)"; exit 0; }
rm -rf "$work"; mkdir -p "$work"
args=(train --model "$MODEL" --train synthetic:8192 --batch 8 --seq "$SEQ" --steps "$STEPS" --quiet)
MPI=(mpirun --allow-run-as-root --oversubscribe -np 2)

# summary DIR... -> "median_tok_per_s median_allreduce_fraction median_allreduce_ms" over the steps after the
# warm-up of every run directory given
summary() {
    python3 - "$@" <<'PY'
import json, statistics, sys
rows = [r for d in sys.argv[1:] for r in [json.loads(l) for l in open(d + "/metrics.jsonl") if l.strip()][5:]]
tps = statistics.median(r["tok_per_s"] for r in rows)
frac = statistics.median(r.get("allreduce_s", 0) * r["tok_per_s"] / (r["tokens"] / r["step"]) for r in rows)
ms = statistics.median(1e3 * r.get("allreduce_s", 0) for r in rows)
print(f"{tps:.1f} {frac:.4f} {ms:.3f}")
PY
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$SEXTANT" "${args[@]}" --threads 2 --out "$work/p1t2" > "$work/p1t2.log" 2>&1 || { echo "mpi overhead: 1x2 run failed (see $work/p1t2.log)"; exit 1; }
for round in $(seq "$ROUNDS"); do
    for b in 0 "$BUCKET"; do
        dir="$work/p2t1-b$b-r$round"
        "${MPI[@]}" "$SEXTANT" "${args[@]}" --threads 1 --bucket-mb "$b" --out "$dir" > "$dir.log" 2>&1 ||
            { echo "mpi overhead: 2x1 run (--bucket-mb $b) failed (see $dir.log)"; exit 1; }
    done
done
read -r one _ < <(summary "$work/p1t2")
read -r two frac blocking_ms < <(summary "$work"/p2t1-b0-r*/)
read -r two_overlap _ overlap_ms < <(summary "$work"/p2t1-b"$BUCKET"-r*/)
params=$("$SEXTANT" inspect "$MODEL" --vocab 8192 --seq "$SEQ" --batch 8 | awk '/^params total/ { print $3 }')
early=$(sed -n 's/.* \([0-9]*\)% of the gradients summed by its end.*/\1/p' "$work/p2t1-b$BUCKET-r1.log")
awk -v m="$MODEL" -v seq="$SEQ" -v one="$one" -v two="$two" -v frac="$frac" -v p="$params" 'BEGIN {
    printf "mpi overhead  %s 8x%s fp32: 1 process x 2 threads %.0f tok/s, 2 ranks x 1 thread %.0f tok/s = %.2fx; all-reduce %.1f%% of the 2-rank step (%.1f MB of gradients per step)\n",
           m, seq, one, two, two / one, 100 * frac, p * 4 / 1e6 }'
awk -v m="$MODEL" -v seq="$SEQ" -v b="$BUCKET" -v bl="$blocking_ms" -v ov="$overlap_ms" -v t0="$two" -v t1="$two_overlap" \
    -v early="${early:-?}" -v rounds="$ROUNDS" 'BEGIN {
    printf "mpi overlap   %s 8x%s fp32, 2 ranks x 1 thread, %d rounds: all-reduce waited %.2f ms/step blocking, %.2f ms/step with %g MiB buckets during the backward (%s%% summed by its end): %.2f ms/step hidden (%.0f%%); tokens/s %.3fx blocking\n",
           m, seq, rounds, bl, ov, b, early, bl - ov, (bl > 0 ? 100 * (bl - ov) / bl : 0), t1 / t0 }'
