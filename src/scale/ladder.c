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
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "data/mixture.h"
#include "model/flops.h"
#include "scale/ladder.h"
#include "train/options.h"
#include "train/progress.h"
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
        for (long i = 1; i < n; i++)   // sorted: a repeat is its neighbour
            if (num[i] == num[i - 1]) return sx_fail(SX_ERR_FORMAT, "%s:%d: %s: %g appears twice", path, line, key, num[i]);
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
            for (size_t j = 0; j < s->n_branches; j++)   // the same branch twice would train it twice
                if (s->branches[j].from == b->from && s->branches[j].length == b->length && !strcmp(s->branches[j].shape, shape))
                    return sx_fail(SX_ERR_FORMAT, "%s:%d: branches: %s appears twice", path, line, tok);
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

void ladder_loss_key(const ladder_spec *s, char *key, size_t cap) {
    if (*s->metric) snprintf(key, cap, "%s", s->metric);
    else snprintf(key, cap, "val_loss%s%s", *s->val_set ? "_" : "", s->val_set);
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

size_t ladder_rung_seeds(const ladder_spec *s, size_t r) {
    return s->rung_seeds[r] > s->n_seeds ? s->rung_seeds[r] : s->n_seeds;
}

size_t ladder_rung_start(const ladder_spec *s, size_t r) {
    size_t k = 0;
    for (size_t j = 0; j < r; j++) k += ladder_rung_seeds(s, j);
    return k;
}

sx_status ladder_plan(const ladder_spec *s, ladder_run **runs, size_t *n) {
    size_t vocab;
    sx_status st = data_vocab(s->train, &vocab);
    if (st) return sx_fail(st, "%s: its train data: %s", s->spec_path, sx_last_error());
    lr_schedule shape;
    if ((st = lr_schedule_parse(s->schedule, 1000, &shape))) return st;
    size_t cap = ladder_rung_start(s, s->n_rungs) * (1 + s->n_branches) + LADDER_MAX_SWEEP * LADDER_MAX_SWEEP;
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
        for (size_t seed = 1, seeds = ladder_rung_seeds(s, s->n_rungs - 1 - i); seed <= seeds; seed++) {
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
    return runs[i].branch >= 0 ? &runs[(i - ladder_rung_start(s, s->n_rungs)) / s->n_branches] : NULL;
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
    // A data-limited run reads its capped data in epochs: random windows repeat from the first step, and the
    // data-constrained law (fit --with) takes the first pass to be fresh.
    if (o->unique_tokens > 0) o->data_order = "epoch";
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
    // Those the kind does not read stay at their defaults (the trainer refuses them set): every LR scales above,
    // and a spec may carry muon_lr or hyper_lr for whichever optimizer it is switched to (one line).
    if (!optimizer_kind_parse(s->optimizer, &o->opt.kind)) optimizer_config_reset_unused(&o->opt);
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

// The "flags" object the trainer of run i records in its config.json (its echo of every training flag), into
// *out; ro: scratch for the run's options.
static sx_status planned_flags(const ladder_spec *s, const ladder_run *plan, size_t i, const char *out_dir,
                               run_options *ro, json_t **out) {
    sx_status st = build_options(s, &plan[i], parent_of(s, plan, i), out_dir, 1, ro);
    train_options o = ro->o;
    flag_def defs[TRAIN_MAX_FLAGS];
    size_t n = train_options_flags(&o, defs);
    if (!st && ro->n_extra) st = train_options_parse_args(&o, ro->n_extra, ro->extra_argv);
    if (!st && !(*out = flags_to_json(defs, n))) st = sx_fail(SX_ERR_NOMEM, "out of memory");
    return st;
}

sx_status ladder_run_check(const ladder_spec *s, const ladder_run *plan, size_t i, const char *out_dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s/config.json", out_dir, plan[i].dir);
    json_t *c = json_load_file(path, 0, NULL);
    if (!c) return SX_OK;
    const ladder_run *x = &plan[i];
    const char *model = json_string_value(json_object_get(c, "model"));
    long steps = (long)json_integer_value(json_object_get(c, "total_steps"));
    sx_status st = SX_OK;
    if (!model || strcmp(model, x->descriptor) || steps != x->steps)
        st = sx_fail(SX_ERR_MISMATCH, "%s/%s holds another run (%s, %ld steps; the spec wants %s, %ld steps): "
                     "remove it, or give the ladder another directory", out_dir, x->dir, model ? model : "?", steps, x->descriptor, x->steps);
    // Same model and length but other settings (an LR, a schedule, a seed edited in the spec): a finished run
    // would be taken as this one without a word.
    json_t *had = json_object_get(c, "flags"), *want = NULL;
    const bool compare = !st && json_is_object(had);   // a record without flags (another writer): nothing to compare
    run_options *ro = compare ? sx_alloc(sizeof *ro, "ladder run options") : NULL;
    char diff[1024];
    if (compare) st = ro ? planned_flags(s, plan, i, out_dir, ro, &want) : SX_ERR_NOMEM;   // sx_alloc said what
    if (compare && !st &&
        train_flags_differ(had, json_object_get(c, "resolved_paths"), want, NULL, "was", diff, sizeof diff))
        st = sx_fail(SX_ERR_MISMATCH, "%s/%s holds a run with other settings than the spec's: %s. Remove it to train it "
                     "again, or give the ladder another directory", out_dir, x->dir, diff);
    json_decref(want);
    free(ro);
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
    size_t mains = ladder_rung_start(s, s->n_rungs);
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

// One run of the job pool: which ladder it belongs to, its plan entry, and its state.
typedef struct {
    size_t ladder;         // index into the specs
    const ladder_run *run;
    long parent;           // pool index of the main run a branch starts from, or -1
    double cost;           // what it trains: a branch only beyond its branch point
    enum { WAITING, RUNNING, FINISHED, FAILED } state;
    pid_t pid;
} pool_run;

// Largest first; equal costs keep the ladders' order and each plan's order.
static int by_cost(const void *a, const void *b, void *pool) {
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    double ci = ((const pool_run *)pool)[i].cost, cj = ((const pool_run *)pool)[j].cost;
    return ci > cj ? -1 : ci < cj ? 1 : (i > j) - (i < j);
}

// A run's name in progress lines: with several ladders, "ladder/run".
static void pool_label(const ladder_spec *specs, size_t n_ladders, const pool_run *p, char *out, size_t size) {
    if (n_ladders > 1) snprintf(out, size, "%s/%s", specs[p->ladder].name, p->run->dir);
    else snprintf(out, size, "%s", p->run->dir);
}

// Every ladder's plan checked and validated before anything starts: a directory that holds another run, or
// options the trainer would refuse, stop all ladders. plans: (n_ladders) receives each malloc'd plan.
static sx_status plan_all(const ladder_spec *specs, const char *const *dirs, size_t n_ladders, long only, ladder_run **plans,
                          size_t *sizes) {
    sx_status st = SX_OK;
    run_options *ro = sx_alloc(sizeof *ro, "ladder run options");
    if (!ro) return sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t l = 0; l < n_ladders && !st; l++) {
        if (!(st = ladder_plan(&specs[l], &plans[l], &sizes[l])) && (only >= (long)sizes[l] || only < -1))   // -1: all
            st = sx_fail(SX_ERR_ARG, "--rung %ld: the plan has %zu runs (0..%zu)", only, sizes[l], sizes[l] - 1);
        for (size_t i = 0; i < sizes[l] && !st; i++) st = ladder_run_check(&specs[l], plans[l], i, dirs[l]);
        for (size_t i = 0; i < sizes[l] && !st; i++)
            st = build_options(&specs[l], &plans[l][i], parent_of(&specs[l], plans[l], i), dirs[l], 1, ro);
    }
    free(ro);
    return st;
}

// Index of the ladder before l with the same output directory, or l (ladders that share a directory
// train each run once: the same run directory must then hold the same run).
static size_t first_with_dir(const char *const *dirs, size_t l) {
    for (size_t k = 0; k < l; k++)
        if (!strcmp(dirs[k], dirs[l])) return k;
    return l;
}

// Whether two plans hold the same runs (directory, model and length), as a run directory must.
static bool same_runs(const ladder_run *a, size_t na, const ladder_run *b, size_t nb) {
    for (size_t i = 0; i < na && na == nb; i++)
        if (strcmp(a[i].dir, b[i].dir) || strcmp(a[i].descriptor, b[i].descriptor) || a[i].steps != b[i].steps) return false;
    return na == nb;
}

// Appends item to the comma-separated list in buf (size bytes; cut short when full).
static void list_append(char *buf, size_t size, const char *item) {
    size_t used = strlen(buf);
    snprintf(buf + used, size - used, "%s%s", used ? ", " : "", item);
}

// Trains the pool's WAITING runs, at most jobs at once, in order (a branch once its parent finished).
// *done and *failed count up; failures (size) receives the failed runs' labels, comma-separated.
static void train_pool(const ladder_spec *specs, const char *const *dirs, size_t n_ladders, pool_run *pool, size_t n,
                       const size_t *order, const char *exe, int jobs, int threads, size_t *done, size_t *failed,
                       char *failures, size_t size) {
    size_t running = 0, mine = *done + *failed;
    // For the ETA: the compute of the runs this process trains, and of those finished so far.
    double t0 = runlog_now(), todo_flops = 0, done_flops = 0;
    for (size_t i = 0; i < n; i++)
        if (pool[i].state == WAITING) { todo_flops += pool[i].run->flops; mine++; }
    while (*done + *failed < mine) {
        for (size_t k = 0; k < n && running < (size_t)jobs; k++) {
            pool_run *p = &pool[order[k]];
            if (p->state != WAITING) continue;
            if (p->parent >= 0 && pool[p->parent].state != FINISHED) {
                if (pool[p->parent].state == FAILED) { p->state = FAILED; (*failed)++; }
                continue;
            }
            run_options ro;
            char log[4200], label[160];
            pool_label(specs, n_ladders, p, label, sizeof label);
            sx_status bad = build_options(&specs[p->ladder], p->run, p->parent >= 0 ? pool[p->parent].run : NULL,
                                          dirs[p->ladder], threads, &ro);
            mkdir(ro.out, 0755);
            snprintf(log, sizeof log, "%s/train.log", ro.out);
            if (bad || train_spawn(&ro.o, ro.extra_argv, ro.n_extra, exe, log, &p->pid)) {
                fprintf(stderr, "  FAILED %-16s %s\n", label, sx_last_error());
                p->state = FAILED;
                (*failed)++;
                list_append(failures, size, label);
                continue;
            }
            p->state = RUNNING;
            running++;
            fprintf(stderr, "  start  %-16s %s, %ld steps, %.3g FLOPs\n", label, p->run->descriptor, p->run->steps, p->run->flops);
        }
        if (!running) break;
        int status;
        pid_t pid = wait(&status);
        for (size_t i = 0; i < n; i++) {
            pool_run *p = &pool[i];
            if (p->state != RUNNING || p->pid != pid) continue;
            running--;
            bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
            p->state = ok ? FINISHED : FAILED;
            ok ? (*done)++ : (*failed)++;
            done_flops += p->run->flops;
            char took[32], eta[32], label[160];
            pool_label(specs, n_ladders, p, label, sizeof label);
            double secs = runlog_now() - t0;
            runlog_format_duration(secs, took, sizeof took);
            runlog_format_duration(secs * (todo_flops - done_flops) / done_flops, eta, sizeof eta);
            if (ok) fprintf(stderr, "  done   %-16s (%zu/%zu) | %s elapsed, ETA %s\n", label, *done, mine, took, eta);
            else {
                fprintf(stderr, "  FAILED %-16s see %s/%s/train.log\n", label, dirs[p->ladder], p->run->dir);
                list_append(failures, size, label);
            }
        }
    }
}

// Fills the ladder's share of the pool (from base) and prints its heading line; how: "" or the threads
// part of a lone ladder's line. *done and *others count its runs already DONE and those this process
// does not train.
static void pool_add_ladder(const ladder_spec *specs, const char *const *dirs, size_t l, const ladder_run *plan, size_t size,
                            long only, const char *how, pool_run *pool, size_t base, size_t *done, size_t *others) {
    const ladder_spec *s = &specs[l];
    int rank = dist_rank(), ranks = dist_size();
    int *owner = sx_calloc_n(size, sizeof *owner, "ladder owner");
    ladder_assign_ranks(s, plan, size, ranks, owner);
    size_t k = first_with_dir(dirs, l), ldone = 0, lothers = 0;
    for (size_t i = 0; i < size; i++) {
        pool_run *p = &pool[base + i];
        const ladder_run *parent = parent_of(s, plan, i);
        *p = (pool_run){.ladder = l, .run = &plan[i], .parent = parent ? (long)(base + (size_t)(parent - plan)) : -1,
                        .cost = plan[i].flops - (parent ? parent->flops * s->branches[plan[i].branch].from : 0)};
        if (owner[i] != rank || (only >= 0 && (long)i != only) || k != l) { p->state = FINISHED; lothers++; }
        else if (file_exists(dirs[l], plan[i].dir, "DONE")) { p->state = FINISHED; ldone++; }
    }
    free(owner);
    *done += ldone;
    *others += lothers;
    if (k != l) fprintf(stderr, "ladder %s: its runs are ladder %s's (both in %s)\n", s->name, specs[k].name, dirs[l]);
    else if (only >= 0) fprintf(stderr, "ladder %s: run %ld of the plan's %zu (--rung)%s%s\n", s->name, only, size,
                                ldone ? ", already done" : "", how);
    else if (ranks > 1) fprintf(stderr, "ladder %s: rank %d of %d takes %zu of the %zu runs, %zu already done%s\n", s->name,
                                rank, ranks, size - lothers, size, ldone, how);
    else fprintf(stderr, "ladder %s: %zu runs, %zu already done%s\n", s->name, size, ldone, how);
}

sx_status ladder_execute(const ladder_spec *specs, const char *const *dirs, size_t n_ladders, const char *exe, int jobs,
                         long only) {
    SX_CHECK(n_ladders >= 1 && (only < 0 || n_ladders == 1), "ladder_execute: --rung names a run of one ladder");
    if (only >= 0 && dist_size() > 1)
        return sx_fail(SX_ERR_ARG, "--rung runs one run of the plan: start it without mpirun, or drop --rung to spread "
                       "the ladder over the %d ranks", dist_size());
    ladder_run **plans = sx_calloc_n(n_ladders, sizeof *plans, "ladder plans");
    size_t *sizes = sx_calloc_n(n_ladders, sizeof *sizes, "ladder plan sizes"), n = 0;
    int *locks = sx_calloc_n(n_ladders, sizeof *locks, "ladder locks");
    for (size_t l = 0; l < n_ladders; l++) locks[l] = -1;
    sx_status st = plan_all(specs, dirs, n_ladders, only, plans, sizes);
    for (size_t l = 0; l < n_ladders && !st; l++) {
        n += sizes[l];
        size_t k = first_with_dir(dirs, l);
        if (k != l && !same_runs(plans[k], sizes[k], plans[l], sizes[l]))
            st = sx_fail(SX_ERR_ARG, "ladders %s and %s write to the same directory %s with different plans: give them "
                         "different names", specs[k].name, specs[l].name, dirs[l]);
        if (!st && k == l) st = fs_mkdir_p(dirs[l]);
        // One ladder per directory. The trainers inherit the lock (it is not closed on exec), so that a second
        // `ladder run` waits until the last of them, stopping after their ladder died, has written its checkpoint.
        if (!st && k == l && dist_rank() == 0 && !(st = fs_lock_dir(dirs[l], &locks[l])))
            fcntl(locks[l], F_SETFD, 0);   // rank 0 speaks for all
    }
    if (!st) {
        for (size_t l = 0; l < n_ladders; l++) warn_repeated_data(&specs[l], plans[l], sizes[l]);
        int cores = dist_cores_per_rank();
        if (jobs > cores) {   // more runs than cores would only take turns on them, each slower
            fprintf(stderr, "ladder %s: note: --jobs %d is more than the %d cores: %d runs at a time\n", specs[0].name, jobs,
                    cores, cores);
            jobs = cores;
        }
        int threads = cores / jobs;
        // With several ladders the pool's line says how they run; with one, the ladder's own line does.
        char how[64] = "";
        if (n_ladders == 1 && only >= 0) snprintf(how, sizeof how, ", %d threads", threads);
        else if (n_ladders == 1) snprintf(how, sizeof how, ", %d at a time x %d threads", jobs, threads);
        pool_run *pool = sx_calloc_n(n, sizeof *pool, "ladder pool");
        size_t *order = sx_calloc_n(n, sizeof *order, "ladder pool order");
        // others: runs another rank trains, (--rung) not the one asked for, or an earlier ladder's in the same
        // directory; they count as neither done nor failed here, so that the summary speaks only of this
        // process's share.
        size_t done = 0, failed = 0, others = 0;
        for (size_t l = 0, base = 0; l < n_ladders; base += sizes[l], l++)
            pool_add_ladder(specs, dirs, l, plans[l], sizes[l], only, how, pool, base, &done, &others);
        if (n_ladders > 1) fprintf(stderr, "%zu ladders in one pool, largest runs first: %d at a time x %d threads\n", n_ladders,
                                   jobs, threads);
        for (size_t i = 0; i < n; i++) order[i] = i;
        qsort_r(order, n, sizeof *order, by_cost, pool);
        double t0 = runlog_now();
        char failures[512] = "", took[32];
        train_pool(specs, dirs, n_ladders, pool, n, order, exe, jobs, threads, &done, &failed, failures, sizeof failures);
        runlog_format_duration(runlog_now() - t0, took, sizeof took);
        if (n_ladders > 1) fprintf(stderr, "ladders: done: %zu of %zu runs finished, %zu failed, in %s\n", done, n - others,
                                   failed, took);
        else fprintf(stderr, "ladder %s: done: %zu of %zu runs finished, %zu failed, in %s; %s\n", specs[0].name, done,
                     n - others, failed, took, dirs[0]);
        if (failed) st = sx_fail(SX_ERR_IO, "%zu ladder run(s) failed (%s; see each one's train.log); rerun the same command "
                                 "to retry them", failed, failures);
        free(pool);
        free(order);
    }
    for (size_t l = 0; l < n_ladders; l++) {
        free(plans[l]);
        if (locks[l] >= 0) close(locks[l]);
    }
    free(plans);
    free(sizes);
    free(locks);
    return st;
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
        // A directory holding another run (trained with other settings than the spec's) is neither done nor
        // partial: `ladder run` and `fit` refuse it and say what differs.
        const bool other = ladder_run_check(s, runs, i, out_dir) == SX_ERR_MISMATCH;
        state[i].done = !other && file_exists(out_dir, runs[i].dir, "DONE");
        state[i].name = other ? "another run" : state[i].done ? "done" : state[i].steps_done ? "partial" : "not started";
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
    printf("ladder %s: %zu of %zu runs done (spec %s, runs in %s%s)\n", s->name, done, n, s->spec_path, out_dir,
           access(out_dir, F_OK) ? ": no such directory yet" : "");
    printf("%-18s %-28s %9s %12s %9s  %s\n", "run", "model", "steps", "FLOPs", "val_loss", "state");
    for (size_t i = 0; i < n; i++) {
        printf("%-18s %-28s %4ld/%-4ld %12.3g %9s  %s\n", runs[i].dir, runs[i].descriptor, state[i].steps_done, runs[i].steps,
               runs[i].flops, state[i].val_text, state[i].name);
    }
    free(runs);
    free(state);
    return SX_OK;
}
