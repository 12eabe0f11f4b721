#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>
#include <jansson.h>
#include "core/status.h"
#include "core/fsutil.h"
#include "core/lines.h"
#include "data/shard.h"
#include "dist/dist.h"
#include "infer/tasks.h"
#include "model/config.h"
#include "optim/schedule.h"
#include "data/mixture.h"
#include "model/flops.h"
#include "scale/ladder.h"
#include "train/options.h"
#include "train/runlog.h"

static void spec_defaults(ladder_spec *s) {
    memset(s, 0, sizeof *s);
    strcpy(s->name, "ladder");
    strcpy(s->schedule, "wsd:decay=0.2");
    strcpy(s->optimizer, "adamw");
    s->n_seeds = 2;
    s->seq = 128;
    s->batch = 16;
    s->eval_batches = 32;
    s->tokens_per_param = 20;
    s->lr = 3e-3;
    s->lr_ref_width = 128;
    s->lr_width_power = 1;
    s->muon_lr = 0.02;
    s->hyper_lr = 0.02;
    s->warmup = 0.02;
    // Every 5% of the run, plus every 2% in the last 20% where a WSD decay moves the loss fastest.
    for (int i = 1; i <= 16; i++) s->eval_at[s->n_eval++] = 0.05 * i;
    for (int i = 41; i <= 50; i++) s->eval_at[s->n_eval++] = 0.02 * i;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Parses "a,b,c" or "a b c" numbers into out (at most max); returns the count or -1.
static long parse_numbers(char *text, double *out, size_t max) {
    size_t n = 0;
    for (char *save = NULL, *tok = strtok_r(text, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
        char *end;
        double v = strtod(tok, &end);
        if (*end || !isfinite(v) || n == max) return -1;
        out[n++] = v;
    }
    return (long)n;
}

// A spec value in [lo, hi] into *out; whole: it must also be a whole number (a count: "seeds 1.5" would
// otherwise silently become 1).
static sx_status spec_number(const char *path, int line, const char *key, const char *val, double lo, double hi,
                             bool whole, double *out) {
    char *e;
    double v = strtod(val, &e);
    *out = 0;
    if (*e || !isfinite(v) || v < lo || v > hi || (whole && v != floor(v)))
        return sx_fail(SX_ERR_FORMAT, "%s:%d: %s: expected a %s in [%.10g, %.10g], not '%s'", path, line, key,
                       whole ? "whole number" : "number", lo, hi, val);
    *out = v;
    return SX_OK;
}

static sx_status set_key(ladder_spec *s, const char *path, int line, const char *key, char *val) {
    double num[LADDER_MAX_FRACS];
    long n;
#define BAD(what) sx_fail(SX_ERR_FORMAT, "%s:%d: %s: %s", path, line, key, what)
#define COPY(field) do { if (strlen(val) >= sizeof s->field) return BAD("too long"); strcpy(s->field, val); return SX_OK; } while (0)
#define NUMBER(field, lo, hi) return spec_number(path, line, key, val, lo, hi, false, &s->field)
#define WHOLE(field, lo, hi) do { double v; sx_status st_ = spec_number(path, line, key, val, lo, hi, true, &v); \
                                  s->field = (size_t)v; return st_; } while (0)
    if (!strcmp(key, "name")) COPY(name);
    if (!strcmp(key, "train")) COPY(train);
    if (!strcmp(key, "val")) COPY(val);
    if (!strcmp(key, "val_set")) COPY(val_set);
    if (!strcmp(key, "model")) COPY(model);
    // Values that the trainer would refuse are checked here too, so that a typo fails `plan` with its line
    // rather than every run.
    char why[512];
#define BAD_CHECK(failed) do { if (failed) { snprintf(why, sizeof why, "%s", sx_last_error()); return BAD(why); } } while (0)
    if (!strcmp(key, "schedule")) {
        lr_schedule check;
        BAD_CHECK(lr_schedule_parse(val, 1000, &check));
        COPY(schedule);
    }
    if (!strcmp(key, "optimizer")) {   // checked here, so that a typo is reported with its line
        optimizer_kind kind;
        if (optimizer_kind_parse(val, &kind)) return BAD("expected adamw, muon, adamh or muonh");
        COPY(optimizer);
    }
    if (!strcmp(key, "extra")) COPY(extra);
    if (!strcmp(key, "eval_tasks")) {
        BAD_CHECK(task_names_check(val));
        COPY(eval_tasks);
    }
    if (!strcmp(key, "eval_tasks_val")) COPY(eval_tasks_val);
    if (!strcmp(key, "eval_task_items")) WHOLE(eval_task_items, 1, 1e6);
    if (!strcmp(key, "seeds")) WHOLE(n_seeds, 1, 1000);
    if (!strcmp(key, "seq")) WHOLE(seq, 1, LADDER_MAX_DIM);
    if (!strcmp(key, "batch")) WHOLE(batch, 1, LADDER_MAX_DIM);
    if (!strcmp(key, "eval_batches")) WHOLE(eval_batches, 1, LADDER_MAX_DIM);
    if (!strcmp(key, "min_steps")) WHOLE(min_steps, 0, 1e9);
    if (!strcmp(key, "tokens_per_param")) NUMBER(tokens_per_param, 1e-9, 1e6);
    if (!strcmp(key, "lr")) NUMBER(lr, 0, 1e3);
    if (!strcmp(key, "muon_lr")) NUMBER(muon_lr, 0, 1e3);
    if (!strcmp(key, "hyper_lr")) NUMBER(hyper_lr, 0, 0.999);
    if (!strcmp(key, "lr_ref_width")) NUMBER(lr_ref_width, 1, 1e6);
    if (!strcmp(key, "lr_width_power")) NUMBER(lr_width_power, -10, 10);
    if (!strcmp(key, "warmup")) NUMBER(warmup, 0, 1);
    if (!strcmp(key, "unique_tokens")) NUMBER(unique_tokens, 0, 1e18);
    if (!strcmp(key, "mtp")) WHOLE(mtp, 0, XENT_MAX_EXTRA - 1);
    if (!strcmp(key, "prefix_aux")) NUMBER(prefix_aux, 0, 10);
    if (!strcmp(key, "aux_end")) NUMBER(aux_end, 1e-9, 1);
    if (!strcmp(key, "prefix_vocab")) COPY(prefix_vocab);
    if (!strcmp(key, "widths") || !strcmp(key, "budgets")) {
        if ((n = parse_numbers(val, num, LADDER_MAX_RUNGS)) <= 0) return BAD("expected 1 to 32 numbers");
        s->n_rungs = (size_t)n;
        for (long i = 0; i < n; i++) {
            if (num[i] <= 0) return BAD("values must be positive");
            if (key[0] == 'w' && num[i] > 1e6) return BAD("widths must be at most 1e6");
            if (key[0] == 'w' && num[i] != floor(num[i])) return BAD("widths must be whole numbers");
            for (long j = 0; j < i; j++)   // two equal rungs make the per-fraction fits degenerate
                if (num[j] == num[i]) return sx_fail(SX_ERR_FORMAT, "%s:%d: %s: %g appears twice", path, line, key, num[i]);
            if (key[0] == 'w') s->widths[i] = (size_t)num[i];
            else s->budgets[i] = num[i];
        }
        return SX_OK;
    }
    if (!strcmp(key, "eval_at")) {
        if ((n = parse_numbers(val, num, LADDER_MAX_FRACS)) <= 0) return BAD("expected fractions");
        for (long i = 0; i < n; i++)
            if (!(num[i] > 0 && num[i] <= 1)) return BAD("fractions must lie in (0, 1]");
        qsort(num, (size_t)n, sizeof *num, cmp_double);
        memcpy(s->eval_at, num, (size_t)n * sizeof *num);
        s->n_eval = (size_t)n;
        return SX_OK;
    }
    if (!strcmp(key, "lr_sweep") || !strcmp(key, "lr_sweep_widths")) {
        bool widths = key[8] == '_';
        if ((n = parse_numbers(val, num, LADDER_MAX_SWEEP)) <= 0) return BAD("expected 1 to 8 numbers");
        for (long i = 0; i < n; i++) {
            if (!(num[i] > 0) || (widths && num[i] != floor(num[i]))) return BAD("values must be positive (widths whole)");
            if (widths && num[i] > 1e6) return BAD("widths must be at most 1e6");
            if (widths) s->lr_sweep_widths[i] = (size_t)num[i];
            else s->lr_sweep[i] = num[i];
        }
        if (widths) s->n_lr_sweep_widths = (size_t)n;
        else s->n_lr_sweep = (size_t)n;
        return SX_OK;
    }
    if (!strcmp(key, "branches")) {
        s->n_branches = 0;
        for (char *save = NULL, *tok = strtok_r(val, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
            ladder_branch *b = &s->branches[s->n_branches];
            char shape[16];
            if (s->n_branches == LADDER_MAX_BRANCHES || sscanf(tok, "%lf:%lf:%15s", &b->from, &b->length, shape) != 3 ||
                !(b->from > 0 && b->length > 0 && b->from + b->length <= 1) ||
                (strcmp(shape, "linear") && strcmp(shape, "cosine") && strcmp(shape, "sqrt")))
                return BAD("expected FROM:LENGTH:SHAPE with fractions and shape linear|cosine|sqrt");
            strcpy(b->shape, shape);
            s->n_branches++;
        }
        return SX_OK;
    }
    return BAD("unknown key");
#undef BAD
#undef COPY
#undef NUMBER
#undef WHOLE
#undef BAD_CHECK
}

sx_status ladder_spec_read(const char *path, ladder_spec *s) {
    spec_defaults(s);
    snprintf(s->spec_path, sizeof s->spec_path, "%s", path);
    FILE *f = fopen(path, "r");
    if (!f) return sx_fail(SX_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
    line_reader lr;
    line_reader_init(&lr, f);
    sx_status st = SX_OK;
    while (!st && line_reader_next(&lr)) {
        int no = (int)lr.no;
        char *key = strtok(line_reader_uncomment(&lr), " \t\r\n");
        if (!key) continue;
        char *val = strtok(NULL, "\r\n");
        while (val && (*val == ' ' || *val == '\t')) val++;
        for (size_t k = val ? strlen(val) : 0; k > 0 && (val[k - 1] == ' ' || val[k - 1] == '\t'); k--)
            val[k - 1] = 0;   // the blanks before a trailing comment are not part of the value
        if (!val || !*val) st = sx_fail(SX_ERR_FORMAT, "%s:%d: %s needs a value", path, no, key);
        else st = set_key(s, path, no, key, val);
    }
    line_reader_close(&lr);
    if (st) return st;
    if (!*s->model || !strstr(s->model, "{width}"))
        return sx_fail(SX_ERR_FORMAT, "%s: 'model' must be a descriptor template containing {width}", path);
    if (!s->n_rungs) return sx_fail(SX_ERR_FORMAT, "%s: give the rungs with 'widths' or 'budgets'", path);
    if (!*s->train) return sx_fail(SX_ERR_FORMAT, "%s: 'train' (a token shard) is required", path);
    // The schedule is checked on its own first: an unknown one was once blamed on the branches.
    lr_schedule sched;
    if ((st = lr_schedule_parse(s->schedule, 1000, &sched))) {
        char why[512];
        snprintf(why, sizeof why, "%s", sx_last_error());
        return sx_fail(st, "%s: schedule: %s", path, why);
    }
    if (s->n_branches && sched.kind != LR_WSD)
        return sx_fail(SX_ERR_FORMAT, "%s: cooldown branches need a wsd schedule, not '%s'", path, s->schedule);
    return SX_OK;
}

static sx_status data_vocab(const char *spec, size_t *vocab) {
    if (!strncmp(spec, "synthetic:", 10)) {
        *vocab = (size_t)strtoul(spec + 10, NULL, 10);
        return SX_OK;
    }
    mixture_spec m;   // a mixture: its shards share one vocabulary (mixture_open checks it)
    sx_status st = mixture_is_spec(spec) ? mixture_spec_load(spec, &m) : SX_OK;
    if (st) return st;
    shard_header h;
    if ((st = shard_read_header(mixture_is_spec(spec) ? m.src[0].train : spec, &h))) return st;
    *vocab = h.vocab_size;
    return SX_OK;
}

static sx_status rung_config(const ladder_spec *s, size_t width, size_t vocab, model_config *c) {
    char desc[160], *at = strstr(s->model, "{width}");
    snprintf(desc, sizeof desc, "%.*s%zu%s", (int)(at - s->model), s->model, width, at + 7);
    return model_config_parse(desc, vocab, c);
}

// The batch for a budget of this many tokens: the spec's, or under min_steps the largest divisor of it that
// still gives min_steps steps (a divisor, so that the evaluation covers the same windows).
// The divisors are visited from the top by pairs (d, batch/d), so the search takes O(sqrt(batch)) steps.
static size_t rung_batch(const ladder_spec *s, double tokens) {
    if (tokens / (double)(s->batch * s->seq) >= (double)s->min_steps) return s->batch;
    size_t best = 1;
    for (size_t d = 1; d * d <= s->batch; d++) {
        if (s->batch % d) continue;
        size_t pair[2] = {d, s->batch / d};
        for (int k = 0; k < 2; k++)
            if (pair[k] > best && tokens / (double)(pair[k] * s->seq) >= (double)s->min_steps) best = pair[k];
    }
    return best;
}

// Whole-run compute, steps and batch of a rung at this width.
static double rung_compute(const ladder_spec *s, const model_config *c, long *steps, size_t *batch) {
    model_flops f = model_flops_count(c, s->seq);
    double tokens = s->tokens_per_param * f.params_nonembed;
    *batch = rung_batch(s, tokens);
    *steps = lround(tokens / (double)(*batch * s->seq));
    if (*steps < 1) *steps = 1;
    return f.train_per_token * (double)*steps * (double)(*batch * s->seq);
}

// The width whose whole run comes closest to the budget in log compute (a ratio: rungs are spaced
// geometrically, so a miss of 10% means the same at every rung). Widths step by 16 to stay GEMM-friendly.
static sx_status width_for_budget(const ladder_spec *s, double budget, size_t vocab, size_t *width) {
    double best = INFINITY;
    *width = 0;
    for (size_t w = 16; w <= 4096; w += 16) {
        model_config c;
        long steps;
        size_t batch;
        if (rung_config(s, w, vocab, &c) != SX_OK) continue;
        double err = fabs(log(rung_compute(s, &c, &steps, &batch) / budget));
        if (err < best) { best = err; *width = w; }
    }
    return *width ? SX_OK : sx_fail(SX_ERR_ARG, "%s: no width fits the model template", s->spec_path);
}

static void join_fracs(char *out, size_t size, const double *f, size_t n, double scale) {
    size_t len = 0;
    out[0] = 0;
    for (size_t i = 0; i < n && len < size; i++)
        len += (size_t)snprintf(out + len, size - len, "%s%.6g", i ? "," : "", f[i] * scale);
}

sx_status ladder_plan(const ladder_spec *s, ladder_run **runs, size_t *n) {
    size_t vocab;
    sx_status st = data_vocab(s->train, &vocab);
    if (st) return st;
    lr_schedule shape;
    if ((st = lr_schedule_parse(s->schedule, 1000, &shape))) return st;
    size_t cap = s->n_rungs * s->n_seeds * (1 + s->n_branches) + LADDER_MAX_SWEEP * LADDER_MAX_SWEEP;
    ladder_run *r = sx_calloc_n(cap, sizeof *r, "ladder r");
    if (!r) return sx_fail(SX_ERR_NOMEM, "out of memory");
    size_t widths[LADDER_MAX_RUNGS];
    for (size_t i = 0; i < s->n_rungs && !st; i++)
        st = s->budgets[0] > 0 ? width_for_budget(s, s->budgets[i], vocab, &widths[i]) : SX_OK;
    if (!s->budgets[0] || s->budgets[0] <= 0) memcpy(widths, s->widths, sizeof widths);
    size_t k = 0;
    for (size_t i = s->n_rungs; i-- > 0 && !st;) {   // largest rung first: it takes longest
        model_config c;
        if ((st = rung_config(s, widths[i], vocab, &c))) break;
        long steps;
        size_t batch;
        double flops = rung_compute(s, &c, &steps, &batch);
        if (!isfinite(flops)) { st = SX_ERR_NOMEM; break; }   // the FLOP count could not allocate (sx_alloc said what)
        // The LR follows the width rule lr(w) = lr * (ref/w)^power, so every rung trains near its own optimum
        // and the rungs differ in size only (what the laws across rungs assume).
        double lr_scale = pow(s->lr_ref_width / (double)widths[i], s->lr_width_power);
        for (size_t seed = 1; seed <= s->n_seeds; seed++) {
            ladder_run *x = &r[k++];
            snprintf(x->dir, sizeof x->dir, "w%zu-s%zu", widths[i], seed);
            snprintf(x->descriptor, sizeof x->descriptor, "%s", c.descriptor);
            x->width = widths[i];
            x->seed = seed;
            x->batch = batch;
            x->eval_batches = s->eval_batches * (s->batch / batch);   // a smaller batch: more of them, same windows
            x->steps = x->parent_steps = steps;
            x->warmup_steps = lround(s->warmup * (double)steps);
            if (x->warmup_steps < 1) x->warmup_steps = 1;
            x->branch = -1;
            x->lr = s->lr * lr_scale;
            x->muon_lr = s->muon_lr * lr_scale;
            x->hyper_lr = s->hyper_lr;
            x->flops = flops;
            snprintf(x->schedule, sizeof x->schedule, "%s", s->schedule);
            join_fracs(x->eval_at, sizeof x->eval_at, s->eval_at, s->n_eval, 1);
            double from[LADDER_MAX_BRANCHES];
            for (size_t b = 0; b < s->n_branches; b++) from[b] = s->branches[b].from;
            join_fracs(x->save_at, sizeof x->save_at, from, s->n_branches, 1);
        }
    }
    size_t mains = k;
    for (size_t m = 0; m < mains && !st; m++) {
        for (size_t b = 0; b < s->n_branches; b++) {
            const ladder_branch *br = &s->branches[b];
            ladder_run *x = &r[k++];
            *x = r[m];
            snprintf(x->dir, sizeof x->dir, "%s-b%zu", r[m].dir, b);
            x->branch = (int)b;
            x->save_at[0] = 0;
            long s0 = lround(br->from * (double)r[m].steps), d = lround(br->length * (double)r[m].steps);
            if (d < 1) d = 1;
            // A branch resumes its main run's checkpoint at s0 and cools down over d steps: its schedule is a
            // WSD whose decay is the last d of s0 + d steps, so it matches the main run up to s0 exactly.
            x->steps = s0 + d;
            x->flops = r[m].flops * (double)x->steps / (double)r[m].steps;
            snprintf(x->schedule, sizeof x->schedule, "wsd:decay=%.9g,shape=%s,min=%.9g", (double)d / (double)x->steps,
                     br->shape, shape.min_ratio);
            double ev[16];
            // eight evaluations spread over the cooldown alone: before s0 the main run's curve already says it all
            for (int j = 1; j <= 8; j++) ev[j - 1] = ((double)s0 + (double)d * j / 8) / (double)x->steps;
            join_fracs(x->eval_at, sizeof x->eval_at, ev, 8, 1);
        }
    }
    // The LR sweep: seed 1 of each swept rung again at every multiple of its LR (but 1x: the main run).
    size_t sweep_w[LADDER_MAX_SWEEP], n_sw = s->n_lr_sweep_widths;
    if (s->n_lr_sweep && !n_sw)   // default: the 3 smallest rungs (the plan lists the largest first)
        for (size_t m = mains; m-- > 0 && n_sw < 3;)
            if (r[m].seed == 1) sweep_w[n_sw++] = r[m].width;
    if (s->n_lr_sweep_widths) memcpy(sweep_w, s->lr_sweep_widths, n_sw * sizeof *sweep_w);
    for (size_t w = 0; w < n_sw && s->n_lr_sweep && !st; w++) {
        size_t m = 0;
        while (m < mains && !(r[m].width == sweep_w[w] && r[m].seed == 1)) m++;
        if (m == mains) { st = sx_fail(SX_ERR_ARG, "%s: lr_sweep_widths %zu is not a rung of the ladder", s->spec_path, sweep_w[w]); break; }
        for (size_t j = 0; j < s->n_lr_sweep; j++) {
            if (s->lr_sweep[j] == 1) continue;
            ladder_run *x = &r[k++];
            *x = r[m];
            snprintf(x->dir, sizeof x->dir, "w%zu-lr%g", sweep_w[w], s->lr_sweep[j]);
            x->branch = LADDER_SWEEP;
            x->lr *= s->lr_sweep[j];
            x->muon_lr *= s->lr_sweep[j];
            x->hyper_lr = fmin(x->hyper_lr * s->lr_sweep[j], 0.999);   // a fraction of the radius, below 1
            x->save_at[0] = 0;
        }
    }
    if (st) { free(r); return st; }
    *runs = r;
    *n = k;
    return SX_OK;
}

static bool file_exists(const char *dir, const char *run, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s/%s", dir, run, name);
    return access(p, F_OK) == 0;
}

// The main run a branch starts from (branches follow the main runs, n_branches per main run), or NULL.
static const ladder_run *parent_of(const ladder_spec *s, const ladder_run *runs, size_t i) {
    return runs[i].branch >= 0 ? &runs[(i - s->n_rungs * s->n_seeds) / s->n_branches] : NULL;
}

// The training options of one run of the plan, with the strings they point to.
typedef struct {
    train_options o;
    char out[4096], branch_from[4200], warmup[32], extra[1024];
    char *extra_argv[128];   // the spec's extra arguments, passed to the trainer after the options
    int n_extra;
} run_options;

// Options of run x: the plan's values over train_options_default; the spec's `extra` arguments are split
// into r->extra_argv, to follow them verbatim.
static sx_status build_options(const ladder_spec *s, const ladder_run *x, const ladder_run *parent, const char *out_dir,
                               int threads, run_options *r) {
    train_options *o = &r->o;
    train_options_default(o);
    o->model = x->descriptor;
    o->train_data = s->train;
    o->val_data = s->val;
    o->unique_tokens = s->unique_tokens > 0 ? (double)llround(s->unique_tokens) : 0;
    o->batch = (long)x->batch;
    o->seq = (long)s->seq;
    o->steps = x->steps;
    o->schedule = x->schedule;
    snprintf(r->warmup, sizeof r->warmup, "%ld", x->warmup_steps);
    o->warmup = r->warmup;
    o->optimizer = s->optimizer;
    o->opt.lr = (float)x->lr;
    o->opt.muon_lr = (float)x->muon_lr;
    o->opt.hyper_lr = (float)x->hyper_lr;
    o->seed = (long)x->seed;
    o->mtp = (long)s->mtp;
    o->prefix_aux = s->prefix_aux;
    if (s->aux_end > 0) o->aux_end = s->aux_end;
    o->prefix_vocab = s->prefix_vocab;
    o->eval_at = x->eval_at;
    o->eval_batches = (long)x->eval_batches;
    o->eval_tasks = s->eval_tasks;
    o->eval_tasks_val = s->eval_tasks_val;
    if (s->eval_task_items) o->eval_task_items = (long)s->eval_task_items;
    o->threads = threads;
    snprintf(r->out, sizeof r->out, "%s/%s", out_dir, x->dir);
    o->out = r->out;
    o->quiet = false;   // train.log gets a progress line every 30 s and the run's summary line
    o->save_at = x->save_at;
    if (parent) {
        snprintf(r->branch_from, sizeof r->branch_from, "%s/%s/ckpt-%ld.sxt", out_dir, parent->dir,
                 lround(s->branches[x->branch].from * (double)parent->steps));
        o->branch_from = r->branch_from;
    }
    o->resume = file_exists(out_dir, x->dir, "checkpoint.sxt");
    snprintf(r->extra, sizeof r->extra, "%s", s->extra);
    int argc = 0;
    for (char *save = NULL, *tok = strtok_r(r->extra, " \t", &save); tok && argc < 128; tok = strtok_r(NULL, " \t", &save))
        r->extra_argv[argc++] = tok;
    r->n_extra = argc;
    sx_status st = train_options_check(o);
    return st ? sx_fail(st, "%s: run %s: %s", s->spec_path, x->dir, sx_last_error()) : SX_OK;
}

// A run directory that already exists must hold this very run (same model and length), or the ladder
// would silently reuse a different experiment.
static sx_status check_existing(const char *out_dir, const ladder_run *x) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/config.json", out_dir, x->dir);
    json_t *c = json_load_file(path, 0, NULL);
    if (!c) return SX_OK;
    const char *model = json_string_value(json_object_get(c, "model"));
    long steps = (long)json_integer_value(json_object_get(c, "total_steps"));
    sx_status st = SX_OK;
    if (!model || strcmp(model, x->descriptor) || steps != x->steps)
        st = sx_fail(SX_ERR_MISMATCH, "%s/%s holds another run (%s, %ld steps; the spec wants %s, %ld steps): "
                     "remove it or choose another --out", out_dir, x->dir, model ? model : "?", steps, x->descriptor, x->steps);
    json_decref(c);
    return st;
}

// A rung whose run is longer than the training shard repeats data, which scaling laws do not model: said
// once per rung, before anything trains (each run's train.log says it too, where nobody looks).
static void warn_repeated_data(const ladder_spec *s, const ladder_run *runs, size_t n) {
    shard_header h;
    if (!strncmp(s->train, "synthetic:", 10) || shard_read_header(s->train, &h) != SX_OK || !h.n_tokens) return;
    for (size_t i = 0; i < n; i++) {
        double tokens = (double)runs[i].steps * (double)(runs[i].batch * s->seq);
        if (runs[i].branch >= 0 || runs[i].seed != 1 || tokens <= (double)h.n_tokens) continue;
        fprintf(stderr, "ladder %s: warning: rung %s trains %.0f tokens, %.2f passes over %s (%llu tokens): repeated data "
                "trains worse than fresh data and bends the fitted laws; use a larger shard or fewer tokens_per_param\n",
                s->name, runs[i].descriptor, tokens, tokens / (double)h.n_tokens, s->train, (unsigned long long)h.n_tokens);
    }
}

// Under mpirun, which rank trains each run: a main run and its cooldown branches stay together (a branch
// starts from its parent's checkpoint), and these groups go in plan order (largest first) to the rank with
// the least compute so far. owner: (n) overwritten with a rank per run.
void ladder_assign_ranks(const ladder_spec *s, const ladder_run *runs, size_t n, int ranks, int *owner) {
    size_t mains = s->n_rungs * s->n_seeds;
    double *load = sx_calloc_n((size_t)ranks, sizeof *load, "ladder load");
    for (size_t m = 0; m < mains; m++) {
        double cost = runs[m].flops;   // the main run, plus what its branches train beyond their branch point
        for (size_t b = 0; b < s->n_branches; b++) cost += runs[mains + m * s->n_branches + b].flops - runs[m].flops * s->branches[b].from;
        int best = 0;
        for (int k = 1; k < ranks; k++)
            if (load[k] < load[best]) best = k;
        load[best] += cost;
        owner[m] = best;
        for (size_t b = 0; b < s->n_branches; b++) owner[mains + m * s->n_branches + b] = best;
    }
    for (size_t i = mains * (1 + s->n_branches); i < n; i++) {   // LR-sweep runs: each on the least loaded rank
        int best = 0;
        for (int k = 1; k < ranks; k++)
            if (load[k] < load[best]) best = k;
        load[best] += runs[i].flops;
        owner[i] = best;
    }
    free(load);
    SX_CHECK(n >= mains * (1 + s->n_branches), "ladder_assign_ranks takes the plan of ladder_plan for the same spec");
}

sx_status ladder_execute(const ladder_spec *s, const char *out_dir, const char *exe, int jobs, long only) {
    ladder_run *runs;
    size_t n;
    int rank = dist_rank(), ranks = dist_size();
    if (only >= 0 && ranks > 1)
        return sx_fail(SX_ERR_ARG, "--rung runs one run of the plan: start it without mpirun, or drop --rung to spread "
                       "the ladder over the %d ranks", ranks);
    sx_status st = ladder_plan(s, &runs, &n);
    if (st) return st;
    if (only >= (long)n) { free(runs); return sx_fail(SX_ERR_ARG, "--rung %ld: the plan has %zu runs (0..%zu)", only, n, n - 1); }
    for (size_t i = 0; i < n && !st; i++) st = check_existing(out_dir, &runs[i]);
    run_options *ro = sx_alloc(sizeof *ro, "ladder run options");   // every run's options are valid before any starts
    if (!ro && !st) st = sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !st; i++)
        st = build_options(s, &runs[i], parent_of(s, runs, i), out_dir, 1, ro);
    free(ro);
    if (!st) st = fs_mkdir_p(out_dir);
    // One ladder per directory. The trainers inherit the lock (it is not closed on exec), so that a second
    // `ladder run` waits until the last of them, stopping after their ladder died, has written its checkpoint.
    int lock = -1;
    if (!st && rank == 0 && !(st = fs_lock_dir(out_dir, &lock))) fcntl(lock, F_SETFD, 0);   // rank 0 speaks for all
    if (st) { free(runs); return st; }
    warn_repeated_data(s, runs, n);
    int cores = dist_cores_per_rank();
    if (jobs > cores) {   // more runs than cores would only take turns on them, each slower
        fprintf(stderr, "ladder %s: note: --jobs %d is more than the %d cores: %d runs at a time\n", s->name, jobs, cores, cores);
        jobs = cores;
    }
    int threads = cores / jobs;
    enum { WAITING, RUNNING, FINISHED, FAILED } *state = sx_calloc_n(n, sizeof *state, "ladder state");
    pid_t *pids = sx_calloc_n(n, sizeof *pids, "ladder pids");
    int *owner = sx_calloc_n(n, sizeof *owner, "ladder owner");
    ladder_assign_ranks(s, runs, n, ranks, owner);
    // others: runs another rank trains, or (--rung) not the one asked for; they count as neither done nor
    // failed here, so that the summary speaks only of this process's share.
    size_t done = 0, failed = 0, running = 0, others = 0;
    for (size_t i = 0; i < n; i++) {
        if (owner[i] != rank || (only >= 0 && (long)i != only)) { state[i] = FINISHED; others++; }
        else if (file_exists(out_dir, runs[i].dir, "DONE")) { state[i] = FINISHED; done++; }
    }
    if (only >= 0) fprintf(stderr, "ladder %s: run %ld of the plan's %zu (--rung)%s, %d threads\n", s->name, only, n,
                           done ? ", already done" : "", threads);
    else if (ranks > 1) fprintf(stderr, "ladder %s: rank %d of %d takes %zu of the %zu runs, %zu already done, %d at a time x %d threads\n",
                                s->name, rank, ranks, n - others, n, done, jobs, threads);
    else fprintf(stderr, "ladder %s: %zu runs, %zu already done, %d at a time x %d threads\n", s->name, n, done, jobs, threads);
    const size_t mine = n - others;
    // For the ETA: the compute of the runs this process trains, and of those finished so far.
    double t0 = runlog_now(), todo_flops = 0, done_flops = 0;
    for (size_t i = 0; i < n; i++)
        if (state[i] == WAITING) todo_flops += runs[i].flops;
    while (done + failed < mine) {
        for (size_t i = 0; i < n && running < (size_t)jobs; i++) {
            if (state[i] != WAITING) continue;
            const ladder_run *parent = parent_of(s, runs, i);
            if (parent && state[parent - runs] != FINISHED) {
                if (state[parent - runs] == FAILED) { state[i] = FAILED; failed++; }
                continue;
            }
            run_options ro;
            char log[4200];
            sx_status bad = build_options(s, &runs[i], parent, out_dir, threads, &ro);
            mkdir(ro.out, 0755);
            snprintf(log, sizeof log, "%s/train.log", ro.out);
            if (bad || train_spawn(&ro.o, ro.extra_argv, ro.n_extra, exe, log, &pids[i])) {
                fprintf(stderr, "  FAILED %-16s %s\n", runs[i].dir, sx_last_error());
                state[i] = FAILED;
                failed++;
                continue;
            }
            state[i] = RUNNING;
            running++;
            fprintf(stderr, "  start  %-16s %s, %ld steps, %.3g FLOPs\n", runs[i].dir, runs[i].descriptor, runs[i].steps, runs[i].flops);
        }
        if (!running) break;
        int status;
        pid_t pid = wait(&status);
        for (size_t i = 0; i < n; i++) {
            if (state[i] != RUNNING || pids[i] != pid) continue;
            running--;
            bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
            state[i] = ok ? FINISHED : FAILED;
            ok ? done++ : failed++;
            done_flops += runs[i].flops;
            char took[32], eta[32];
            double secs = runlog_now() - t0;
            runlog_format_duration(secs, took, sizeof took);
            runlog_format_duration(secs * (todo_flops - done_flops) / done_flops, eta, sizeof eta);
            if (ok) fprintf(stderr, "  done   %-16s (%zu/%zu) | %s elapsed, ETA %s\n", runs[i].dir, done, mine, took, eta);
            else fprintf(stderr, "  FAILED %-16s see %s/%s/train.log\n", runs[i].dir, out_dir, runs[i].dir);
        }
    }
    char took[32];
    runlog_format_duration(runlog_now() - t0, took, sizeof took);
    fprintf(stderr, "ladder %s: done: %zu of %zu runs finished, %zu failed, in %s; %s\n", s->name, done, mine, failed, took, out_dir);
    free(state);
    free(pids);
    free(owner);
    free(runs);
    if (lock >= 0) close(lock);
    return failed ? sx_fail(SX_ERR_IO, "%zu ladder run(s) failed; rerun the same command to retry them", failed) : SX_OK;
}

sx_status ladder_status(const ladder_spec *s, const char *out_dir, ladder_run **runs_out, ladder_run_state **state_out,
                        size_t *n_out, size_t *n_done) {
    ladder_run *runs;
    size_t n;
    sx_status st = ladder_plan(s, &runs, &n);
    if (st) return st;
    ladder_run_state *state = sx_calloc_n(n ? n : 1, sizeof *state, "ladder state");
    *n_done = 0;
    if (!state) { free(runs); return sx_fail(SX_ERR_NOMEM, "ladder status: out of memory"); }
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s/metrics.jsonl", out_dir, runs[i].dir);
        state[i].val_loss = NAN;
        line_reader lr;
        line_reader_init(&lr, fopen(path, "r"));   // not started yet: no file, no lines
        while (line_reader_next(&lr)) {
            json_t *j = json_loads(lr.line, 0, NULL);
            if (!j) continue;
            json_t *step = json_object_get(j, "step"), *v = json_object_get(j, "val_loss");
            if (step) state[i].steps_done = (long)json_integer_value(step);
            if (v) state[i].val_loss = json_number_value(v);
            json_decref(j);
        }
        line_reader_close(&lr);
        state[i].done = file_exists(out_dir, runs[i].dir, "DONE");
        state[i].name = state[i].done ? "done" : state[i].steps_done ? "partial" : "not started";
        snprintf(state[i].val_text, sizeof state[i].val_text, isfinite(state[i].val_loss) ? "%.4f" : "-", state[i].val_loss);
        *n_done += state[i].done;
    }
    *runs_out = runs;
    *state_out = state;
    *n_out = n;
    return SX_OK;
}

sx_status ladder_print_status(const ladder_spec *s, const char *out_dir) {
    ladder_run *runs;
    ladder_run_state *state;
    size_t n, done = 0;
    sx_status st = ladder_status(s, out_dir, &runs, &state, &n, &done);
    if (st) return st;
    printf("ladder %s: %zu of %zu runs done (spec %s, runs in %s)\n", s->name, done, n, s->spec_path, out_dir);
    printf("%-18s %-28s %9s %12s %9s  %s\n", "run", "model", "steps", "FLOPs", "val_loss", "state");
    for (size_t i = 0; i < n; i++) {
        printf("%-18s %-28s %4ld/%-4ld %12.3g %9s  %s\n", runs[i].dir, runs[i].descriptor, state[i].steps_done, runs[i].steps,
               runs[i].flops, state[i].val_text, state[i].name);
    }
    free(runs);
    free(state);
    return SX_OK;
}
