#!/usr/bin/env bash
# Smoke test of the benchmark driver (bench/run-all, `make bench`) at toy sizes, without PyTorch or
# bench_gemm: a training case in both dtypes and a ladder-rung case at 2 threads and at 1 each print one
# table line with numbers, the rung runs at the rungs' vocabulary (2048) for their own step count, the
# coverage study (compare_coverage) prints its table, and nothing fails.
set -u
S=${SEXTANT:-./sextant}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

# Every section bench/run-all can skip is skipped unless a run below smokes it: a new section (a full ladder,
# a public benchmark) stays out of the test suite until it gets a toy-sized run of its own here.
sections=" $(grep -oE '! skipped [a-z0-9]+' bench/run-all | cut -d' ' -f3 | sort -u | tr '\n' ' ')"
[[ "$sections" == *" coverage "* && "$sections" == *" torch "* ]] || fail "bench/run-all's sections not found: $sections"
out=$(SEXTANT="$S" BENCH_THREADS=2 BENCH_CASES="d1-w32-hd16:32" BENCH_DTYPES="fp32 bf16" BENCH_ROUNDS=2 BENCH_STEPS=8 \
      BENCH_WARMUP=2 BENCH_RUNG_CASES="d1-w16-hd16:32" BENCH_RUNG_STEPS=30 BENCH_CONTEXT_CASES="d1-w32-hd16 d1-w32-hd16-swa8" \
      BENCH_CONTEXT_SEQS="16 64" BENCH_CONTEXT_TOKENS=128 BENCH_CONTEXT_ROUNDS=2 \
      BENCH_SKIP="$sections" bench/run-all "$tmp" 2>&1) ||
    fail "bench/run-all exited with $?"
echo "$out"
echo "$out" | grep -q FAILED && fail "a run failed"

# model seq dtype threads tok/s GFLOP/s %peak torch ratio best RSS need RSS/need
line_ok() { # MODEL SEQ DTYPE THREADS: one line, positive tokens/s, GFLOP/s, RSS and need
    echo "$out" | awk -v m="$1" -v s="$2" -v d="$3" -v t="$4t" '
        $1 == m && $2 == s && $3 == d && $4 == t { n++; if ($5 > 0 && $6 > 0 && $11 > 0 && $12 > 0) ok++ }
        END { exit !(n == 1 && ok == 1) }'
}
line_ok d1-w32-hd16 32 fp32 2 || fail "no good fp32 training line"
line_ok d1-w32-hd16 32 bf16 2 || fail "no good bf16 training line"
line_ok d1-w16-hd16 32 fp32 2 || fail "no good ladder-rung line at 2 threads"
line_ok d1-w16-hd16 32 fp32 1 || fail "no good ladder-rung line at 1 thread"
echo "$out" | grep -q "^# ladder rungs" || fail "no ladder-rung section"
# The context-length rows: both models at both lengths, the batch keeping 128 tokens a step, each case run
# once in each of the two rounds, its best round's tok/s at least the median.
for m in d1-w32-hd16 d1-w32-hd16-swa8; do
    for seq in 16 64; do
        [ "$(echo "$out" | awk -v m="$m" -v s="$seq" '$1 == m && $2 == s && $5 > 0 && $6 > 0 && $10 >= $5 - 1' | wc -l)" -eq 1 ] ||
            fail "no good context-length line for $m at $seq"
        [ "$(cut -d' ' -f3 "$tmp/bench/runs/context/$m-$seq-fp32-t2.steps" | sort -u | tr '\n' ' ')" = "0 1 " ] ||
            fail "$m at $seq: expected steps from rounds 0 and 1"
        grep -q "\"batch\": $((128 / seq))," "$tmp/bench/runs/context/$m-$seq-fp32-t2/config.json" ||
            fail "$m at $seq: expected batch $((128 / seq))"
    done
done

# The rung trained at vocab 2048 for 30 steps a round; the training case at 8192 for 8.
runs="$tmp/bench/runs"
grep -q 'synthetic:2048' "$runs/d1-w16-hd16-32-fp32-t1/config.json" || fail "the rung did not use vocab 2048"
grep -q 'synthetic:8192' "$runs/d1-w32-hd16-32-fp32-t2/config.json" || fail "the training case did not use vocab 8192"
for t in 1 2; do
    [ "$(wc -l < "$runs/d1-w16-hd16-32-fp32-t$t.steps")" -eq 20 ] || fail "rung, $t threads: expected 2 rounds x 10 timed steps"
done
[ "$(wc -l < "$runs/d1-w32-hd16-32-fp32-t2.steps")" -eq 12 ] || fail "training case: expected 2 rounds x 6 timed steps"

# The coverage study (word coverage: build/bench/compare_coverage) alone at 2 replicates a case: its 60 case lines
# and 5 family lines when the build has the binary (make bench builds it), else a line saying it is not built.
cov="${SEXTANT_BUILD:-build}/bench/compare_coverage"
mkdir -p "$tmp/cov/bench"
[ -x "$cov" ] && cp "$cov" "$tmp/cov/bench/"
cout=$(SEXTANT="$S" BENCH_CASES= BENCH_CONTEXT_CASES= BENCH_RUNG_CASES= BENCH_COVERAGE_REPS=2 \
       BENCH_SKIP="${sections/ coverage / }" bench/run-all "$tmp/cov" 2>&1) ||
    fail "bench/run-all (coverage) exited with $?"
echo "$cout"
echo "$cout" | grep -q "^# compare's 95% intervals .*compare_coverage, 2 replicates a case" || fail "no coverage section"
if [ -x "$cov" ]; then
    [ "$(echo "$cout" | awk 'NF == 8 && ($1 == "1.00" || $1 == "1.05") && $5 ~ /%$/' | wc -l)" -eq 60 ] || fail "coverage: expected 60 case lines"
    [ "$(echo "$cout" | grep -c '^seeds ')" -eq 5 ] || fail "coverage: expected 5 lines of the family"
else
    echo "$cout" | grep -q "compare_coverage not built: n/a" || fail "coverage: no line saying it is not built"
fi

# The loaded-machine case (bench/loaded.sh) at toy size: a line per load with both times and their ratio.
# Its busy loops carry this run's own tag, so that another suite running beside this one cannot fail the check.
export SEXTANT_LOADED_TAG=sextant-loaded-bench-$$
lout=$(SEXTANT="$S" BENCH_LOADED_STEPS=3 BENCH_LOADED_MODEL=d1-w16-hd16 BENCH_LOADED_BUSY="0 1 1@nice19" bench/loaded.sh "$tmp" 2>&1) || fail "loaded.sh exited with $?"
echo "$lout"
for b in 0 1 1@nice19; do
    echo "$lout" | awk -v b="$b" '$1 == b && $2 > 0 && $3 > 0 && $4 ~ /^[0-9.]+x$/ { ok = 1 } END { exit !ok }' ||
        fail "loaded.sh: no good line for $b busy"
done
pgrep -f "$SEXTANT_LOADED_TAG" >/dev/null && fail "loaded.sh left a busy loop running"

# The MPI benchmark (bench/mpi_bench.sh) at toy size, where MPI is installed: both lines, with numbers.
if command -v mpirun >/dev/null 2>&1 && ldd "$S" 2>/dev/null | grep -q libmpi; then
    # (as tests/mpi.sh: under make check's sanitizers libmpi's allocations kept to the end are not leaks)
    mout=$(ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 SEXTANT="$S" MPI_BENCH_MODEL=d1-w32-hd16 MPI_BENCH_SEQ=32 MPI_BENCH_STEPS=7 MPI_BENCH_ROUNDS=1 \
           MPI_BENCH_BUCKET=0.01 bench/mpi_bench.sh "$tmp" 2>&1) || fail "mpi_bench.sh exited with $?"
    echo "$mout"
    echo "$mout" | grep -Eq '^mpi overhead .* = [0-9.]+x; all-reduce [0-9.]+%' || fail "mpi_bench.sh: no overhead line"
    echo "$mout" | grep -Eq '^mpi overlap .* [0-9.]+ ms/step blocking, [0-9.]+ ms/step with 0.01 MiB buckets .* ms/step hidden' ||
        fail "mpi_bench.sh: no overlap line"
fi

# The decode benchmark (bench/decode.sh) at toy size on two 2-step models: one line per speculative case (greedy
# samples identical), one per model for int8 and for this binary against a base binary (itself here: same text).
"$S" train --model d1-w32-hd16 --train synthetic:64 --batch 2 --seq 16 --steps 2 --quiet --out "$tmp/dec-t" 2>/dev/null || fail "train target"
"$S" train --model d1-w16-hd16 --train synthetic:64 --batch 2 --seq 16 --steps 2 --quiet --out "$tmp/dec-d" 2>/dev/null || fail "train draft"
dout=$(SEXTANT="$S" BENCH_DECODE_BASE="$S" BENCH_DECODE_IDS=1 BENCH_DECODE_PROMPT=1,2,3 BENCH_DECODE_K="1 3" BENCH_DECODE_TEMPS="0 1" \
       BENCH_DECODE_NEW=8 BENCH_DECODE_N=2 BENCH_DECODE_ROUNDS=1 BENCH_DECODE_VAL=none \
       bench/decode.sh "$tmp/dec-t/checkpoint.sxt" "$tmp/dec-d/checkpoint.sxt" 2>&1) || fail "decode.sh exited with $?: $dout"
echo "$dout"
[ "$(echo "$dout" | awk 'NF == 10 && $2 ~ /^[13]$/ && $4 >= 0 && $4 <= 1 && $5 > 0 && $6 > 0 && $8 ~ /x$/ && $9 ~ /x$/' | wc -l)" -eq 4 ] ||
    fail "decode.sh: expected 4 case lines"
[ "$(echo "$dout" | awk 'NF == 10 && $3 == 0 && $10 == "2/2"' | wc -l)" -eq 2 ] || fail "decode.sh: greedy samples not identical"
[ "$(echo "$dout" | awk 'NF == 7 && $2 > 0 && $4 > 0 && $6 ~ /x$/ && $7 ~ /^(yes|no)$/' | wc -l)" -eq 4 ] ||
    fail "decode.sh: expected 2 lines against the base binary and 2 int8 lines"
[ "$(echo "$dout" | sed -n '/^# plain greedy/,/^$/p' | awk 'NF == 7 && $7 == "yes"' | wc -l)" -eq 2 ] ||
    fail "decode.sh: the same binary's greedy texts differ"

[ $fails -eq 0 ] && echo "bench: all checks passed"
exit $((fails > 0))
