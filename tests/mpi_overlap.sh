#!/usr/bin/env bash
# The gradient all-reduce overlapped with the backward (train/grad_sync.h, issue 24), 2 ranks on this
# machine: runs whose buckets start during the backward (the default 4 MiB: one bucket here; 4 KiB: a
# bucket every few tensors, started layer by layer) end with checkpoints bit-identical to the blocking
# all-reduce after the backward (--bucket-mb 0), with the same losses, on a tied model and on an untied one
# whose GatedNorm, value-embedding, smear and bigram tensors are final at other stages, with gradient
# accumulation (only the last micro-batch's backward starts sums). The run summary reports the wait.
# Skips (exit 0, with a message) when mpirun is missing or $SEXTANT was built without MPI.
set -u
S=${SEXTANT:-./sextant}
source "$(dirname "$0")/lib/mpi_pair.sh"   # skips without mpirun or MPI; MPI: 2 ranks
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
common=(--train synthetic:64 --batch 4 --seq 16 --steps 12 --lr 1e-2 --eval-every 6 --eval-batches 1
        --threads 1 --quiet --warmup 2)
losses() { grep -o '"train_loss":[^,]*' "$1/metrics.jsonl"; }

compared="losses"

# A tied model with gradient accumulation (only the last micro-batch's backward starts sums) ...
tied=(--model d2-w32-hd8 --grad-accum 2)
run blocking "${tied[@]}" --bucket-mb 0
run one "${tied[@]}"
run many "${tied[@]}" --bucket-mb 0.004
same blocking one
same blocking many
# ... and an untied one whose head, GatedNorm, value-embedding, smear and bigram tensors finish at other stages.
untied=(--model d3-w32-hd8-kv2-untied-gnorm4-ve1-smear-bigram64)
run untied-blocking "${untied[@]}" --bucket-mb 0
run untied-many "${untied[@]}" --bucket-mb 0.004
same untied-blocking untied-many
grep -q "gradient all-reduce: .* waited after the backward.*one all-reduce after each backward" "$tmp/blocking.log" ||
    fail "the blocking run's summary should say how long it waited"
grep -Eq "gradient all-reduce: .* [0-9]+ buckets of 0.004 MiB started during the backward, [0-9]+% of the gradients" \
    "$tmp/many.log" || { fail "the overlapped run's summary should report its buckets"; cat "$tmp/many.log"; }
"${MPI[@]}" "$S" train "${common[@]}" --model d2-w32-hd8 --bucket-mb -1 --out "$tmp/bad" 2>&1 | grep -q "bucket-mb must be" ||
    fail "--bucket-mb -1 should be refused"

echo "mpi_overlap.sh: $fails failed"
[ $fails -eq 0 ]
