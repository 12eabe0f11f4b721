// rundir: reads a training run directory written by the trainer, for fitting and forecasting:
//   <run>/config.json    {"model", "n_params", "n_params_nonembed", "flops_per_token", "total_steps",
//                         "total_tokens", "batch_tokens", "seed", "schedule": {...}, ...}
//   <run>/metrics.jsonl  one object per step: {"step" (1-based, after the update), "tokens", "lr",
//                         "train_loss", "grad_norm", "flops" (cumulative), "frac"} plus "val_loss" on evals
//                         (and "val_loss_NAME" per source of a mixture; "task_NAME_acc", "task_NAME_loss"
//                         and "task_NAME_n" per task of `train --eval-tasks`)
//   <run>/DONE           present when the run finished
// A partial last line (killed run) and event lines ({"event": ...}, e.g. a spike rollback) are ignored. A resumed run that re-logs steps replaces what followed:
// a line with step s <= the last step read drops every earlier record with step >= s.
//
// Not responsible for: writing run directories (the trainer), or interpreting the schedule object
// (kept as JSON in `config`).
#ifndef SEXTANT_RUNS_RUNDIR_H
#define SEXTANT_RUNS_RUNDIR_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "core/status.h"

typedef struct {
    size_t step;     // 1-based; the schedule laws' 0-based index is step - 1
    double frac;     // step / total_steps
    double tokens;   // tokens seen
    double flops;    // cumulative training FLOPs
    double val_loss;
} rundir_eval;

typedef struct {
    char model[64];
    int64_t n_params, n_params_nonembed, total_steps, total_tokens, batch_tokens, seed;
    double flops_per_token;
    json_t *config;     // the whole config.json (owned reference)
    size_t n_steps;     // steps logged (contiguous from 1)
    double *lr;         // [n_steps] lr[i] = LR used at step i+1 (the schedule laws' lr array)
    double *train_loss; // [n_steps]
    size_t n_evals;
    rundir_eval *evals; // [n_evals] ascending by step
    int done;           // DONE exists
} rundir_run;

// Reads dir into out (overwritten; free with rundir_free even on error is safe). Errors: SX_ERR_IO (missing
// files), SX_ERR_FORMAT (bad JSON, a missing config scalar, a gap in the steps, a malformed non-final
// metrics line), SX_ERR_NOMEM.
sx_status rundir_read(const char *dir, rundir_run *out);
// The same with the validation loss of one set of a mixture run: "val_loss_<val_set>" (the trainer logs one
// per source of a mixture, src/data/mixture.h) in place of "val_loss" (the weighted mix); val_set NULL or
// "" reads "val_loss". SX_ERR_ARG if the run logged evaluations but none of that set.
sx_status rundir_read_set(const char *dir, const char *val_set, rundir_run *out);
// The same with any metrics key read in place of "val_loss" (e.g. "task_cloze_loss"); SX_ERR_ARG if the run
// logged steps but no evaluation with that key.
sx_status rundir_read_key(const char *dir, const char *key, rundir_run *out);
void rundir_free(rundir_run *r);

// The config.json beside a run's checkpoint file (RUN/checkpoint.sxt -> RUN/config.json), or NULL when there
// is none or it does not parse: what eval and sample take their defaults from.
json_t *rundir_config_beside(const char *checkpoint);
// A path the config records (e.g. "val_data"), as given to the trainer: when it is relative and the command
// runs elsewhere, or the file moved, it is not found. SX_OK when path exists; else an SX_ERR_ARG naming what,
// why, and the flag to give.
sx_status rundir_recorded_path_check(const char *path, const char *what, const char *flag);

// Task evaluations of a run (`train --eval-tasks`): per task, its evaluation lines' accuracy, task loss and
// items scored, in order of first appearance.
typedef struct {
    char name[48];
    size_t n;                     // evaluations
    size_t *step;                 // [n] ascending
    double *acc, *loss, *items;   // [n]; loss and items NAN where not logged
} rundir_task;

typedef struct {
    size_t n;
    rundir_task *tasks;
} rundir_tasks;

// Reads every task's evaluations from dir/metrics.jsonl (a resumed run's re-logged steps replace what
// followed, as in rundir_read; lines rundir_read would refuse are skipped here). SX_ERR_FORMAT for an
// accuracy outside [0, 1]. out overwritten; free with rundir_tasks_free (also after an error).
sx_status rundir_read_tasks(const char *dir, rundir_tasks *out);
void rundir_tasks_free(rundir_tasks *t);
// Index of task t's evaluation at step, or -1.
long rundir_task_at(const rundir_task *t, size_t step);

#endif
