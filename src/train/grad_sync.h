// grad_sync: the sum over ranks of a model's gradients for data-parallel training, overlapped with the
// backward pass. The gradients are cut into buckets of about bucket_floats, in the order the backward
// finishes them (model_grad_stages); during the armed backward each bucket's non-blocking all-reduce starts
// as soon as its last tensor is final, and grad_sync_finish starts the rest and waits for all of them
// before the optimizer step. The sums are bit-identical to one blocking all-reduce of the whole block at
// P = 2 (a + b commutes exactly; at larger P, to fp32 reduction order). With bucket_floats 0 nothing
// overlaps: grad_sync_finish is that one blocking all-reduce (dist_allreduce_sum), as before buckets existed.
// Not responsible for other sums of the step (losses, MoE statistics: train.c) nor for the transport (dist/).
#ifndef SEXTANT_TRAIN_GRAD_SYNC_H
#define SEXTANT_TRAIN_GRAD_SYNC_H
#include <stddef.h>
#include "core/status.h"
#include "dist/dist.h"
#include "model/model.h"

typedef struct {
    size_t end;                  // the bucket is complete when the first `end` tensors of the order are final
    size_t first_run, n_runs;    // its contiguous runs of the gradient block: run_off/run_len[first_run ..)
} grad_bucket;

typedef struct {
    model *m;
    dist_flight *flight;
    grad_bucket *buckets;
    size_t n_buckets, next;      // buckets, and the next one to start
    size_t *run_off, *run_len;   // (floats) the buckets' runs, bucket after bucket
    size_t *stage_end;           // model_grad_stages' cumulative counts
    model_grad_hook hook;
    // Totals for the run summary: steps, seconds waited in grad_sync_finish, floats summed by the end of the
    // backward (of floats_total per step).
    long steps;
    double wait_s, floats_early, floats_total;
} grad_sync;

// Buckets for m's gradient block (bucket_floats 0: no buckets, the blocking sum). *s is zeroed on error.
sx_status grad_sync_init(grad_sync *s, model *m, size_t bucket_floats);
void grad_sync_free(grad_sync *s);
// The next model_loss_and_grad (the step's last micro-batch: only then are gradients final) starts the
// buckets' sums as it finishes them. No-op without buckets.
void grad_sync_arm(grad_sync *s);
// Starts the buckets not started yet and waits for every sum (at most dist_timeout()); disarms. After it every
// rank holds the same summed gradients.
sx_status grad_sync_finish(grad_sync *s);

#endif
