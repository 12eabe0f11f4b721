#!/usr/bin/env bash
# ZeRO-1 (--zero1, issue 24), 2 ranks on this machine: each rank keeps and updates its shard of the optimizer
# state and the parameters are all-gathered after every step (compared on both ranks after every step,
# SEXTANT_DIST_CHECK=1). A sharded run ends bit-identical to the unsharded one (checkpoint and losses), with
# AdamW and with MuonH (whole matrices per rank, hyperball radii in the state); the checkpoints keep their
# format: the unsharded run's mid-run checkpoint resumed sharded, and the sharded run's resumed unsharded,
# end where the straight run ends. The summary reports the optimizer state per rank.
# Skips (exit 0, with a message) when mpirun is missing or $SEXTANT was built without MPI.
set -u
S=${SEXTANT:-./sextant}
source "$(dirname "$0")/lib/mpi_pair.sh"   # skips without mpirun or MPI; MPI: 2 ranks
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
common=(--model d2-w32-hd8-untied --train synthetic:64 --batch 4 --seq 16 --steps 12 --lr 1e-2 --eval-every 6
        --eval-batches 1 --threads 1 --quiet --warmup 2 --save-at 0.5 --clip 0.5)   # the norms are 0.8-1: every step clips
losses() { grep -o '"\(train_loss\|grad_norm\)":[^,]*' "$1/metrics.jsonl"; }

compared="losses or gradient norms"

run plain
run sharded --zero1
same plain sharded
run muonh --optimizer muonh
run muonh-sharded --optimizer muonh --zero1
same muonh muonh-sharded

resume_dir plain-to-sharded plain
run plain-to-sharded --zero1 --resume
same plain plain-to-sharded
resume_dir sharded-to-plain sharded
run sharded-to-plain --resume
same plain sharded-to-plain

# Rank 0 holds less optimizer state than the unsharded optimizer (Adam: 2 floats per parameter).
line=$(grep "optimizer state sharded over 2 ranks" "$tmp/sharded.log")
echo "$line"
awk -v l="$line" 'BEGIN { n = split(l, w, " "); for (i = 1; i <= n; i++) { if (w[i] == "on" && w[i+1] == "rank") r0 = w[i-2]; if (w[i] == "unsharded") all = w[i-2] }
                        exit !(r0 > 0 && all > 0 && r0 < 0.75 * all) }' || fail "rank 0 should hold well under the unsharded optimizer state: $line"
grep -q "optimizer state sharded" "$tmp/plain.log" && fail "an unsharded run reports sharding"

echo "mpi_zero.sh: $fails failed"
[ $fails -eq 0 ]
