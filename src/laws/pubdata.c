// pubdata: CSV loaders for shared/data's multi-power-law and Chinchilla files. See pubdata.h.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/lines.h"
#include "core/status.h"
#include "laws/pubdata.h"

#define CSV_MAX_FIELDS 32
#define CSV_LINE 4096

// A CSV file read line by line: header names (a copy, since the reader reuses its buffer), and the current
// row split in place in the reader's line.
typedef struct {
    line_reader r;
    const char *path;
    char header[CSV_LINE];
    char *names[CSV_MAX_FIELDS], *fields[CSV_MAX_FIELDS];
    size_t n_names, n_fields;
} csv;

static size_t csv_split(char *s, char **out) {
    size_t n = 0;
    s[strcspn(s, "\r\n")] = 0;
    for (char *p = s;; p++) {
        if (n < CSV_MAX_FIELDS) out[n++] = p;
        p = strchr(p, ',');
        if (!p) break;
        *p = 0;
    }
    return n;
}

// Index of a named column, or -1 (and a recorded error).
static int csv_col(csv *c, const char *name) {
    for (size_t i = 0; i < c->n_names; i++)
        if (strcmp(c->names[i], name) == 0) return (int)i;
    sx_fail(SX_ERR_FORMAT, "%s: no column '%s'", c->path, name);
    return -1;
}

static void csv_close(csv *c) { line_reader_close(&c->r); }

// A column a loader reads: its header name, and where its index goes.
typedef struct {
    const char *name;
    int *col;
} csv_want;
#define NWANT(w) (sizeof (w) / sizeof *(w))

// Opens dir/name (path receives the file's path, and must outlive c) and looks up the n wanted columns; a
// missing one closes the file again and the error names it.
static sx_status csv_open(csv *c, const char *dir, const char *name, char *path, size_t path_cap,
                          const csv_want *want, size_t n) {
    snprintf(path, path_cap, "%s/%s", dir, name);
    c->path = path;
    FILE *f = fopen(path, "r");
    if (!f) return sx_fail(SX_ERR_IO, "cannot open %s (is the shared data directory right?)", path);
    line_reader_init(&c->r, f);
    if (!line_reader_next(&c->r)) {
        line_reader_close(&c->r);
        return sx_fail(SX_ERR_FORMAT, "%s: empty file", path);
    }
    snprintf(c->header, sizeof c->header, "%s", c->r.line);
    c->n_names = csv_split(c->header, c->names);
    for (size_t i = 0; i < n; i++)
        if ((*want[i].col = csv_col(c, want[i].name)) < 0) {
            csv_close(c);
            return SX_ERR_FORMAT;   // csv_col said which
        }
    return SX_OK;
}

// Reads the next row; 0 at end of file.
static int csv_next(csv *c) {
    while (line_reader_next(&c->r)) {
        if (c->r.line[0] == '\n' || c->r.line[0] == 0) continue;
        c->n_fields = csv_split(c->r.line, c->fields);
        return 1;
    }
    return 0;
}

static const char *csv_get(const csv *c, int col) { return (size_t)col < c->n_fields ? c->fields[col] : ""; }

// ---- MPL schedules -------------------------------------------------------------------------------------

typedef struct {
    char name[32], type[32];
    size_t warmup, total, decay_start;
    double peak, final;
} mpl_sched_def;

static double mpl_lr_at(const mpl_sched_def *d, size_t s) {
    if (s < d->warmup) return d->peak * (double)s / (double)(d->warmup - 1);
    if (strcmp(d->type, "constant") == 0) return d->peak;
    if (strcmp(d->type, "cosine") == 0)
        return d->final + 0.5 * (d->peak - d->final) *
                              (1 + cos(M_PI * (double)(s - d->warmup) / (double)(d->total - d->warmup)));
    if (s < d->decay_start) return d->peak;
    double r = (double)(s - d->decay_start) / (double)(d->total - d->decay_start);
    if (strcmp(d->type, "wsd_exponential_decay") == 0) return pow(d->peak, 1 - r) * pow(d->final, r);
    if (strcmp(d->type, "wsd_linear_decay") == 0) return d->peak * (1 - r) + d->final * r;
    return d->final; // two_stage_step
}

static sx_status mpl_load_schedules(const char *dir, mpl_sched_def *defs, size_t cap, size_t *n) {
    csv c;
    char path[1024];
    int cs, ct, cw, cn, cd, cp, cf;
    const csv_want want[] = {{"schedule", &cs}, {"type", &ct}, {"warmup_steps", &cw},
                             {"total_steps", &cn}, {"decay_start_step", &cd}, {"peak_lr", &cp},
                             {"final_lr", &cf}};
    sx_status st = csv_open(&c, dir, "mpl_schedules.csv", path, sizeof path, want, NWANT(want));
    if (st != SX_OK) return st;
    static const char *types[] = {"constant", "cosine", "wsd_exponential_decay", "wsd_linear_decay",
                                  "two_stage_step"};
    *n = 0;
    while (csv_next(&c) && *n < cap) {
        mpl_sched_def *d = &defs[(*n)++];
        snprintf(d->name, sizeof d->name, "%s", csv_get(&c, cs));
        snprintf(d->type, sizeof d->type, "%s", csv_get(&c, ct));
        d->warmup = strtoull(csv_get(&c, cw), NULL, 10);
        d->total = strtoull(csv_get(&c, cn), NULL, 10);
        d->decay_start = strtoull(csv_get(&c, cd), NULL, 10);
        d->peak = strtod(csv_get(&c, cp), NULL);
        d->final = strtod(csv_get(&c, cf), NULL);
        int known = 0;
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) known |= strcmp(d->type, types[t]) == 0;
        if (!known || d->warmup < 2 || d->total <= d->warmup) {
            csv_close(&c);
            return sx_fail(SX_ERR_FORMAT, "%s: schedule '%s' has an unknown type or bad steps", path, d->name);
        }
    }
    csv_close(&c);
    return SX_OK;
}

void pub_mpl_free(pub_mpl *m) {
    for (size_t i = 0; i < m->n_curves; i++) {
        free(m->curves[i].lr);
        free(m->curves[i].steps);
        free(m->curves[i].loss);
    }
    free(m->curves);
    memset(m, 0, sizeof *m);
}

// Appends one point to a curve, growing its arrays.
static int curve_push(pub_mpl_curve *cv, size_t *cap, size_t step, double loss) {
    if (cv->n_points == *cap) {
        size_t nc = *cap ? 2 * *cap : 256;
        size_t *s = sx_realloc(cv->steps, nc * sizeof(size_t), "pubdata s");
        if (s) cv->steps = s;
        double *l = sx_realloc(cv->loss, nc * sizeof(double), "pubdata l");
        if (l) cv->loss = l;
        if (!s || !l) return 0;
        *cap = nc;
    }
    cv->steps[cv->n_points] = step;
    cv->loss[cv->n_points++] = loss;
    return 1;
}

sx_status pub_mpl_load(const char *dir, const char *model, pub_mpl *out) {
    memset(out, 0, sizeof *out);
    mpl_sched_def defs[32];
    size_t n_defs;
    sx_status st = mpl_load_schedules(dir, defs, 32, &n_defs);
    if (st != SX_OK) return st;
    csv c;
    char path[1024];
    int cm, cs, cr, cst, clr, cs1, cl;
    const csv_want want[] = {{"model", &cm}, {"schedule", &cs}, {"authors_role", &cr}, {"step", &cst},
                             {"lr", &clr}, {"lr_sum_S1", &cs1}, {"loss", &cl}};
    st = csv_open(&c, dir, "mpl_loss_curves.csv", path, sizeof path, want, NWANT(want));
    if (st != SX_OK) return st;
    size_t cap_curves = 0, cap_points = 0, s1_step = 0;
    double s1_acc = 0; // running S1 of the current curve up to s1_step
    pub_mpl_curve *cur = NULL;
    while (csv_next(&c)) {
        const char *m = csv_get(&c, cm), *s = csv_get(&c, cs);
        if (model && strcmp(m, model) != 0) continue;
        if (!cur || strcmp(cur->model, m) != 0 || strcmp(cur->schedule, s) != 0) {
            const mpl_sched_def *d = NULL;
            for (size_t i = 0; i < n_defs; i++)
                if (strcmp(defs[i].name, s) == 0) d = &defs[i];
            if (!d) {
                st = sx_fail(SX_ERR_FORMAT, "%s: schedule '%s' is not in mpl_schedules.csv", path, s);
                goto fail;
            }
            if (out->n_curves == cap_curves) {
                cap_curves = cap_curves ? 2 * cap_curves : 32;
                pub_mpl_curve *nc = sx_realloc(out->curves, cap_curves * sizeof *nc, "pubdata nc");
                if (!nc) goto nomem;
                out->curves = nc;
            }
            cur = &out->curves[out->n_curves++];
            memset(cur, 0, sizeof *cur);
            cap_points = 0;
            snprintf(cur->model, sizeof cur->model, "%s", m);
            snprintf(cur->schedule, sizeof cur->schedule, "%s", s);
            cur->heldout = strcmp(csv_get(&c, cr), "heldout") == 0;
            cur->n_steps = d->total;
            cur->lr = sx_alloc(d->total * sizeof(double), "pubdata cur.lr");
            if (!cur->lr) goto nomem;
            for (size_t i = 0; i < d->total; i++) cur->lr[i] = mpl_lr_at(d, i);
            s1_step = 0;
            s1_acc = cur->lr[0];
        }
        size_t step = strtoull(csv_get(&c, cst), NULL, 10);
        double lr = strtod(csv_get(&c, clr), NULL), s1 = strtod(csv_get(&c, cs1), NULL);
        if (step >= cur->n_steps) {
            st = sx_fail(SX_ERR_FORMAT, "%s: %s %s step %zu past the schedule", path, m, s, step);
            goto fail;
        }
        if (step < s1_step) {
            st = sx_fail(SX_ERR_FORMAT, "%s: %s %s steps are not ascending at %zu", path, m, s, step);
            goto fail;
        }
        for (; s1_step < step; s1_step++) s1_acc += cur->lr[s1_step + 1];
        double acc = s1_acc;
        if (fabs(cur->lr[step] - lr) > 1e-12 * lr || fabs(acc - s1) > 1e-8 * s1) {
            st = sx_fail(SX_ERR_FORMAT, "%s: %s %s step %zu: rebuilt lr %.10g / S1 %.10g vs released %.10g / %.10g",
                         path, m, s, step, cur->lr[step], acc, lr, s1);
            goto fail;
        }
        if (!curve_push(cur, &cap_points, step, strtod(csv_get(&c, cl), NULL))) goto nomem;
    }
    csv_close(&c);
    if (out->n_curves == 0) {
        pub_mpl_free(out);
        return sx_fail(SX_ERR_FORMAT, "%s: no curves for model %s", path, model ? model : "(any)");
    }
    return SX_OK;
nomem:
    st = sx_fail(SX_ERR_NOMEM, "out of memory reading %s", path);
fail:
    csv_close(&c);
    pub_mpl_free(out);
    return st;
}

sx_status pub_mpl_fitted_params(const char *dir, const char *model, double p[LAW_MPL_NPARAM]) {
    csv c;
    char path[1024];
    // ci[k]: the column of parameter idx[k].
    static const int idx[7] = {LAW_MPL_L0, LAW_MPL_A,    LAW_MPL_ALPHA, LAW_MPL_B,
                               LAW_MPL_C,  LAW_MPL_BETA, LAW_MPL_GAMMA};
    int cm, ci[7];
    const csv_want want[] = {{"model", &cm}, {"L0", &ci[0]}, {"A", &ci[1]}, {"alpha", &ci[2]},
                             {"B", &ci[3]}, {"C", &ci[4]}, {"beta", &ci[5]}, {"gamma", &ci[6]}};
    sx_status st = csv_open(&c, dir, "mpl_fitted_params.csv", path, sizeof path, want, NWANT(want));
    if (st != SX_OK) return st;
    int found = 0;
    while (!found && csv_next(&c)) {
        if (strcmp(csv_get(&c, cm), model) != 0) continue;
        for (size_t k = 0; k < 7; k++) p[idx[k]] = strtod(csv_get(&c, ci[k]), NULL);
        found = 1;
    }
    csv_close(&c);
    return found ? SX_OK : sx_fail(SX_ERR_FORMAT, "%s: no row for model %s", path, model);
}

sx_status pub_mpl_reported(const char *dir, const char *model, const char *schedule, double *prede,
                           double *worste) {
    csv c;
    char path[1024];
    int cm, cs, cp, cw;
    const csv_want want[] = {{"model", &cm}, {"schedule", &cs}, {"prede_mean_abs_rel_err", &cp},
                             {"worste_max_abs_rel_err", &cw}};
    sx_status st = csv_open(&c, dir, "mpl_reported_fit_metrics.csv", path, sizeof path, want, NWANT(want));
    if (st != SX_OK) return st;
    int found = 0;
    while (!found && csv_next(&c)) {
        if (strcmp(csv_get(&c, cm), model) != 0 || strcmp(csv_get(&c, cs), schedule) != 0) continue;
        *prede = strtod(csv_get(&c, cp), NULL);
        *worste = strtod(csv_get(&c, cw), NULL);
        found = 1;
    }
    csv_close(&c);
    return found ? SX_OK : sx_fail(SX_ERR_FORMAT, "%s: no row for %s %s", path, model, schedule);
}

// ---- Chinchilla ----------------------------------------------------------------------------------------

void pub_chinchilla_free(pub_chinchilla *c) {
    free(c->params);
    free(c->tokens);
    free(c->loss);
    free(c->excluded);
    memset(c, 0, sizeof *c);
}

sx_status pub_chinchilla_load(const char *dir, pub_chinchilla *out) {
    memset(out, 0, sizeof *out);
    csv c;
    char path[1024];
    int cn, cd, cl, cx;
    const csv_want want[] = {{"params", &cn}, {"tokens", &cd}, {"loss", &cl}, {"epoch_excluded_high_loss", &cx}};
    sx_status st = csv_open(&c, dir, "chinchilla_epoch_extracted.csv", path, sizeof path, want, NWANT(want));
    if (st != SX_OK) return st;
    size_t cap = 0;
    while (csv_next(&c)) {
        if (out->n == cap) {
            cap = cap ? 2 * cap : 256;
            double *a = sx_realloc(out->params, cap * sizeof(double), "pubdata a");
            if (a) out->params = a;
            double *b = sx_realloc(out->tokens, cap * sizeof(double), "pubdata b");
            if (b) out->tokens = b;
            double *l = sx_realloc(out->loss, cap * sizeof(double), "pubdata l");
            if (l) out->loss = l;
            int *x = sx_realloc(out->excluded, cap * sizeof(int), "pubdata x");
            if (x) out->excluded = x;
            if (!a || !b || !l || !x) {
                csv_close(&c);
                pub_chinchilla_free(out);
                return sx_fail(SX_ERR_NOMEM, "out of memory reading %s", path);
            }
        }
        out->params[out->n] = strtod(csv_get(&c, cn), NULL);
        out->tokens[out->n] = strtod(csv_get(&c, cd), NULL);
        out->loss[out->n] = strtod(csv_get(&c, cl), NULL);
        out->excluded[out->n] = atoi(csv_get(&c, cx));
        out->n++;
    }
    csv_close(&c);
    return out->n ? SX_OK : sx_fail(SX_ERR_FORMAT, "%s: no data rows", path);
}

// ---- Gadre et al. 2024: over-training runs and their downstream errors ----------------------------------

void pub_gadre_free(pub_gadre *g) {
    free(g->runs);
    memset(g, 0, sizeof *g);
}

static pub_gadre_run *gadre_find(pub_gadre *g, const char *id) {
    for (size_t i = 0; i < g->n; i++)
        if (!strcmp(g->runs[i].run_id, id)) return &g->runs[i];
    return NULL;
}

// Averages each run's per-task errors over the 17-task subset and over every task, checked against the runs
// table's own averages (held in err17/err46 until then).
static sx_status gadre_downstream(const char *dir, pub_gadre *g) {
    csv c;
    char path[1024];
    int cr, cs, ce;
    const csv_want want[] = {{"run_id", &cr}, {"in_17task_subset", &cs}, {"error", &ce}};
    sx_status st = csv_open(&c, dir, "gadre_overtraining_downstream.csv", path, sizeof path, want, NWANT(want));
    if (st) return st;
    double *sum17 = sx_calloc_n(g->n + 1, sizeof *sum17, "gadre sum17"), *sum46 = sx_calloc_n(g->n + 1, sizeof *sum46, "gadre sum46");
    size_t *n17 = sx_calloc_n(g->n + 1, sizeof *n17, "gadre n17"), *n46 = sx_calloc_n(g->n + 1, sizeof *n46, "gadre n46");
    if (!sum17 || !sum46 || !n17 || !n46) st = SX_ERR_NOMEM;   // sx_calloc_n said what
    while (!st && csv_next(&c)) {
        pub_gadre_run *r = gadre_find(g, csv_get(&c, cr));
        if (!r) { st = sx_fail(SX_ERR_FORMAT, "%s: run '%s' is not in the runs table", path, csv_get(&c, cr)); break; }
        size_t i = (size_t)(r - g->runs);
        double e = strtod(csv_get(&c, ce), NULL);
        sum46[i] += e;
        n46[i]++;
        if (atoi(csv_get(&c, cs))) { sum17[i] += e; n17[i]++; }
    }
    csv_close(&c);
    for (size_t i = 0; i < g->n && !st; i++) {
        pub_gadre_run *r = &g->runs[i];
        double e17 = n17[i] ? sum17[i] / (double)n17[i] : NAN, e46 = n46[i] ? sum46[i] / (double)n46[i] : NAN;
        if (!(fabs(e17 - r->err17) < 1e-6 && fabs(e46 - r->err46) < 1e-6))
            st = sx_fail(SX_ERR_FORMAT, "%s: run %s: the per-task errors average to %g (17 tasks) and %g (46), the runs "
                         "table says %g and %g", path, r->run_id, e17, e46, r->err17, r->err46);
        r->err17 = e17;
        r->err46 = e46;
    }
    free(sum17); free(sum46); free(n17); free(n46);
    return st;
}

sx_status pub_gadre_load(const char *dir, pub_gadre *out) {
    memset(out, 0, sizeof *out);
    csv c;
    char path[1024];
    int cr, cd, cn, cm, cf, ct, cl, c17, c46;
    const csv_want want[] = {{"run_id", &cr}, {"train_dataset", &cd}, {"params", &cn}, {"tokens_per_param", &cm},
                             {"paper_default_loss_fit_point", &cf}, {"paper_figure1_target", &ct},
                             {"loss_c4_val", &cl}, {"err_avg_17task_subset", &c17}, {"err_avg_46tasks", &c46}};
    sx_status st = csv_open(&c, dir, "gadre_overtraining_runs.csv", path, sizeof path, want, NWANT(want));
    if (st) return st;
    size_t cap = 0;
    while (!st && csv_next(&c)) {
        if (out->n == cap) {
            pub_gadre_run *r = sx_realloc(out->runs, (cap = cap ? 2 * cap : 128) * sizeof *r, "gadre runs");
            if (!r) { st = SX_ERR_NOMEM; break; }
            out->runs = r;
        }
        pub_gadre_run *r = &out->runs[out->n++];
        snprintf(r->run_id, sizeof r->run_id, "%s", csv_get(&c, cr));
        snprintf(r->dataset, sizeof r->dataset, "%s", csv_get(&c, cd));
        r->params = strtod(csv_get(&c, cn), NULL);
        r->tokens_per_param = strtod(csv_get(&c, cm), NULL);
        r->fit_point = atoi(csv_get(&c, cf));
        r->target = atoi(csv_get(&c, ct));
        r->loss_c4 = strtod(csv_get(&c, cl), NULL);
        r->err17 = strtod(csv_get(&c, c17), NULL);
        r->err46 = strtod(csv_get(&c, c46), NULL);
        if (!(r->params > 0 && r->loss_c4 > 0)) st = sx_fail(SX_ERR_FORMAT, "%s: run %s has no parameter count or loss", path, r->run_id);
    }
    csv_close(&c);
    if (!st && !out->n) st = sx_fail(SX_ERR_FORMAT, "%s: no data rows", path);
    if (!st) st = gadre_downstream(dir, out);
    if (st) pub_gadre_free(out);
    return st;
}
