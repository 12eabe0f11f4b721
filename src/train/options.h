// train/options: what a training run is told. The train_options struct, its defaults, and the one flag
// table that maps `sextant train`'s flags onto it: the table generates the command's parser and --help,
// the resolved configuration echoed into config.json, and the command line of a child trainer
// (train_spawn, how the ladder starts its runs). Any module above train/ builds a train_options (starting
// from train_options_default) and either calls train_run in process or train_spawn; nothing writes flag
// names by hand. An evaluation hook lets a module above train/ watch the evaluations (the forecast check), and
// a model probe lets one measure the model at each of them (the downstream tasks of --eval-tasks).
// Not responsible for running the training (train/train.h) or for what a hook does with the evaluations
// (its owner, e.g. scale/forecast.h).
#ifndef SEXTANT_TRAIN_OPTIONS_H
#define SEXTANT_TRAIN_OPTIONS_H
#include <stdbool.h>
#include <sys/types.h>
#include <jansson.h>
#include "core/flags.h"
#include "core/status.h"
#include "model/model.h"
#include "optim/optimizer.h"

// Something that watches a run's evaluations, wired by the caller (the CLI makes a forecast check one:
// scale/forecast.h). Every function may be NULL. Called on every rank unless said otherwise.
typedef struct {
    void *ctx;
    // Once the run's length is known, before the first step; an error stops the run before it trains.
    sx_status (*start)(void *ctx, long total_steps);
    // Whether the run must also evaluate after this step.
    bool (*wants)(void *ctx, long step);
    // After the evaluation at step: may add fields to the step's metrics line and write a note for the
    // progress line into note (size bytes; note[0] = 0 for none). True: the note is an alarm, printed to
    // stderr even when there is no progress line.
    bool (*on_eval)(void *ctx, long step, double val_loss, json_t *line, char *note, size_t size);
    // The validation set whose loss on_eval gets (asked after start): "" for the run's validation loss, or
    // the name of a mixture source (its val_loss_<name>). NULL: "".
    const char *(*val_set)(void *ctx);
    // On rank 0, after the last step and before DONE is written; an error fails the run.
    sx_status (*finish)(void *ctx, const char *run_dir);
} train_eval_hook;

// Something that measures the model itself at every evaluation, wired by the caller (the CLI makes the tasks
// of --eval-tasks one: infer/tasks.h). Called on rank 0 only. Both functions may be NULL.
typedef struct {
    void *ctx;
    // Once the model is built, before the first step; an error (a model the probe cannot measure) stops the run.
    sx_status (*start)(void *ctx, const model *m);
    // After each evaluation's losses: adds its fields to the step's metrics line. Reads the model only and
    // draws from no generator the training uses, so that a probed run trains exactly as one that is not.
    sx_status (*measure)(void *ctx, model *m, json_t *line);
} train_model_probe;

typedef struct {
    const char *model;          // descriptor, e.g. "d4-kv2"
    const char *train_data;     // token shard path, or "synthetic:V"
    const char *val_data;       // token shard path, "synthetic:V", or "" (validate on train_data windows)
    const char *data_order;     // "random" windows or "epoch" (every window once per epoch, seeded order)
    double unique_tokens;       // > 0: train only on this many tokens of train_data, repeating them (loader_cap_tokens)
    long batch, seq, grad_accum;
    long steps;                 // total optimizer steps (0: derive from tokens)
    double tokens;              // token budget when steps == 0
    const char *schedule;       // lr_schedule spec
    const char *warmup;         // "" or warmup override (fraction or steps)
    const char *optimizer;      // "adamw" | "muon" | "adamh" | "muonh": train_options_check sets opt.kind from it
    optimizer_config opt;       // the optimizer's hyper-parameters
    long seed;
    bool init_by_name;          // initial weights per tensor from (seed, name), not one stream in table order
    long eval_every;            // steps; 0 = off
    const char *eval_at;        // "" or comma-separated fractions of the run
    long eval_batches;          // batches of (batch, seq) per evaluation
    const char *eval_tasks;     // "" or downstream tasks measured at every evaluation (the CLI wires them as
                                // task_probe: train_run itself does not build them)
    long eval_task_items;       // items per task
    const char *eval_tasks_val; // "" or the token shard the text tasks are built from (default: val_data)
    long ckpt_every;            // steps; 0 = only at the end
    const char *out;            // run directory
    const char *dtype;          // "fp32" | "bf16"
    long threads;               // 0 = OpenMP default
    bool resume;                // continue from out/checkpoint.sxt (an error when there is none)
    bool resume_or_start;       // with resume: start afresh when out holds no checkpoint yet (else an error)
    const char *branch_from;    // "" or a checkpoint of another run to continue from (e.g. a cooldown branch)
    const char *init_from;      // "" or a checkpoint whose weights (same shapes) start this run: fresh optimizer,
                                // step 0 (a curriculum's next stage); ignored on resume
    const char *save_at;        // "" or fractions at which to keep a copy ckpt-<step>.sxt
    const char *forecast;       // "" or forecast.json to verify against while training (the CLI wires the
                                // check as eval_hook: train_run itself does not read it)
    double peak_gflops;         // for MFU; 0 = the machine's default for the dtype
    bool quiet;                 // no progress line
    double bucket_mb;           // under mpirun: MiB of gradients per all-reduce bucket, started during the
                                // backward (0: one blocking all-reduce after it; train/grad_sync.h)
    bool zero1;                 // under mpirun: each rank keeps and updates its shard of the optimizer state
                                // (ZeRO-1), the parameters all-gathered after every step
    const char *on_spike;       // "stop" or "rollback" (to the last checkpoint, skipping the bad batches) when
                                // the loss or gradient is not finite or the loss spikes; NULL means "stop"
    double spike_threshold;     // a loss above this multiple of its running average is a spike (0: off)
    long mtp;                   // multi-token prediction: also score the targets 1..mtp tokens further ahead (0: off)
    double prefix_aux;          // initial weight of the prefix-token auxiliary loss (0: off)
    double aux_end;             // fraction of the run at which the mtp and prefix weights reach zero
    const char *prefix_vocab;   // "" or the vocabulary of the prefix map (default: the .sxv beside train_data)
    json_t *echo;               // resolved flags to store in config.json (borrowed; may be NULL)
    const char *override;       // "" or flags (names without dashes, comma-separated) a --resume may change
    const train_eval_hook *eval_hook;   // NULL: none (borrowed; not a flag)
    const train_model_probe *task_probe; // NULL: none (borrowed; not a flag); required when eval_tasks is set
} train_options;

#define TRAIN_MAX_FLAGS 64

// Every field at `sextant train`'s default (the flag table's), echo NULL. Overwrites *o.
void train_options_default(train_options *o);
// The flag table of `sextant train`, with targets in *o (which must outlive defs); returns its length.
size_t train_options_flags(train_options *o, flag_def defs[TRAIN_MAX_FLAGS]);
// Sets flags given as arguments ("--lr", "0.01", ...) over the values *o has now (no defaults applied);
// string fields then point into argv. SX_ERR_ARG naming the flag on a bad one.
sx_status train_options_parse_args(train_options *o, int argc, char **argv);
// Resolves opt.kind from optimizer and checks the optimizer's ranges. SX_ERR_ARG naming the setting.
sx_status train_options_check(train_options *o);
// Starts `exe train` with exactly these options as a child process (fork and exec, leaving any MPI
// launcher behind), then the n_extra arguments extra verbatim (a ladder spec's `extra`); stdout and stderr
// appended to log_path. *pid: the child's id.
sx_status train_spawn(const train_options *o, char *const *extra, int n_extra, const char *exe, const char *log_path,
                      pid_t *pid);

#endif
