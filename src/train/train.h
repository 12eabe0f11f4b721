// train: the training loop. Builds the model and optimizer from options, draws batches, steps, evaluates
// on a cadence, writes metrics.jsonl and checkpoints into the run directory, resumes bit for bit, and stops
// with a diagnosis (or rolls back and skips the batches) on a non-finite or spiking loss. Test hooks read
// from the environment: SEXTANT_INJECT_NAN_AT_STEP=k / SEXTANT_INJECT_SPIKE_AT_STEP=k make the loss of step
// k NaN / 100x (once per process); SEXTANT_FAIL_WRITE_AFTER=n makes the nth checkpoint write() fail.
// SEXTANT_STALL_WRITE_AFTER=n makes the nth one stall for 10 s first (a kill then lands inside the write).
// Under mpirun (dist/dist.h) --batch is the global batch: every rank draws the same batches and trains its
// slice of the rows, gradients are summed over the ranks, and only rank 0 writes the run directory; the
// data stream does not depend on the number of ranks, so a checkpoint resumes with any other count
// (docs/DISTRIBUTED.md). SEXTANT_DIST_CHECK=1 / SEXTANT_DIST_FAULT=kill:K|hang:K are its test hooks.
// Not responsible for parsing flags (cli/cmd_train.c) or kernels.
#ifndef SEXTANT_TRAIN_H
#define SEXTANT_TRAIN_H
#include <stdbool.h>
#include <jansson.h>
#include "core/status.h"
#include "optim/optimizer.h"

typedef struct {
    const char *model;          // descriptor, e.g. "d4-kv2"
    const char *train_data;     // token shard path, or "synthetic:V"
    const char *val_data;       // token shard path, "synthetic:V", or "" (validate on train_data windows)
    const char *data_order;     // "random" windows or "epoch" (every window once per epoch, seeded order)
    long batch, seq, grad_accum;
    long steps;                 // total optimizer steps (0: derive from tokens)
    double tokens;              // token budget when steps == 0
    const char *schedule;       // lr_schedule spec
    const char *warmup;         // "" or warmup override (fraction or steps)
    optimizer_config opt;
    long seed;
    bool init_by_name;          // initial weights per tensor from (seed, name), not one stream in table order
    long eval_every;            // steps; 0 = off
    const char *eval_at;        // "" or comma-separated fractions of the run
    long eval_batches;          // batches of (batch, seq) per evaluation
    long ckpt_every;            // steps; 0 = only at the end
    const char *out;            // run directory
    const char *dtype;          // "fp32" | "bf16"
    long threads;               // 0 = OpenMP default
    bool resume;                // continue from out/checkpoint.sxt (an error when there is none)
    bool resume_or_start;       // with resume: start afresh when out holds no checkpoint yet (else an error)
    const char *branch_from;    // "" or a checkpoint of another run to continue from (e.g. a cooldown branch)
    const char *save_at;        // "" or fractions at which to keep a copy ckpt-<step>.sxt
    const char *forecast;       // "" or forecast.json to verify against while training
    double peak_gflops;         // for MFU; 0 = the machine's default for the dtype
    bool quiet;                 // no progress line
    const char *on_spike;       // "stop" or "rollback" (to the last checkpoint, skipping the bad batches) when
                                // the loss or gradient is not finite or the loss spikes; NULL means "stop"
    double spike_threshold;     // a loss above this multiple of its running average is a spike (0: off)
    json_t *echo;               // resolved flags to store in config.json (borrowed; may be NULL)
    const char *override;       // "" or flags (names without dashes, comma-separated) a --resume may change
} train_options;

sx_status train_run(const train_options *o);

// Asks a running train_run to write a checkpoint and stop after the current step (signal-safe).
void train_request_stop(void);

#endif
