#include <errno.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/status.h"
#include "core/fsutil.h"
#include "core/tensorfile.h"
#include "core/threads.h"
#include "data/mixture.h"
#include "data/shard.h"
#include "dist/dist.h"
#include "kernels/gemm.h"
#include "model/model.h"
#include "optim/schedule.h"
#include "model/flops.h"
#include "train/batches.h"
#include "train/checkpoint.h"
#include "train/extra_targets.h"
#include "train/grad_sync.h"
#include "train/progress.h"
#include "train/runlog.h"
#include "train/train.h"
#include "tok/vocab_io.h"

#define PEAK_FP32_GFLOPS 464.0  // this machine's measured FMA peak on 2 cores (shared/REFERENCE.md)
#define PEAK_BF16_GFLOPS 925.0
#define MAX_ROLLBACKS 8         // rollbacks to one checkpoint before the spike guard gives up
#define SPIKE_WARMUP 10         // good steps before the running average is trusted

static volatile sig_atomic_t stop_requested;
void train_request_stop(void) { stop_requested = 1; }

typedef struct {
    const train_options *o;
    model m;
    optimizer opt;
    param_ref *refs;
    lr_schedule sched;
    extra_targets extra;        // --mtp, --prefix-aux
    batch_source *train, *val;
    // A mixture's validation sets (--val X.mix, or --train X.mix without --val): one source each, its name
    // and weight; val_loss is then the weighted mix and val_loss_NAME each source's loss.
    batch_source *vals[MIXTURE_MAX_SOURCES];
    char val_names[MIXTURE_MAX_SOURCES][MIXTURE_NAME_MAX];
    double val_w[MIXTURE_MAX_SOURCES];
    size_t n_vals;
    long fc_source;             // the validation set the forecast is of (index into vals), or -1: the mix
    int32_t *tokens;
    size_t B, T;
    long total_steps, step;     // step = completed optimizer steps
    double tokens_seen, flops_seen, flops_per_token, peak;
    double *eval_fracs, *save_fracs;
    size_t n_eval_fracs, n_save_fracs;
    runlog log;
    char ckpt_path[4096];
    json_t *init_record;        // --init-from: {"path", "sha256"} of the starting weights for config.json, or NULL
    // Spike guard: running average of good losses (saved in checkpoints), steps whose batches are skipped
    // since the last checkpoint, and the test hooks (SEXTANT_INJECT_*_AT_STEP; each fires once).
    double loss_avg;
    long loss_avg_n;
    long skip[MAX_ROLLBACKS];
    size_t n_skips;
    long inject_nan, inject_spike;
    // Data parallelism (dist/): this rank trains rows [row0, row0 + rows) of every (B, T+1) batch, whose
    // losses and gradients count with weight share = rows / B; stop is the stop request as all ranks agreed
    // on it this step; comm_s the seconds of this step's all-reduce. Test hooks: SEXTANT_DIST_CHECK=1
    // compares the parameters of all ranks after every step; SEXTANT_DIST_FAULT=kill:K|hang:K makes the
    // last rank die or freeze at step K.
    int rank;
    int lock_fd;   // rank 0's lock on the run directory (-1: none)
    bool dist, stop, check_every_step;
    size_t row0, rows;
    float share;
    grad_sync sync;             // the gradients' sum over ranks, overlapped with the backward (--bucket-mb)
    // --zero1 (ZeRO-1) under mpirun: opt holds only this rank's shard of the optimizer state. Rank q owns the
    // tensors [shard_tensor[q], shard_tensor[q+1]), the floats [shard_param[q], shard_param[q+1]) of the
    // parameter block and [shard_state[q], shard_state[q+1]) of the whole optimizer's state; each has P+1
    // entries. full is the whole optimizer on rank 0 while a checkpoint is read or written, else zeroed.
    bool zero;
    size_t *shard_tensor, *shard_param, *shard_state;
    optimizer full;
    double comm_s;
    long fault_step;
    int fault_signal;
    // For the final summary line: this process's first step, start time, and the last losses; for MoE the
    // expert loads' max/mean ratio (per layer) summed over this process's steps (its mean over layers) and its
    // worst value.
    long first_step;
    double t_start, last_loss, last_val;
    double load_ratio_sum, load_ratio_worst;
} run;

// Parses "0.05,0.1,..." into sorted fractions in (0, 1].
static sx_status parse_fracs(const char *s, double **out, size_t *n) {
    *n = 0;
    *out = NULL;
    if (!s || !*s) return SX_OK;
    size_t cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    double *f = sx_alloc(cap * sizeof *f, "train f");
    char *copy = sx_strdup(s, "train copy"), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        double v = strtod(tok, &end);
        if (*end || !(v > 0 && v <= 1)) {
            sx_status st = sx_fail(SX_ERR_ARG, "'%s': '%s' is not a fraction in (0, 1]", s, tok); // before tok is freed
            free(f);
            free(copy);
            return st;
        }
        f[(*n)++] = v;
    }
    free(copy);
    *out = f;
    return SX_OK;
}

static bool at_fraction(const double *fracs, size_t n, long step, long total) {
    for (size_t i = 0; i < n; i++)
        if (step == (long)llround(fracs[i] * (double)total)) return true;
    return false;
}

static bool hook_wants(const train_eval_hook *h, long step) { return h && h->wants && h->wants(h->ctx, step); }

static bool eval_due(const run *r, long step) {
    return step == r->total_steps || (r->o->eval_every > 0 && step % r->o->eval_every == 0) ||
           at_fraction(r->eval_fracs, r->n_eval_fracs, step, r->total_steps) || hook_wants(r->o->eval_hook, step);
}

// This rank's rows of the (B, T+1) batch in r->tokens.
static const int32_t *my_rows(const run *r) { return r->tokens + r->row0 * (r->T + 1); }

// The mean loss of one validation source over eval_batches batches, each split over the ranks like a
// training batch.
static double evaluate_source(run *r, batch_source *src, sx_status *st) {
    double sum = 0, loss = 0;
    sx_status nomem = SX_OK;
    for (long i = 0; i < r->o->eval_batches; i++) {
        *st = batch_source_eval(src, (size_t)i, r->B, r->tokens);
        if (*st) return NAN;
        if (!nomem) nomem = model_loss(&r->m, my_rows(r), NULL, &loss);
        sum += r->share * loss;
    }
    if ((*st = dist_agree(nomem))) return NAN;   // a kernel without scratch on any rank: the loss means nothing
    if ((*st = dist_allreduce_sum_f64(&sum, 1))) return NAN;
    return sum / (double)r->o->eval_batches;
}

// The validation loss: of --val (or fixed windows of --train), or for a mixture the weighted mean of its
// sources' losses, which are written to per_source[0..n_vals).
static double evaluate(run *r, double *per_source, sx_status *st) {
    if (!r->n_vals) return evaluate_source(r, r->val ? r->val : r->train, st);
    double mix = 0;
    for (size_t k = 0; k < r->n_vals; k++) {
        per_source[k] = evaluate_source(r, r->vals[k], st);
        if (*st) return NAN;
        mix += r->val_w[k] * per_source[k];
    }
    return mix;
}

// Opens the validation sets of mixture spec `path`, one batch source per source's validation shard.
static sx_status open_mixture_vals(run *r, const char *path, size_t vocab) {
    mixture_spec m;
    sx_status st = mixture_spec_load(path, &m);
    for (size_t k = 0; k < m.n && !st; k++) {
        if ((st = batch_source_open(&r->vals[k], m.src[k].val, r->T, false, 0))) {
            st = sx_fail(st, "%s: source %s's validation data: %s", path, m.src[k].name, sx_last_error());
            break;
        }
        r->n_vals = k + 1;
        snprintf(r->val_names[k], sizeof r->val_names[k], "%s", m.src[k].name);
        r->val_w[k] = m.src[k].weight;
        if (batch_source_vocab(r->vals[k]) != vocab)
            st = sx_fail(SX_ERR_MISMATCH, "validation set %s (%s) has vocabulary %zu, the training data has %zu",
                         m.src[k].name, m.src[k].val, batch_source_vocab(r->vals[k]), vocab);
    }
    return st;
}

static json_t *train_meta(const run *r) {
    return json_pack("{s:I, s:f, s:f, s:o, s:f, s:I}", "step", (json_int_t)r->step, "tokens_seen", r->tokens_seen,
                     "flops_seen", r->flops_seen, "data", batch_source_state(r->train), "loss_avg", r->loss_avg,
                     "loss_avg_n", (json_int_t)r->loss_avg_n);
}

static sx_status save_checkpoint(run *r, const char *path) {
    SX_CHECK(!r->zero || r->full.state, "--zero1: gather_state before writing a checkpoint");
    json_t *meta = train_meta(r);
    sx_status st = checkpoint_save(path, &r->m, r->zero ? &r->full : &r->opt, meta);
    json_decref(meta);
    return st;
}

// Step counters and data position from train_meta's object, every field checked first (from is named in
// the error message).
static sx_status apply_meta(run *r, json_t *meta, const char *from) {
    train_progress p;
    sx_status st = train_progress_read(meta, r->total_steps, r->opt.t, from, &p);
    if (st) return st;
    r->step = p.step;
    r->tokens_seen = p.tokens_seen;
    r->flops_seen = p.flops_seen;
    r->loss_avg = p.loss_avg;
    r->loss_avg_n = p.loss_avg_n;
    return batch_source_restore(r->train, p.data, from);
}

// --zero1: rank 0's whole optimizer (r->full), the checkpoints' view of the state, while one is read or written.
static sx_status open_full(run *r) {
    return r->full.state ? SX_OK : optimizer_init(&r->full, &r->o->opt, r->refs, r->m.table.n);
}

// --zero1, collective: rank 0's r->full <- every rank's shard of the state, and the step count.
static sx_status gather_state(run *r) {
    sx_status st = dist_agree(r->rank == 0 ? open_full(r) : SX_OK);
    if (!st) st = dist_gather_ranges(r->opt.state, r->full.state, r->shard_state, 0);
    r->full.t = r->opt.t;
    return st;
}

// --zero1, collective: every rank's shard <- rank 0's r->full when it holds one (a checkpoint was read; on a
// fresh start every rank initialised its shard alike). Frees r->full.
static sx_status scatter_state(run *r) {
    uint8_t have = r->full.state != NULL;
    sx_status st = dist_broadcast(&have, sizeof have, 0);
    if (!st && have) st = dist_scatter_ranges(r->full.state, r->opt.state, r->shard_state, 0);
    optimizer_free(&r->full);
    return st;
}

// --zero1: the tensors cut into P contiguous shards of about equal optimizer state (a tensor stays whole: Muon
// and the hyperball need whole matrices), and the optimizer of this rank's shard.
static sx_status shard_optimizer(run *r) {
    const size_t P = (size_t)dist_size(), n = r->m.table.n;
    const param_table *t = &r->m.table;
    r->shard_tensor = sx_calloc_n(3 * (P + 1), sizeof *r->shard_tensor, "train shards");
    if (!r->shard_tensor) return SX_ERR_NOMEM;   // sx_alloc said what
    r->shard_param = r->shard_tensor + P + 1;
    r->shard_state = r->shard_param + P + 1;
    const size_t total = optimizer_state_floats(&r->o->opt, r->refs, n);
    size_t k = 0, acc = 0;
    for (size_t q = 0; q < P; q++) {
        r->shard_tensor[q] = k;
        r->shard_param[q] = k < n ? t->v[k].offset : t->total;
        r->shard_state[q] = acc;
        for (; k < n && (acc < total / P * (q + 1) || q + 1 == P); k++)   // the last rank takes the rest
            acc += optimizer_state_floats(&r->o->opt, &r->refs[k], 1);
    }
    r->shard_tensor[P] = n;
    r->shard_param[P] = t->total;
    r->shard_state[P] = total;
    const size_t first = r->shard_tensor[r->rank];
    return optimizer_init(&r->opt, &r->o->opt, r->refs + first, r->shard_tensor[r->rank + 1] - first);
}

// The --save-at copy of the state at r->step: out/ckpt-<step>.sxt.
static sx_status save_kept_copy(run *r) {
    char keep[4200];
    snprintf(keep, sizeof keep, "%s/ckpt-%ld.sxt", r->o->out, r->step);
    return save_checkpoint(r, keep);
}

// Continues from the checkpoint at path: parameters, optimizer state, step counters and data position.
static sx_status resume_from(run *r, const char *path) {
    json_t *meta = NULL;
    sx_status st = r->zero ? open_full(r) : SX_OK;
    if (!st) st = checkpoint_load(path, &r->m, r->zero ? &r->full : &r->opt, &meta);
    if (!st && r->zero) r->opt.t = r->full.t;   // the shards get their state from r->full in sync_from_rank0
    if (!st) st = apply_meta(r, meta, path);
    json_decref(meta);
    return st;
}

// Gives every rank rank 0's parameters, optimizer state, counters and data position, so that all ranks
// continue identically and only rank 0 needs to read checkpoints. No-op with one rank.
static sx_status sync_from_rank0(run *r) {
    if (!r->dist) return SX_OK;
    json_t *meta = r->rank == 0 ? train_meta(r) : NULL;
    char *text = meta ? json_dumps(meta, JSON_COMPACT) : NULL;
    json_decref(meta);
    uint64_t len = text ? strlen(text) + 1 : 0;
    sx_status st = dist_broadcast(&len, sizeof len, 0);
    if (!st && !len) st = sx_fail(SX_ERR_NOMEM, "rank 0 could not serialise the training state");
    if (!st && r->rank && !(text = sx_alloc(len, "train text"))) st = sx_fail(SX_ERR_NOMEM, "out of memory");
    st = dist_agree(st);
    if (!st) st = dist_broadcast(text, len, 0);
    if (!st) st = dist_broadcast(r->m.params, r->m.table.total * sizeof *r->m.params, 0);
    if (!st) st = r->zero ? scatter_state(r) : dist_broadcast(r->opt.state, r->opt.state_floats * sizeof *r->opt.state, 0);
    if (!st) st = dist_broadcast(&r->opt.t, sizeof r->opt.t, 0);
    if (!st && r->rank) {
        meta = json_loads(text, 0, NULL);
        st = meta ? apply_meta(r, meta, "rank 0's state") : sx_fail(SX_ERR_FORMAT, "rank 0's state is not JSON");
        json_decref(meta);
    }
    free(text);
    return dist_agree(st);
}

// resume_from on rank 0, then the same state on every rank.
static sx_status resume_everywhere(run *r, const char *path) {
    sx_status st = dist_agree(r->rank == 0 ? resume_from(r, path) : SX_OK);
    return st ? st : sync_from_rank0(r);
}

// A branch starts with its parent's metrics up to the branch point, so its run directory holds a whole curve.
static sx_status copy_parent_metrics(const char *parent_ckpt, const char *out, long step) {
    char src[4096], dst[4096];
    snprintf(src, sizeof src, "%s", parent_ckpt);
    char *slash = strrchr(src, '/');
    snprintf(slash ? slash + 1 : src, sizeof src - (size_t)(slash ? slash + 1 - src : 0), "metrics.jsonl");
    snprintf(dst, sizeof dst, "%s/metrics.jsonl", out);
    long kept;
    return runlog_copy_steps(src, dst, step, &kept);
}

// The whole run's training tokens.
static double run_tokens(const run *r) { return (double)r->total_steps * (double)(r->B * r->T) * (double)r->o->grad_accum; }

// How many times the run goes over its training shard (0 for an endless synthetic source).
static double data_passes(const run *r) {
    double have = batch_source_tokens(r->train);
    return have > 0 ? run_tokens(r) / have : 0;
}

static sx_status write_config(run *r) {
    const train_options *o = r->o;
    const long failures = sx_alloc_failures();
    model_flops f = model_flops_count(&r->m.cfg, r->T);
    sx_status st = sx_alloc_check(failures);   // the count builds a parameter table
    if (st) return st;
    json_t *c = json_pack("{s:s, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o}",
                          "model", r->m.cfg.descriptor, "n_params", (json_int_t)f.params_total,
                          "n_params_nonembed", (json_int_t)f.params_nonembed, "flops_per_token", f.train_per_token,
                          "total_steps", (json_int_t)r->total_steps,
                          "total_tokens", (json_int_t)run_tokens(r),
                          "batch_tokens", (json_int_t)(r->B * r->T * (size_t)o->grad_accum), "batch", (json_int_t)r->B,
                          "seq", (json_int_t)r->T, "grad_accum", (json_int_t)o->grad_accum, "seed", (json_int_t)o->seed,
                          "schedule", lr_schedule_to_json(&r->sched), "optimizer", optimizer_config_to_json(&o->opt),
                          "model_config", model_config_to_json(&r->m.cfg));
    json_object_set_new(c, "train_data", json_string(o->train_data));
    shard_header h;   // the vocabulary the shard was written with, so that `sample` finds it: text in and out
    char vocab[4096];
    if (strncmp(o->train_data, "synthetic:", 10) && shard_read_header(o->train_data, &h) == SX_OK &&
        vocab_find_beside(o->train_data, h.vocab_hash, vocab, sizeof vocab))
        json_object_set_new(c, "vocab", json_string(vocab));
    if (data_passes(r) > 0) json_object_set_new(c, "data_passes", json_real(data_passes(r)));
    if (o->unique_tokens > 0) {   // with the order the capped data was read in: the data law's first pass is fresh only in epochs
        json_object_set_new(c, "unique_tokens", json_real(batch_source_tokens(r->train)));
        json_object_set_new(c, "data_order", json_string(o->data_order));
    }
    json_object_set_new(c, "val_data", json_string(o->val_data ? o->val_data : ""));
    json_object_set_new(c, "dtype", json_string(o->dtype));
    json_object_set_new(c, "ranks", json_integer(dist_size()));
    if (o->echo) json_object_set(c, "flags", o->echo);
    if (o->echo) json_object_set_new(c, "resolved_paths", train_paths_resolved(o->echo));
    if (o->echo) json_object_set_new(c, "data_identity", train_data_identity(o->echo));
    if (r->init_record) json_object_set(c, "init_from", r->init_record);
    st = runlog_write_json(o->out, "config.json", c);
    json_decref(c);
    return st;
}

// SEXTANT_INJECT_NAN_AT_STEP, SEXTANT_INJECT_SPIKE_AT_STEP, SEXTANT_FAIL_WRITE_AFTER, SEXTANT_STALL_WRITE_AFTER
// (train.h).
static void read_test_hooks(run *r) {
    const char *nan = getenv("SEXTANT_INJECT_NAN_AT_STEP"), *spike = getenv("SEXTANT_INJECT_SPIKE_AT_STEP");
    const char *fail = getenv("SEXTANT_FAIL_WRITE_AFTER");
    r->inject_nan = nan ? atol(nan) : 0;
    r->inject_spike = spike ? atol(spike) : 0;
    if (fail) tf_fail_write_after = atoi(fail);
    const char *stall = getenv("SEXTANT_STALL_WRITE_AFTER");
    if (stall) tf_stall_write_after = atoi(stall);
    const char *check = getenv("SEXTANT_DIST_CHECK"), *fault = getenv("SEXTANT_DIST_FAULT");
    r->check_every_step = check && !strcmp(check, "1");
    if (fault && !strncmp(fault, "kill:", 5)) r->fault_signal = SIGKILL;
    if (fault && !strncmp(fault, "hang:", 5)) r->fault_signal = SIGSTOP;
    r->fault_step = r->fault_signal ? atol(fault + 5) : 0;
}

// --init-from on a fresh run (every rank: each initialises its own optimizer shard from the weights): the
// source's weights replace the initial ones; the optimizer starts afresh and the step at 0. A resumed run
// takes its weights from its own checkpoint and keeps config.json's record of the source.
static sx_status init_weights_from(run *r) {
    const char *src = r->o->init_from;
    if (!src || !*src || access(r->ckpt_path, F_OK) == 0) return SX_OK;
    if (r->o->branch_from && *r->o->branch_from)
        return sx_fail(SX_ERR_ARG, "--init-from and --branch-from both start from another run: --branch-from continues "
                       "its optimizer and step, --init-from takes only its weights; give one");
    char hex[65];
    sx_status st = checkpoint_load_weights(src, &r->m);
    if (!st) st = fs_sha256_file(src, hex);
    if (!st) r->init_record = json_pack("{s:s, s:s}", "path", src, "sha256", hex);
    return st;
}

static sx_status setup(run *r) {
    const train_options *o = r->o;
    if (o->batch <= 0 || o->seq <= 0 || o->grad_accum <= 0 || o->eval_batches <= 0)
        return sx_fail(SX_ERR_ARG, "--batch, --seq, --grad-accum and --eval-batches must be positive");
    if (o->eval_every < 0 || o->ckpt_every < 0 || o->eval_task_items < 0 || !(o->tokens >= 0) ||
        !(o->unique_tokens >= 0) || !(o->peak_gflops >= 0))   // 0: off, or the default
        return sx_fail(SX_ERR_ARG, "--eval-every, --ckpt-every, --eval-task-items, --tokens, --unique-tokens and "
                       "--peak-gflops must not be negative");
    if (!o->resume && o->override && *o->override)
        return sx_fail(SX_ERR_ARG, "--override names flags a --resume may change: give it with --resume");
    if (!o->resume && o->steps > 0 && o->tokens > 0)   // a resume may extend a --tokens run with --override steps
        return sx_fail(SX_ERR_ARG, "give --steps or --tokens, not both (--tokens is the budget when --steps is 0)");
    if (strcmp(o->dtype, "fp32") && strcmp(o->dtype, "bf16"))
        return sx_fail(SX_ERR_ARG, "--dtype must be fp32 or bf16, not '%s'", o->dtype);
    if (!o->out || !*o->out) return sx_fail(SX_ERR_ARG, "--out: a run directory is required");
    if (o->on_spike && strcmp(o->on_spike, "stop") && strcmp(o->on_spike, "rollback"))
        return sx_fail(SX_ERR_ARG, "--on-spike must be stop or rollback, not '%s'", o->on_spike);
    if (!(o->bucket_mb >= 0 && o->bucket_mb <= 1e6))
        return sx_fail(SX_ERR_ARG, "--bucket-mb must be 0 (one all-reduce after the backward) or a size in MiB up "
                       "to 1e6, not %g", o->bucket_mb);
    if (!(o->spike_threshold == 0 || o->spike_threshold > 1))
        return sx_fail(SX_ERR_ARG, "--spike-threshold must be 0 (off) or a factor above 1, not %g", o->spike_threshold);
    read_test_hooks(r);
    r->rank = dist_rank();
    r->dist = dist_size() > 1;
    // --threads 0 on one process: the thread count follows the cores other processes leave free, checked
    // every THREADS_ADAPT_WINDOW seconds (results do not depend on the thread count).
    sx_status st = threads_start(o->threads, r->dist ? dist_cores_per_rank() : 0, r->rank == 0 ? "train" : NULL);
    if (st) return st;
    gemm_set_precision(strcmp(o->dtype, "bf16") ? GEMM_FP32 : GEMM_BF16);
    r->B = (size_t)o->batch;
    r->T = (size_t)o->seq;
    if (r->B < (size_t)dist_size())
        return sx_fail(SX_ERR_ARG, "--batch %zu is less than the %d ranks: each rank needs at least one sequence of "
                       "every batch (--batch is the global batch)", r->B, dist_size());
    r->row0 = r->B * (size_t)r->rank / (size_t)dist_size();
    r->rows = r->B * (size_t)(r->rank + 1) / (size_t)dist_size() - r->row0;
    r->share = (float)r->rows / (float)r->B;
    bool epoch = !strcmp(o->data_order, "epoch");
    if (!epoch && strcmp(o->data_order, "random"))
        return sx_fail(SX_ERR_ARG, "--data-order must be random or epoch, not '%s'", o->data_order);
    st = batch_source_open(&r->train, o->train_data, r->T, epoch, (uint64_t)o->seed);
    bool val_mix = mixture_is_spec(o->val_data) || (!(o->val_data && *o->val_data) && mixture_is_spec(o->train_data));
    if (!st && !val_mix && o->val_data && *o->val_data) st = batch_source_open(&r->val, o->val_data, r->T, false, 0);
    if (st) return st;
    size_t vocab = batch_source_vocab(r->train);
    if (o->unique_tokens > 0 && (st = batch_source_cap(r->train, o->unique_tokens))) return st;
    if (val_mix && (st = open_mixture_vals(r, mixture_is_spec(o->val_data) ? o->val_data : o->train_data, vocab)))
        return st;
    if (r->val && batch_source_vocab(r->val) != vocab)
        return sx_fail(SX_ERR_MISMATCH, "validation data %s has vocabulary %zu, training data %s has %zu",
                       o->val_data, batch_source_vocab(r->val), o->train_data, vocab);
    model_config cfg;
    if ((st = model_config_parse(o->model, vocab, &cfg))) return st;
    if ((st = extra_targets_init(&r->extra, o->mtp, o->prefix_aux, o->aux_end, o->prefix_vocab, o->train_data, vocab)))
        return st;
    if ((st = model_init(&r->m, &cfg)) || (st = extra_targets_attach(&r->extra, &r->m)) ||
        (st = model_reserve(&r->m, r->rows, r->T)))
        return st;
    size_t bucket = o->bucket_mb > 0 ? (size_t)fmax(1, o->bucket_mb * (1 << 20) / sizeof(float)) : 0;
    if (r->dist && (st = grad_sync_init(&r->sync, &r->m, bucket))) return st;
    if (o->init_by_name) model_init_weights_by_name(&r->m, (uint64_t)o->seed);
    else model_init_weights(&r->m, (uint64_t)o->seed);
    // A hyperball keeps each matrix at its initial norm, so none may start at zero (docs/MODEL.md "Optimizers").
    if (o->opt.kind == OPT_ADAMH || o->opt.kind == OPT_MUONH) model_init_zero_matrices(&r->m, (uint64_t)o->seed);
    snprintf(r->ckpt_path, sizeof r->ckpt_path, "%s/checkpoint.sxt", o->out);
    if ((st = init_weights_from(r))) return st;   // before the optimizer: the hyperball records each matrix's norm
    r->refs = sx_calloc_n(r->m.table.n, sizeof *r->refs, "train r.refs");
    if (!r->refs) return sx_fail(SX_ERR_NOMEM, "out of memory");
    model_param_refs(&r->m, r->refs);
    r->zero = o->zero1 && r->dist;
    if ((st = r->zero ? shard_optimizer(r) : optimizer_init(&r->opt, &o->opt, r->refs, r->m.table.n))) return st;
    double batch_tokens = (double)(r->B * r->T) * (double)o->grad_accum;
    r->total_steps = o->steps > 0 ? o->steps : (long)floor(o->tokens / batch_tokens);
    if (r->total_steps <= 0)
        return sx_fail(SX_ERR_ARG, "give --steps or a --tokens budget of at least one batch (%.0f tokens)", batch_tokens);
    if ((st = lr_schedule_parse(o->schedule, r->total_steps, &r->sched))) return st;
    if (o->warmup && *o->warmup && (st = lr_schedule_set_warmup(&r->sched, o->warmup))) return st;
    if ((st = parse_fracs(o->eval_at, &r->eval_fracs, &r->n_eval_fracs))) return st;
    r->tokens = sx_alloc(r->B * (r->T + 1) * sizeof *r->tokens, "train r.tokens");
    if (!r->tokens) return sx_fail(SX_ERR_NOMEM, "out of memory");
    const long failures = sx_alloc_failures();
    r->flops_per_token = model_flops_count(&cfg, r->T).train_per_token;
    if ((st = sx_alloc_check(failures))) return st;
    r->peak = o->peak_gflops > 0 ? o->peak_gflops : strcmp(o->dtype, "bf16") ? PEAK_FP32_GFLOPS : PEAK_BF16_GFLOPS;
    if ((st = parse_fracs(o->save_at, &r->save_fracs, &r->n_save_fracs))) return st;
    if (o->eval_hook && o->eval_hook->start && (st = o->eval_hook->start(o->eval_hook->ctx, r->total_steps))) return st;
    const train_model_probe *p = o->task_probe;
    if (o->eval_tasks && *o->eval_tasks && !p)
        return sx_fail(SX_ERR_ARG, "--eval-tasks %s: this caller does not measure tasks (`sextant train` does)", o->eval_tasks);
    if (p && p->start && r->rank == 0 && (st = p->start(p->ctx, &r->m))) return st;
    r->fc_source = -1;   // the validation set the hook watches: "" for the run's validation loss
    const char *vs = o->eval_hook && o->eval_hook->val_set ? o->eval_hook->val_set(o->eval_hook->ctx) : "";
    for (size_t k = 0; k < r->n_vals && vs[0]; k++)
        if (!strcmp(r->val_names[k], vs)) r->fc_source = (long)k;
    if (vs[0] && r->fc_source < 0)
        return sx_fail(SX_ERR_ARG, "%s forecasts validation set '%s', which this run's data does not have (train on the "
                       "mixture that holds it)", o->forecast, vs);
    return SX_OK;
}

// A checkpoint written by an older build, which wrote the --save-at copy second, may have lost it to a kill
// between the two: when the resumed step is a save-at step and its copy is missing, write it now.
static sx_status restore_kept_copy(run *r) {
    char keep[4200];
    snprintf(keep, sizeof keep, "%s/ckpt-%ld.sxt", r->o->out, r->step);
    if (!at_fraction(r->save_fracs, r->n_save_fracs, r->step, r->total_steps) || access(keep, F_OK) == 0) return SX_OK;
    return save_kept_copy(r);
}

// --resume continues the run in --out, not another one: its config.json's flags must match these (before
// config.json is rewritten).
static sx_status check_same_run(run *r) {
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", r->o->out);
    json_t *old = json_load_file(path, 0, NULL);
    sx_status st = train_config_check_resume(json_object_get(old, "flags"), json_object_get(old, "resolved_paths"),
                                             r->o->echo, r->o->override, r->o->out);
    if (!st) st = train_data_check_resume(json_object_get(old, "data_identity"), r->o->echo, r->o->override, r->o->out);
    json_t *init = json_object_get(old, "init_from");
    if (!st && init && !r->init_record) r->init_record = json_incref(init);
    json_decref(old);
    return st;
}

// Rank 0's part of the setup: the run directory, resuming or branching, config.json and metrics.jsonl.
static sx_status open_run_dir(run *r) {
    const train_options *o = r->o;
    sx_status st = fs_mkdir_p(o->out);
    if (!st) st = fs_lock_dir(o->out, &r->lock_fd);
    if (st) return st;
    fs_remove_stale_tmp(o->out);   // a kill -9 inside a checkpoint write leaves one behind
    bool own = access(r->ckpt_path, F_OK) == 0, branch = o->branch_from && *o->branch_from;
    if (own && !o->resume)
        return sx_fail(SX_ERR_ARG, "%s already holds a run (checkpoint.sxt); pass --resume to continue it or choose another --out",
                       o->out);
    if (own && (st = check_same_run(r))) return st;
    if (!own && o->resume && !o->resume_or_start)   // a typo in --out, or a run that died before its first checkpoint: say so
        return sx_fail(SX_ERR_ARG, "--resume: %s holds no checkpoint (checkpoint.sxt) to continue; check --out, drop "
                       "--resume to start a fresh run there, or pass --resume-or-start", o->out);
    if (own && (st = resume_from(r, r->ckpt_path))) return st;
    if (own && (st = restore_kept_copy(r))) return st;
    if (!own && branch && (st = resume_from(r, o->branch_from))) return st;
    if (!own && branch && (st = copy_parent_metrics(o->branch_from, o->out, r->step))) return st;
    if ((st = write_config(r))) return st;
    if (data_passes(r) > 1)   // scaling laws and forecasts assume fresh data
        fprintf(stderr, "sextant train: note: %.0f tokens is %.2f passes over %s (%.0f tokens): repeated data trains "
                "worse than fresh data\n", run_tokens(r), data_passes(r), o->train_data, batch_source_tokens(r->train));
    return runlog_open(&r->log, o->out, own || branch ? r->step : -1, !o->quiet);
}

static void teardown(run *r) {
    if (r->lock_fd >= 0) close(r->lock_fd);
    runlog_close(&r->log);
    optimizer_free(&r->opt);
    optimizer_free(&r->full);
    free(r->shard_tensor);
    grad_sync_free(&r->sync);
    model_free(&r->m);
    extra_targets_free(&r->extra);
    batch_source_close(r->train);
    batch_source_close(r->val);
    for (size_t k = 0; k < r->n_vals; k++) batch_source_close(r->vals[k]);
    free(r->refs);
    free(r->tokens);
    free(r->eval_fracs);
    free(r->save_fracs);
    json_decref(r->init_record);
}

// Test hooks: the loss of step `step`, replaced by NaN or multiplied by 100 the first time the step is reached.
static double injected_loss(run *r, long step, double loss) {
    if (step == r->inject_nan) { r->inject_nan = 0; return NAN; }
    if (step == r->inject_spike) { r->inject_spike = 0; return 100 * loss; }
    return loss;
}

static bool is_spike(const run *r, double loss) {
    return r->o->spike_threshold > 0 && r->loss_avg_n >= SPIKE_WARMUP && loss > r->o->spike_threshold * r->loss_avg;
}

// Folds a good loss into the running average: the plain mean of the first 20, then an exponential average.
static void loss_avg_update(run *r, double loss) {
    r->loss_avg_n++;
    r->loss_avg += (loss - r->loss_avg) / (double)(r->loss_avg_n < 20 ? r->loss_avg_n : 20);
}

// Why the step's update was not applied, into buf: a non-finite loss or gradient norm, or a loss spike.
static void diagnose(const run *r, double loss, double norm, char *buf, size_t n) {
    if (!isfinite(loss)) snprintf(buf, n, "the loss is not finite (loss %g)", loss);
    else if (is_spike(r, loss))
        snprintf(buf, n, "loss spike: %g is above %g x the running average %g", loss, r->o->spike_threshold, r->loss_avg);
    else snprintf(buf, n, "the gradient norm is not finite (loss %g, grad norm %g)", loss, norm);
}

// --on-spike rollback: logs the event, reloads the last checkpoint and marks step bad_step's batches to be
// skipped when the replay reaches it. Gives up after MAX_ROLLBACKS to the same checkpoint.
static sx_status rollback(run *r, long bad_step, const char *why) {
    if (r->n_skips == MAX_ROLLBACKS)
        return sx_fail(SX_ERR_NUMERIC, "step %ld: %s, after %d rollbacks to the same checkpoint; stopping (the last "
                       "checkpoint is intact). Hint: lower --lr or --muon-lr, add warmup, or check the data",
                       bad_step, why, MAX_ROLLBACKS);
    sx_status st = resume_everywhere(r, r->ckpt_path);
    if (st) return st;
    r->skip[r->n_skips++] = bad_step;
    if (r->rank) return SX_OK;
    if (!r->o->quiet) fprintf(stderr, "step %ld: %s; rolled back to step %ld, skipping its batch\n", bad_step, why, r->step);
    return runlog_write(&r->log, json_pack("{s:I, s:s, s:s, s:I}", "step", (json_int_t)bad_step, "event", "rollback",
                                           "reason", why, "rolled_back_to", (json_int_t)r->step));
}

// Draws and discards the batches of a step marked bad by a rollback; no-op for other steps.
static sx_status skip_if_bad(run *r, long step) {
    sx_status st = SX_OK;
    for (size_t i = 0; i < r->n_skips; i++)
        if (r->skip[i] == step)
            for (long k = 0; k < r->o->grad_accum && !st; k++) st = batch_source_next(r->train, r->B, r->tokens);
    return st;
}

// Sums this step's gradients, share-weighted losses (next-token and extra), MoE statistics and stop requests
// over the ranks (in place), so that every rank takes the same optimizer step; sets r->stop and r->comm_s.
static sx_status reduce_step(run *r, double *loss, double *extra) {
    r->stop = stop_requested;
    if (!r->dist) return SX_OK;
    double t0 = runlog_now(), v[3] = {*loss, r->stop, *extra};
    sx_status st = grad_sync_finish(&r->sync);
    if (!st && r->m.n_stats) st = dist_allreduce_sum(r->m.stats_acc, r->m.cfg.n_layer * r->m.n_stats);
    if (!st) st = dist_allreduce_sum_f64(v, 3);
    r->comm_s = runlog_now() - t0;
    *loss = v[0];
    *extra = v[2];
    r->stop = v[1] > 0;
    return st;
}

// The optimizer step; returns the pre-clip gradient norm (not finite: nothing changed). With --zero1 each rank
// updates its shard under the norm of all the gradients (every rank holds them all, summed), then the
// parameters are all-gathered: the same bits as one optimizer over every tensor.
static double step_optimizer(run *r, double lr_mult, sx_status *st) {
    if (!r->zero) return optimizer_step(&r->opt, lr_mult);
    double norm = optimizer_step_with_norm(&r->opt, lr_mult, grad_global_norm(r->refs, r->m.table.n));
    if (isfinite(norm)) *st = dist_allgather_ranges(r->m.params, r->shard_param);
    return norm;
}

// One optimizer step over grad_accum micro-batches (each rank its rows of each, then summed over the
// ranks); returns the mean next-token loss and sets *norm and *extra (the mean weighted extra-target loss).
static double train_step(run *r, double lr_mult, double *norm, double *extra, sx_status *st) {
    model_zero_grad(&r->m);
    double loss = 0;
    *extra = 0;
    const long failures = sx_alloc_failures();
    for (long k = 0; k < r->o->grad_accum; k++) {
        if ((*st = batch_source_next(r->train, r->B, r->tokens))) return NAN;
        if (r->dist && k + 1 == r->o->grad_accum) grad_sync_arm(&r->sync);   // only now are the gradients final
        loss += r->share * model_loss_and_grad(&r->m, my_rows(r), r->share / (float)r->o->grad_accum);
        *extra += r->share * model_extra_loss(&r->m);
    }
    // A kernel that could not allocate its scratch skipped its work: stop before the update (the last
    // checkpoint is intact) rather than call the garbage a numerical failure.
    if ((*st = dist_agree(sx_alloc_check(failures)))) {   // every rank stops together
        if (r->dist) grad_sync_finish(&r->sync);            // after the sums in flight
        return NAN;
    }
    if ((*st = reduce_step(r, &loss, extra))) return NAN;
    loss /= (double)r->o->grad_accum;
    *extra /= (double)r->o->grad_accum;
    loss = injected_loss(r, r->step + 1, loss);
    *norm = isfinite(loss) && !is_spike(r, loss) ? step_optimizer(r, lr_mult, st) : NAN;
    if (*st) return NAN;
    if (isfinite(*norm)) model_after_step(&r->m);
    if (isfinite(*norm) && (r->check_every_step || r->step + 1 == r->total_steps))
        *st = dist_check_identical(r->m.params, r->m.table.total * sizeof *r->m.params, "parameters");
    return loss;
}

// Rank 0's record of a finished step: the metrics line (stolen), the checkpoint when ckpt, and a kept copy
// at the --save-at fractions.
// The kept copy goes first: were the run killed between the two files, the resume replays this step from the
// previous checkpoint and writes both again (the other order left a checkpoint past a missing copy). The log
// is made durable before either, so that it never ends before its checkpoint.
static sx_status record_step(run *r, json_t *line, long step, bool ckpt) {
    sx_status st = runlog_write(&r->log, line);
    bool keep = at_fraction(r->save_fracs, r->n_save_fracs, step, r->total_steps);
    if (!st && (ckpt || keep)) st = runlog_sync(&r->log);
    if (!st && keep) st = save_kept_copy(r);
    if (!st && ckpt) st = save_checkpoint(r, r->ckpt_path);
    return st;
}

// One step's per-layer max/mean expert loads into the run's totals (the summary line).
static void note_loads(run *r, const json_t *max_load) {
    size_t L = json_array_size(max_load);
    double mean = 0;
    for (size_t l = 0; l < L; l++) {
        double v = json_number_value(json_array_get(max_load, l));
        mean += v / (double)L;
        r->load_ratio_worst = fmax(r->load_ratio_worst, v);
    }
    r->load_ratio_sum += mean;
}

static sx_status loop(run *r) {
    const train_options *o = r->o;
    double batch_tokens = (double)(r->B * r->T) * (double)o->grad_accum, t_start = runlog_now();
    long first = r->step;
    r->first_step = first;
    r->t_start = t_start;
    r->last_val = NAN;
    bool rolls_back = o->on_spike && !strcmp(o->on_spike, "rollback");
    sx_status st = rolls_back && r->zero ? gather_state(r) : SX_OK;
    if (!st && rolls_back && r->rank == 0 && access(r->ckpt_path, F_OK) != 0) st = save_checkpoint(r, r->ckpt_path); // step 0 to roll back to
    optimizer_free(&r->full);
    st = dist_agree(st);
    while (r->step < r->total_steps && !st) {
        double t0 = runlog_now(), norm;
        long step = r->step + 1;
        if (r->dist && step == r->fault_step && r->rank == dist_size() - 1) raise(r->fault_signal);
        if ((st = skip_if_bad(r, step))) break;
        threads_recheck();
        double lr_mult = lr_schedule_mult(&r->sched, step), extra;
        float extra_w[XENT_MAX_EXTRA];
        size_t n_extra = extra_targets_weights(&r->extra, (double)(step - 1) / (double)r->total_steps, extra_w);
        model_set_extra_weights(&r->m, extra_w);
        double loss = train_step(r, lr_mult, &norm, &extra, &st);
        if (st) break;
        if (!isfinite(loss) || !isfinite(norm)) {
            char why[160];
            diagnose(r, loss, norm, why, sizeof why);
            if (rolls_back) {
                if ((st = dist_agree(rollback(r, step, why)))) break;
                continue;
            }
            return sx_fail(SX_ERR_NUMERIC, "step %ld: %s; the last checkpoint is intact. "
                           "Hint: lower --lr or --muon-lr, add warmup, or check the data", step, why);
        }
        loss_avg_update(r, loss);
        r->step = step;
        r->tokens_seen += batch_tokens;
        r->flops_seen += batch_tokens * r->flops_per_token;
        double dt = runlog_now() - t0, tps = batch_tokens / dt;
        json_t *line = json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "step", (json_int_t)step,
                                 "tokens", r->tokens_seen, "frac", (double)step / (double)r->total_steps, "lr",
                                 o->opt.lr * lr_mult, "train_loss", loss, "grad_norm", norm, "flops", r->flops_seen,
                                 "tok_per_s", tps, "mfu", tps * r->flops_per_token / (r->peak * 1e9));
        if (r->dist) json_object_set_new(line, "allreduce_s", json_real(r->comm_s));
        json_object_set_new(line, "threads", json_integer(omp_get_max_threads()));
        if (n_extra) {   // the extra targets' term of the objective, apart from train_loss, and its weights
            json_t *w = json_array();
            for (size_t k = 0; k < n_extra; k++) json_array_append_new(w, json_real(extra_w[k]));
            json_object_set_new(line, "extra_loss", json_real(extra));
            json_object_set_new(line, "extra_w", w);
        }
        json_t *moe = model_moe_stats_json(&r->m);
        if (moe) {
            note_loads(r, json_object_get(moe, "moe_max_load"));
            json_object_set_new(line, "aux_loss", json_real(model_aux_loss(&r->m)));
            json_object_update_new(line, moe);
        }
        double val = NAN;
        char note[96] = "";
        bool alert = false;   // the hook's note must be seen even without a progress line
        if (eval_due(r, step)) {
            double per_source[MIXTURE_MAX_SOURCES];
            val = evaluate(r, per_source, &st);
            if (st) { json_decref(line); break; }
            json_object_set_new(line, "val_loss", json_real(val));
            for (size_t k = 0; k < r->n_vals; k++) {
                char key[64];
                snprintf(key, sizeof key, "val_loss_%s", r->val_names[k]);
                json_object_set_new(line, key, json_real(per_source[k]));
            }
            const train_model_probe *p = o->task_probe;
            if (p && p->measure && r->rank == 0 && (st = p->measure(p->ctx, &r->m, line))) { json_decref(line); break; }
            const train_eval_hook *h = o->eval_hook;
            double watched = r->fc_source >= 0 ? per_source[r->fc_source] : val;
            alert = h && h->on_eval && h->on_eval(h->ctx, step, watched, line, note, sizeof note);
        }
        bool ckpt = step == r->total_steps || (o->ckpt_every > 0 && step % o->ckpt_every == 0) || r->stop;
        if (r->zero && (ckpt || at_fraction(r->save_fracs, r->n_save_fracs, step, r->total_steps))) st = gather_state(r);
        if (!st && r->rank == 0) st = record_step(r, line, step, ckpt);
        else json_decref(line);
        optimizer_free(&r->full);
        if ((st = dist_agree(st))) break;
        if (ckpt) r->n_skips = 0; // replays start after this step now
        char text[384], eta[32];
        double avg = (runlog_now() - t_start) / (double)(step - first);
        runlog_format_duration(avg * (double)(r->total_steps - step), eta, sizeof eta);
        int n = snprintf(text, sizeof text, "step %ld/%ld | loss %.4f | lr %.2e | %.0f tok/s | MFU %.1f%% | ETA %s", step,
                         r->total_steps, loss, o->opt.lr * lr_mult, tps, 100 * tps * r->flops_per_token / (r->peak * 1e9), eta);
        if (isfinite(val)) snprintf(text + n, sizeof text - (size_t)n, " | val %.4f%s", val, note);
        if (alert && !r->log.tty && r->rank == 0) fprintf(stderr, "step %ld: val %.4f%s\n", step, val, note);
        runlog_progress(&r->log, text, step == first + 1);
        r->last_loss = loss;
        if (isfinite(val)) r->last_val = val;
        if (r->stop) {
            runlog_progress_end(&r->log);
            return sx_fail(SX_ERR_INTERRUPTED, "stopped at step %ld; checkpoint written, rerun with --resume to continue", step);
        }
    }
    runlog_progress_end(&r->log);
    return st;
}

// The run's one-line summary on stderr (rank 0): steps, time, speed, the last losses, where it went.
static void print_summary(const run *r) {
    double secs = runlog_now() - r->t_start, steps = (double)(r->step - r->first_step);
    double tps = secs > 0 ? steps * (double)(r->B * r->T) * (double)r->o->grad_accum / secs : 0;
    char took[32], val[48] = "";
    runlog_format_duration(secs, took, sizeof took);
    if (isfinite(r->last_val)) snprintf(val, sizeof val, ", val loss %.4f", r->last_val);
    char load[80] = "";
    if (r->m.cfg.n_expert && steps > 0)
        snprintf(load, sizeof load, "; expert load max/mean %.3f (mean of layers and steps), worst %.3f",
                 r->load_ratio_sum / steps, r->load_ratio_worst);
    fprintf(stderr, "sextant train: done: %ld steps (%.0f this time) in %s, %.0f tok/s; last train loss %.4f%s%s; %s\n",
            r->step, steps, took, tps, r->last_loss, val, load, r->o->out);
    if (r->zero) {
        double most = 0, mb = 4.0 / 1e6;
        for (int q = 0; q < dist_size(); q++) most = fmax(most, (double)(r->shard_state[q + 1] - r->shard_state[q]));
        fprintf(stderr, "sextant train: optimizer state sharded over %d ranks (ZeRO-1): %.3f MB on rank 0, at most %.3f MB "
                "on a rank, %.3f MB unsharded\n", dist_size(), mb * (double)r->opt.state_floats, mb * most,
                mb * (double)r->shard_state[dist_size()]);
    }
    const grad_sync *g = &r->sync;
    if (!r->dist || !g->steps) return;
    char how[160] = "one all-reduce after each backward (--bucket-mb 0)";
    if (g->n_buckets)
        snprintf(how, sizeof how, "%zu buckets of %g MiB started during the backward, %.0f%% of the gradients summed "
                 "by its end", g->n_buckets, r->o->bucket_mb, 100 * g->floats_early / (g->floats_total * (double)g->steps));
    fprintf(stderr, "sextant train: gradient all-reduce: %.3f s waited after the backward (%.1f%% of the time, "
            "%.2f ms a step); %s\n", g->wait_s, secs > 0 ? 100 * g->wait_s / secs : 0, 1e3 * g->wait_s / (double)g->steps, how);
}

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

sx_status train_run(const train_options *o) {
    run r;
    memset(&r, 0, sizeof r);
    r.lock_fd = -1;
    r.o = o;
    stop_requested = 0;
    // A closed terminal (SIGHUP) stops the run like SIGTERM: a checkpoint after the current step, not a loss of
    // every step since the last one.
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term, old_hup;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    sx_status st = dist_agree(setup(&r));
    if (!st) st = dist_agree(r.rank == 0 ? open_run_dir(&r) : SX_OK);
    if (!st) st = sync_from_rank0(&r);
    if (!st) st = loop(&r);
    if (!st && r.rank == 0) print_summary(&r);
    if (!st && o->eval_hook && o->eval_hook->finish && r.rank == 0) st = o->eval_hook->finish(o->eval_hook->ctx, o->out);
    if (!st && r.rank == 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s/DONE", o->out);
        FILE *f = fopen(path, "w");
        if (!f || fclose(f))   // without it a ladder trains the run again, and fit takes it as unfinished
            st = sx_fail(SX_ERR_IO, "%s: cannot mark the run finished (%s)", path, strerror(errno));
    }
    teardown(&r);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    return st;
}
