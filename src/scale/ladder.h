// ladder: a scaling ladder — one recipe trained at several sizes (and seeds), plus optional cooldown
// branches off each run's stable phase — described by a plain-text spec and run as `sextant train`
// processes. Responsible for the spec, the plan (which runs, with which flags, in which directory), running
// the plan (skipping finished runs, resuming interrupted ones, several at once), and its status.
// Not responsible for training itself (train/) or fitting (laws/fit.h, scale/forecast.h).
//
// Spec: one "key value..." per line, '#' starts a comment. Keys (defaults in brackets):
//   name NAME                   ladder name [ladder]
//   train PATH | val PATH       token shards (or synthetic:V), or a mixture spec X.mix (src/data/mixture.h)
//   unique_tokens U             cap every run's unique data at U tokens (train --unique-tokens), read in
//                               epochs (--data-order epoch): a data-limited ladder for the data-constrained
//                               law (fit --with) [0: no cap]
//   lr_sweep M1 M2 ...          an LR sweep: runs at these multiples of the LR rule's LR (seed 1) at the
//                               lr_sweep_widths (default: the 3 smallest rungs); `fit` then fits the rule
//                               lr*(w) = coef*(ref/w)^power with its uncertainty and `forecast` uses it
//   lr_sweep_widths W1 W2 ...   widths to sweep at (rungs of the ladder, 2 or more)
//   val_set NAME                fit and forecast the validation loss of one source of a mixture
//                               (val_loss_NAME) instead of the weighted mix [""]; `fit --val-set` overrides
//   model TEMPLATE              descriptor with {width}, e.g. d3-hd32-w{width}
//   widths W1 W2 ...            rungs by width, or:
//   budgets C1 C2 ...           rungs by training compute (FLOPs): the width (a multiple of 16) whose
//                               compute at tokens_per_param is closest
//   seeds N                     seeds 1..N per rung [2]
//   tokens_per_param R          training tokens = R x non-embedding parameters [20]
//   seq T | batch B             context and sequences per step [128, 16]
//   min_steps S                 a rung whose budget gives fewer than S steps at batch B trains with the
//                               largest divisor of B that gives at least S (evaluating the same windows);
//                               too few optimizer steps make a small rung step-limited, which bends the
//                               ladder's curves [0: off]
//   lr X                        AdamW peak LR at lr_ref_width [3e-3]
//   lr_ref_width W | lr_width_power P   lr(width) = lr x (W/width)^P [128, 1]
//   optimizer adamw|muon|adamh|muonh | muon_lr X   [adamw, 0.02]; muon_lr scales with width like lr; read by
//                               muon only (as hyper_lr by adamh/muonh), so a spec may keep both for a switch
//   hyper_lr X                  adamh/muonh: fraction of each matrix's norm moved per step, the same at every
//                               width (the hyperball's LR transfers across width) [0.02]
//   schedule SPEC | warmup FRAC         the schedule shape, warmup as a fraction [wsd:decay=0.2, 0.02]
//   eval_at F1,F2,...           fractions to evaluate at [every 0.05 to 0.8, then every 0.02]
//   eval_batches N              [32]
//   eval_tasks NAME,NAME        downstream tasks every run also measures at its evaluations (train
//                               --eval-tasks; docs/TASKS.md): task_<name>_acc/_loss/_n in metrics.jsonl [none]
//   eval_task_items N           items per task and evaluation [200]
//   eval_tasks_val PATH         the token shard the text tasks are built from [val; needed when val is a mixture]
//   branches F:D:SHAPE ...      cooldown branches: from fraction F of a run's stable phase, decay over
//                               D x the run's steps with shape linear|cosine|sqrt (wsd schedules only)
//   mtp K | prefix_aux W        extra cross-entropy targets (train --mtp, --prefix-aux): multi-token
//                               prediction over K offsets, the prefix-token loss at weight W [0, 0: off]
//   aux_end F | prefix_vocab PATH   when their weights reach zero, the prefix map's vocabulary (train
//                               --aux-end, --prefix-vocab) [the trainer's defaults]
//   extra FLAGS...              more `sextant train` flags, passed verbatim after the plan's
#ifndef SEXTANT_SCALE_LADDER_H
#define SEXTANT_SCALE_LADDER_H
#include <stdbool.h>
#include <stddef.h>
#include "core/status.h"

#define LADDER_MAX_RUNGS 32
#define LADDER_MAX_BRANCHES 8
#define LADDER_MAX_FRACS 128
#define LADDER_MAX_SWEEP 8
#define LADDER_SWEEP (-2)   // ladder_run.branch of an LR-sweep run
#define LADDER_MAX_DIM (1 << 24)   // batch, seq and eval_batches (as fit.json's readers allow)

typedef struct {
    double from, length;   // fractions of the parent run
    char shape[16];
} ladder_branch;

typedef struct {
    char name[64], train[1024], val[1024], model[128], schedule[256], optimizer[16], extra[1024];
    char val_set[32];      // "" or one validation set of a mixture to fit and forecast (val_loss_<val_set>)
    char eval_tasks[128];  // "" or the downstream tasks every run measures (train --eval-tasks)
    char eval_tasks_val[1024];   // "" or the shard they are built from (train --eval-tasks-val)
    size_t eval_task_items;   // 0: the trainer's default
    char metric[64];       // "" or a metrics key fitted in place of the validation loss (not a spec key: the
                           // downstream forecast fits task_<name>_loss this way, scale/taskcast.h)
    size_t widths[LADDER_MAX_RUNGS], n_rungs;
    double budgets[LADDER_MAX_RUNGS];
    size_t n_seeds, seq, batch, eval_batches, min_steps;
    size_t rung_seeds[LADDER_MAX_RUNGS];   // seeds of rung r in plan order (largest first) where more than
                                           // n_seeds: added by `compare --until-decided`, recorded in the
                                           // ladder directory (scale/ladder_seeds.h), not a spec key [0]
    size_t n_added_rungs;  // the last n_added_rungs of widths: rungs `compare --until-decided` added (recorded in
                           // the ladder directory's seeds.json), not the spec's [0]
    double tokens_per_param, lr, lr_ref_width, lr_width_power, muon_lr, hyper_lr, warmup;
    double unique_tokens;  // > 0: every run trains on only this many unique tokens (repeating them)
    size_t mtp;            // train --mtp (0: off)
    double prefix_aux, aux_end;   // train --prefix-aux (0: off), --aux-end (0: the trainer's default)
    char prefix_vocab[1024];      // "" or train --prefix-vocab
    double lr_sweep[LADDER_MAX_SWEEP];            // LR multipliers of the sweep (the 1x run is seed 1's main run)
    size_t n_lr_sweep, lr_sweep_widths[LADDER_MAX_SWEEP], n_lr_sweep_widths;
    double eval_at[LADDER_MAX_FRACS];
    size_t n_eval;
    ladder_branch branches[LADDER_MAX_BRANCHES];
    size_t n_branches;
    char spec_path[1024];
} ladder_spec;

// One training run of the plan.
typedef struct {
    char dir[64];          // relative to the ladder's output directory, e.g. "w128-s1" or "w128-s1-b0"
    char descriptor[128];
    size_t width, seed, batch, eval_batches;   // batch and eval_batches after min_steps
    long steps, warmup_steps, parent_steps;
    int branch;            // -1 for a main run, LADDER_SWEEP for an LR-sweep run
    double lr, muon_lr, hyper_lr, flops;  // flops: whole-run training compute
    char schedule[256];
    char eval_at[2048];
    char save_at[256];     // main runs with branches: where to keep checkpoints
} ladder_run;

sx_status ladder_spec_read(const char *path, ladder_spec *spec);
// The metrics key the ladder fits, into key (cap bytes): metric, else val_loss_<val_set>, else val_loss.
void ladder_loss_key(const ladder_spec *s, char *key, size_t cap);
// Seeds 1..ladder_rung_seeds(s, r) train at rung r (plan order, largest first): n_seeds, or rung_seeds[r]
// where larger.
size_t ladder_rung_seeds(const ladder_spec *s, size_t r);
// Plan index of rung r's first main run (its seeds follow it in order); r = n_rungs gives the number of main
// runs. With n_seeds at every rung this is r x n_seeds.
size_t ladder_rung_start(const ladder_spec *s, size_t r);
// Expands the spec into runs (main runs first, largest rung first, each rung's seeds in order; branches after,
// n_branches per main run, in the main runs' order; LR-sweep runs last). *runs is malloc'd.
sx_status ladder_plan(const ladder_spec *spec, ladder_run **runs, size_t *n);
// Whether out_dir/<run i's dir>, if it exists, holds run i of the plan: the same model and length, and the
// training flags the ladder would give it (train_flags_differ); SX_ERR_MISMATCH says what differs.
sx_status ladder_run_check(const ladder_spec *spec, const ladder_run *plan, size_t i, const char *out_dir);
// Trains every run not yet DONE of the n ladders, ladder i under dirs[i], each a train_options started as
// `exe train` (train_spawn, train/options.h), in one pool of at most jobs runs at once over all ladders:
// largest first (a cooldown branch counts what it trains beyond its branch point), so that no core idles
// while any ladder has work; a run's branches start after it finishes. Which runs train, with which
// options and seeds, does not depend on the pool, only when. Ladders sharing a directory (the same name)
// must plan the same runs, trained once. Progress goes to stderr; with several ladders a run is named
// "ladder/run", and a failure (the other runs go on) is named so in the returned error. only >= 0 (one
// ladder): just that run index (for batch systems).
sx_status ladder_execute(const ladder_spec *specs, const char *const *dirs, size_t n, const char *exe, int jobs, long only);
// Under mpirun ladder_execute trains only this rank's runs: a main run and its branches stay on one rank,
// and these groups go in plan order (largest first) to the rank with the least compute so far.
// owner: (n) overwritten with the rank of each run of the plan runs (n).
void ladder_assign_ranks(const ladder_spec *spec, const ladder_run *runs, size_t n, int ranks, int *owner);
// What the run directories under out_dir hold for each run of the plan.
typedef struct {
    long steps_done;       // last step logged in metrics.jsonl (0: not started)
    double val_loss;       // last validation loss logged; NaN when none yet
    char val_text[16];     // val_loss as printed: "%.4f", or "-" when none yet
    bool done;             // DONE exists (and the directory holds this run: ladder_run_check)
    const char *name;      // "done", "partial", "not started" or "another run" (static)
} ladder_run_state;
// The plan (*runs, as ladder_plan) and each run's state (*state, (n)); both malloc'd, the caller frees.
// *n_done: how many are done.
sx_status ladder_status(const ladder_spec *spec, const char *out_dir, ladder_run **runs, ladder_run_state **state,
                        size_t *n, size_t *n_done);
// Prints the ladder's name and a table with one line per run: steps done, compute, last validation loss
// ("-" before the first evaluation), state.
sx_status ladder_print_status(const ladder_spec *spec, const char *out_dir);

#endif
