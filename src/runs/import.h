// import: the external curve format — loss curves trained anywhere (JAX, PyTorch, Megatron, W&B exports)
// read into a "curve ladder", written as a versioned, checksummed ladder directory that fit, forecast and
// backtest read (docs/FORECAST.md, "The external curve format", documents it for users).
//
// Input: a runs table (one row per run) and a curves table (one row per evaluation), each CSV (header row,
// ',' separated, '"' quoting) or JSONL (one object per line; keys are column names). Either table may hold
// the other's run columns: without a runs table, run metadata are read from the curves table and must be
// constant within a run. Columns are found by name (the canonical names below, or any name mapped in
// import_options.col); a run field missing from the tables may be given as one value for every run
// (import_options.value).
//   run fields:   run_id, group, n_params, n_params_nonembed, tokens_per_step, total_steps | total_tokens,
//                 peak_lr, warmup (steps, or a fraction of the run when < 1), schedule (a sextant schedule
//                 string, optim/schedule.h; or an explicit lr column in the curves), seed, flops_per_token,
//                 role ("fit" or "heldout": which runs `backtest --protocol role` forecasts; default fit).
//                 A warmup as long as the run or longer is taken as trainers run it: the LR rises over the
//                 whole run and the schedule's decay never starts (Gadre et al.'s shortest runs).
//   curve fields: run_id, step (1-based: the loss after `step` updates; without a step column, tokens over
//                 tokens_per_step, which must be a whole number of steps), tokens, lr, and the loss columns.
//                 A row with an lr and every loss cell empty is an LR-only row: it adds to the run's LR trace
//                 (e.g. the LR of every step) without an evaluation; its tokens cell is not read.
// A run with role heldout and no evaluations is a planned run (import_ladder.planned), kept in the runs table.
// Refused, with file, row and column named: a missing column, an unparsable or non-finite number, a
// negative count, a run without metadata, a run with role fit without points, steps that repeat or go down within a run,
// a step past the run's end, metadata that change within a run, two runs with one id, a ladder in which
// no parameter count is given by every run (one run only with, another only without embeddings).
//
// The ladder directory (import_write_dir; written to DIR.tmpPID and renamed, so never half there):
//   DIR/runs.csv     the canonical runs table (canonical column names, warmup in steps; a parameter count the
//                    tables did not give is left empty)
//   DIR/curves.csv   run_id,step,tokens,lr,<loss columns...> (lr empty when not given; LR-only rows with
//                    empty tokens and losses, merged with the evaluations in step order)
//   DIR/ladder.json  {"format": "sextant-curve-ladder", "version": 1, "loss_columns": [...],
//                     "flops": "given" | "6ND", "sha256": {"runs.csv": hex, "curves.csv": hex}}
// import_read_dir reads it back with the same parser (so an imported ladder re-exports byte for byte).
//
// Not responsible for: fitting or forecasting (laws/curvefit.h, laws/backtest.h), sextant's own run
// directories (runs/rundir.h).
#ifndef SEXTANT_RUNS_IMPORT_H
#define SEXTANT_RUNS_IMPORT_H
#include <stddef.h>
#include "core/status.h"

#define IMPORT_VERSION 1
#define IMPORT_MAX_LOSS 16

typedef enum {
    IF_RUN, IF_GROUP, IF_N, IF_N_NONEMBED, IF_TOKENS_PER_STEP, IF_TOTAL_STEPS, IF_TOTAL_TOKENS, IF_PEAK_LR,
    IF_WARMUP, IF_SCHEDULE, IF_SEED, IF_FLOPS_PER_TOKEN, IF_ROLE, // run fields
    IF_STEP, IF_TOKENS, IF_LR,                           // curve fields
    IF_N_FIELDS
} import_field;

// The canonical column name of a field ("run_id", "n_params", ...).
const char *import_field_name(import_field f);
// Its flag stem: "run-id", "n-params", ... (the CLI's --STEM-col and --STEM).
const char *import_field_flag(import_field f);

typedef struct {
    const char *runs_path;            // NULL or "": run metadata from the curves table
    const char *curves_path;
    const char *col[IF_N_FIELDS];     // column name of each field; NULL or "": the canonical name
    const char *value[IF_N_FIELDS];   // one value for every run, for run fields no table has; NULL or "": none
    const char *loss_cols;            // comma-separated loss column names (at least one)
} import_options;

// Which parameter counts a run's tables gave (import_run.n_given, import_ladder.n_given).
enum { IMPORT_N_WITH = 1, IMPORT_N_WITHOUT = 2, IMPORT_N_BOTH = 3 };

typedef struct {
    char id[128], group[128], schedule[256]; // schedule "" when the curves carry the LR
    double n_params, n_nonembed, tokens_per_step, peak_lr; // a count not given copies the other (n_given says)
    int n_given;                             // IMPORT_N_WITH | IMPORT_N_WITHOUT
    double flops_per_token;                  // NAN when not given: 6·n_params per token
    long total_steps, warmup_steps, seed;
    int heldout;                             // role "heldout"
    size_t n_points;
    long *step;                              // [n_points] strictly increasing, 1..total_steps
    double *tokens, *lr;                     // [n_points]; lr NAN when not given
    double *loss;                            // [n_points x n_loss] row-major
    size_t n_trace;                          // the LR trace: every row with an lr (evaluations and LR-only rows)
    long *trace_step;                        // [n_trace] strictly increasing
    double *trace_lr;                        // [n_trace]
} import_run;

typedef struct {
    size_t n_loss;
    char loss_names[IMPORT_MAX_LOSS][64];
    size_t n_runs;
    import_run *runs; // in order of first appearance
    size_t n_planned;
    import_run *planned; // runs with role heldout and no evaluations yet (a hero before it trains): forecast
                         // targets (forecast --ladder DIR --run ID), read by no law; in order
    int n_given;      // the parameter counts every run gave (IMPORT_N_*; never 0): the N a law may read
    size_t n_rows_skipped; // curve rows with no loss value and no lr (steps a sparse export logged without an evaluation)
    size_t n_rows_step0;   // curve rows at step 0 (before any update; the laws start at step 1): left out
    char unused_values[256]; // "--peak-lr, ...": --FIELD values no run took (each had the field in a table)
} import_ladder;

// Reads and checks the tables. out overwritten (free with import_ladder_free, also after an error).
// Errors: SX_ERR_IO (cannot open), SX_ERR_FORMAT ("FILE:ROW: column 'NAME': what"), SX_ERR_ARG (options),
// SX_ERR_NOMEM.
sx_status import_read_tables(const import_options *o, import_ladder *out);
// Writes the ladder directory atomically; refuses an existing dir. source: a note kept in ladder.json.
sx_status import_write_dir(const import_ladder *l, const char *dir, const char *source);
// Reads a ladder directory (checks format, version and checksums). out overwritten.
sx_status import_read_dir(const char *dir, import_ladder *out);
// 1 when dir holds a ladder.json of this format.
int import_is_ladder_dir(const char *dir);
void import_ladder_free(import_ladder *l);
// Keeps the runs i with keep[i] != 0, in order, and frees the others.
void import_keep_runs(import_ladder *l, const unsigned char *keep);
// Removes (and frees) the runs with role heldout; returns how many. The counts given (n_given) stay the
// ladder's: a law reads the same N whichever runs it fits.
size_t import_drop_heldout(import_ladder *l);
// 1 when every run gave the count a law reads (nonembed: without embeddings).
int import_gives_n(const import_ladder *l, int nonembed);
// SX_OK when every run gave the count a law reads (nonembed: without embeddings); else an error naming the
// count that is missing and the --n choice that the ladder allows.
sx_status import_check_n_kind(const import_ladder *l, int nonembed);

// The steps between evaluations that most of the runs' consecutive evaluations share (at least half of them),
// in *every, or 0 when no interval does: a trainer logging every K steps will log a new run every K steps too.
// Errors: SX_ERR_NOMEM.
sx_status import_eval_interval(const import_ladder *l, long *every);
// Index of a loss column by name ("" or NULL: 0), or -1.
int import_loss_index(const import_ladder *l, const char *name);
// lr[total_steps] overwritten with the LR of every step (lr[i]: step i+1): the schedule string scaled by
// peak_lr, or the run's LR trace interpolated linearly in step (held outside its first and last rows).
sx_status import_run_lr(const import_run *r, double *lr);
// Training FLOPs after `tokens` tokens: flops_per_token·tokens, or 6·n_params·tokens when not given.
double import_run_flops(const import_run *r, double tokens);

#endif
