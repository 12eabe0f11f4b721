#!/usr/bin/env bash
# Data parallel on 3 ranks (every other MPI test runs 2, where a + b commutes exactly and the batch and the
# optimizer state split evenly): the global batch of 4 splits 1/1/2 rows and the ZeRO-1 shards are uneven.
# Overlapped bucketed all-reduces (--bucket-mb 0.004: a bucket every few tensors) end bit-identical to the
# blocking one after the backward, with gradient accumulation; a --zero1 run ends bit-identical too, and
# resumed sharded from its own mid-run checkpoint and from the unsharded run's, it ends where the straight
# runs end (checkpoints, losses and gradient norms).
# Skips (exit 0, with a message) when mpirun is missing or $SEXTANT was built without MPI.
set -u
S=${SEXTANT:-./sextant}
ranks=3
source "$(dirname "$0")/lib/mpi_pair.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
common=(--model d2-w32-hd8-untied --train synthetic:64 --batch 4 --grad-accum 2 --seq 16 --steps 12 --lr 1e-2
        --eval-every 6 --eval-batches 1 --threads 1 --quiet --warmup 2 --save-at 0.5 --clip 0.5)
losses() { grep -o '"\(train_loss\|grad_norm\)":[^,]*' "$1/metrics.jsonl"; }
compared="losses or gradient norms"

run blocking --bucket-mb 0
run buckets --bucket-mb 0.004
same blocking buckets
run sharded --zero1
same blocking sharded
resume_dir sharded-resumed sharded
run sharded-resumed --zero1 --resume
same blocking sharded-resumed
resume_dir plain-to-sharded blocking
run plain-to-sharded --zero1 --resume
same blocking plain-to-sharded
grep -q "optimizer state sharded over 3 ranks" "$tmp/sharded.log" || fail "no sharding summary: $(cat "$tmp/sharded.log")"

echo "mpi_three.sh: $fails failed"
[ $fails -eq 0 ]
