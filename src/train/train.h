// train: the training loop. Builds the model and optimizer from options, draws batches, steps, evaluates
// on a cadence, writes metrics.jsonl and checkpoints into the run directory, resumes bit for bit, and stops
// with a diagnosis (or rolls back and skips the batches) on a non-finite or spiking loss. Test hooks read
// from the environment: SEXTANT_INJECT_NAN_AT_STEP=k / SEXTANT_INJECT_SPIKE_AT_STEP=k make the loss of step
// k NaN / 100x (once per process); SEXTANT_FAIL_WRITE_AFTER=n makes the nth checkpoint write() fail.
// SEXTANT_STALL_WRITE_AFTER=n makes the nth one stall, saying so on stderr (a kill then lands inside the write).
// Under mpirun (dist/dist.h) --batch is the global batch: every rank draws the same batches and trains its
// slice of the rows, gradients are summed over the ranks, and only rank 0 writes the run directory; the
// data stream does not depend on the number of ranks, so a checkpoint resumes with any other count
// (docs/DISTRIBUTED.md). SEXTANT_DIST_CHECK=1 / SEXTANT_DIST_FAULT=kill:K|hang:K are its test hooks.
// Not responsible for the options and their flags (train/options.h) or kernels.
#ifndef SEXTANT_TRAIN_TRAIN_H
#define SEXTANT_TRAIN_TRAIN_H
#include <stdbool.h>
#include <jansson.h>
#include "core/status.h"
#include "train/options.h"


sx_status train_run(const train_options *o);

// Asks a running train_run to write a checkpoint and stop after the current step (signal-safe).
void train_request_stop(void);

#endif
