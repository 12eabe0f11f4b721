#!/usr/bin/env bash
# Multi-process training over MPI (issue 10), 2 ranks on this machine: the same loss curve as one process
# with the same global batch (fp32 reduction tolerance, 50 steps) with the parameters of both ranks
# compared after every step (SEXTANT_DIST_CHECK=1); a checkpoint written with 2 ranks resumed with 1 and
# the reverse continue the same run (and 2 -> 2 bit for bit); a ladder over 2 ranks trains every run
# exactly once; a rank that dies or hangs stops the other with a clear error instead of a hang.
# Skips (exit 0, with a message) when mpirun is missing or $SEXTANT was built without MPI.
set -u
S=${SEXTANT:-./sextant}
command -v mpirun >/dev/null 2>&1 || { echo "mpi.sh: skipped, mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"; exit 0; }
ldd "$S" 2>/dev/null | grep -q libmpi || { echo "mpi.sh: skipped, $S was built without MPI (install libopenmpi-dev, rebuild)"; exit 0; }
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0   # libmpi keeps its allocations to the end
MPI=(timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
common=(--model d1-w32-hd16 --train synthetic:64 --batch 4 --seq 32 --steps 50 --lr 1e-2 --eval-every 10
        --eval-batches 2 --threads 1 --quiet --schedule wsd:decay=0.3 --warmup 5 --save-at 0.5)

field() { sed -n "s/.*\"$1\":\([-0-9.e+]*\).*/\1/p" "$2"; }
# same_curve A B FIELD TOL: FIELD on every line of A and B within relative TOL, and as many lines.
same_curve() {
    local a b
    a=$(field "$3" "$1") b=$(field "$3" "$2")
    [ -n "$a" ] && [ "$(wc -l <<<"$a")" -eq "$(wc -l <<<"$b")" ] || return 1
    paste <(echo "$a") <(echo "$b") | awk -v tol="$4" '
        { d = $1 - $2; d = d < 0 ? -d : d; m = $1 < 0 ? -$1 : $1; if (d > tol * m) { bad++; print "  " NR ": " $1 " vs " $2 } }
        END { exit bad > 0 }'
}

# One process vs two ranks with the same global batch (--batch 4: two sequences per rank).
"$S" train "${common[@]}" --out "$tmp/p1" || fail "1-process run"
SEXTANT_DIST_CHECK=1 "${MPI[@]}" "$S" train "${common[@]}" --out "$tmp/p2" > "$tmp/p2.log" 2>&1 ||
    { fail "2-rank run (or the ranks' parameters differ)"; cat "$tmp/p2.log"; }
[ "$(wc -l < "$tmp/p2/metrics.jsonl")" -eq 50 ] && [ -f "$tmp/p2/DONE" ] || fail "2-rank run directory incomplete"
same_curve "$tmp/p1/metrics.jsonl" "$tmp/p2/metrics.jsonl" train_loss 1e-5 || fail "2-rank train loss differs from 1 process"
same_curve "$tmp/p1/metrics.jsonl" "$tmp/p2/metrics.jsonl" val_loss 1e-5 || fail "2-rank val loss differs from 1 process"
grep -q '"allreduce_s"' "$tmp/p2/metrics.jsonl" && grep -q '"ranks": 2' "$tmp/p2/config.json" || fail "2-rank metrics/config lack the rank info"

# resume DIR FROM_CKPT FROM_METRICS: a run directory holding FROM's step-25 checkpoint.
resume_dir() { mkdir -p "$1"; cp "$2" "$1/checkpoint.sxt"; cp "$3" "$1/metrics.jsonl"; }
resume_dir "$tmp/21" "$tmp/p2/ckpt-25.sxt" "$tmp/p2/metrics.jsonl"
"$S" train "${common[@]}" --out "$tmp/21" --resume || fail "2 -> 1 resume"
same_curve "$tmp/p1/metrics.jsonl" "$tmp/21/metrics.jsonl" train_loss 1e-5 || fail "2 -> 1 resume left the run"
resume_dir "$tmp/12" "$tmp/p1/ckpt-25.sxt" "$tmp/p1/metrics.jsonl"
"${MPI[@]}" "$S" train "${common[@]}" --out "$tmp/12" --resume > "$tmp/12.log" 2>&1 || { fail "1 -> 2 resume"; cat "$tmp/12.log"; }
same_curve "$tmp/p1/metrics.jsonl" "$tmp/12/metrics.jsonl" train_loss 1e-5 || fail "1 -> 2 resume left the run"
resume_dir "$tmp/22" "$tmp/p2/ckpt-25.sxt" "$tmp/p2/metrics.jsonl"
"${MPI[@]}" "$S" train "${common[@]}" --out "$tmp/22" --resume > "$tmp/22.log" 2>&1 || { fail "2 -> 2 resume"; cat "$tmp/22.log"; }
cmp -s "$tmp/p2/checkpoint.sxt" "$tmp/22/checkpoint.sxt" || fail "2 -> 2 resume is not bit-identical to the straight run"

# More ranks than sequences: refused with a message.
"${MPI[@]}" "$S" train "${common[@]}" --batch 1 --out "$tmp/b1" 2>&1 | grep -q "less than the 2 ranks" ||
    fail "--batch below the rank count should be refused"

# A ladder of 4 rungs (each with a cooldown branch) over 2 ranks: every run trained once, by one rank.
printf '%s\n' "name tiny" "train synthetic:64" "model d1-hd8-w{width}" "widths 8 16 24 32" "seeds 1" \
    "tokens_per_param 2" "seq 16" "batch 4" "lr 2e-2" "lr_ref_width 16" "schedule wsd:decay=0.2" "warmup 0.05" \
    "eval_batches 2" "eval_at 0.5,1" "branches 0.5:0.2:linear" > "$tmp/tiny.ladder"
"${MPI[@]}" "$S" ladder run "$tmp/tiny.ladder" --out "$tmp/lad" > "$tmp/lad.log" 2>&1 || { fail "ladder over 2 ranks"; cat "$tmp/lad.log"; }
[ "$(ls "$tmp"/lad/*/DONE 2>/dev/null | wc -l)" -eq 8 ] || fail "not every ladder run finished"
[ "$(grep -c '^  start' "$tmp/lad.log")" -eq 8 ] && [ "$(grep '^  start' "$tmp/lad.log" | awk '{print $2}' | sort -u | wc -l)" -eq 8 ] ||
    fail "each of the 8 ladder runs should start exactly once"
grep -q "rank 0 of 2" "$tmp/lad.log" && grep -q "rank 1 of 2" "$tmp/lad.log" || fail "both ranks should take runs"
"${MPI[@]}" "$S" ladder run "$tmp/tiny.ladder" --out "$tmp/lad" > "$tmp/lad2.log" 2>&1 && ! grep -q '^  start' "$tmp/lad2.log" ||
    fail "a rerun over 2 ranks should start nothing"

# A rank killed at step 20: mpirun stops the other (no hang), non-zero exit, naming the dead rank.
start=$SECONDS
SEXTANT_DIST_FAULT=kill:20 "${MPI[@]}" "$S" train "${common[@]}" --out "$tmp/kill" > "$tmp/kill.log" 2>&1
rc=$?
{ [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "rank 1" "$tmp/kill.log"; } || { fail "a killed rank (rc $rc)"; cat "$tmp/kill.log"; }
# A rank frozen at step 20: the other gives up after SEXTANT_DIST_TIMEOUT and aborts the job.
SEXTANT_DIST_TIMEOUT=3 SEXTANT_DIST_FAULT=hang:20 "${MPI[@]}" "$S" train "${common[@]}" --out "$tmp/hang" > "$tmp/hang.log" 2>&1
rc=$?
{ [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "no answer from the other ranks" "$tmp/hang.log"; } ||
    { fail "a hung rank (rc $rc)"; cat "$tmp/hang.log"; }
[ $((SECONDS - start)) -lt 60 ] || fail "stopping after a dead rank took $((SECONDS - start)) s"

echo "mpi.sh: $fails failed"
[ $fails -eq 0 ]
