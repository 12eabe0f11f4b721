// backtest: leave the largest sizes out, forecast them, score. See backtest.h.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "laws/backtest.h"
#include "laws/finallaw.h"
#include "laws/fit.h"
#include "laws/laws.h"
#include "laws/perfrac.h"
#include "laws/schedfit.h"

void backtest_options_default(backtest_options *o) {
    *o = (backtest_options){.holdout = 1, .score_from = 0.1, .baseline = 1};
    curvefit_options_default(&o->fit);
    o->fit.nonembed = -1;
    o->fit.n_offset = NAN;
}

const double backtest_offset_fracs[BACKTEST_N_OFFSETS] = {0, 0.25, 0.5};

typedef struct {
    size_t n_groups;
    char (*name)[128];
    double *n;          // [n_groups] the group's N (mean over its runs)
    size_t *of_run;     // [n_runs] group index of each run, ascending N order
} groups;

static double run_n(const import_run *r, int nonembed) { return nonembed ? r->n_nonembed : r->n_params; }

static sx_status groups_of(const import_ladder *l, int nonembed, groups *g) {
    memset(g, 0, sizeof *g);
    g->name = sx_alloc((l->n_runs ? l->n_runs : 1) * sizeof *g->name, "backtest g.name");
    g->n = sx_calloc_n(l->n_runs ? l->n_runs : 1, sizeof *g->n, "backtest g.n");
    g->of_run = sx_alloc((l->n_runs ? l->n_runs : 1) * sizeof *g->of_run, "backtest g.of_run");
    size_t *cnt = sx_calloc_n(l->n_runs ? l->n_runs : 1, sizeof *cnt, "backtest cnt");
    if (!g->name || !g->n || !g->of_run || !cnt) { free(cnt); return sx_fail(SX_ERR_NOMEM, "backtest: out of memory"); }
    for (size_t i = 0; i < l->n_runs; i++) {
        size_t k = 0;
        while (k < g->n_groups && strcmp(g->name[k], l->runs[i].group)) k++;
        if (k == g->n_groups) snprintf(g->name[g->n_groups++], sizeof g->name[0], "%s", l->runs[i].group);
        g->n[k] += run_n(&l->runs[i], nonembed);
        cnt[k]++;
        g->of_run[i] = k;
    }
    for (size_t k = 0; k < g->n_groups; k++) g->n[k] /= (double)cnt[k];
    // rank groups by N: rank[k] = position in ascending order
    size_t *rank = sx_alloc(g->n_groups * sizeof *rank, "backtest rank");
    char (*names)[128] = sx_alloc(g->n_groups * sizeof *names, "backtest");
    double *ns = sx_alloc(g->n_groups * sizeof *ns, "backtest ns");
    if (!rank || !names || !ns) { free(rank); free(names); free(ns); free(cnt); return sx_fail(SX_ERR_NOMEM, "backtest: out of memory"); }
    for (size_t k = 0; k < g->n_groups; k++) {
        rank[k] = 0;
        for (size_t j = 0; j < g->n_groups; j++) rank[k] += g->n[j] < g->n[k] || (g->n[j] == g->n[k] && j < k);
    }
    for (size_t k = 0; k < g->n_groups; k++) {
        memcpy(names[rank[k]], g->name[k], sizeof names[0]);
        ns[rank[k]] = g->n[k];
    }
    for (size_t i = 0; i < l->n_runs; i++) g->of_run[i] = rank[g->of_run[i]];
    memcpy(g->name, names, g->n_groups * sizeof names[0]);
    memcpy(g->n, ns, g->n_groups * sizeof *ns);
    free(rank); free(names); free(ns); free(cnt);
    return SX_OK;
}

static void groups_free(groups *g) {
    free(g->name);
    free(g->n);
    free(g->of_run);
}

// ---- scoring -------------------------------------------------------------------------------------------

typedef struct {
    double sum, max, final_sum, final_max, inside, width, run_mean_sum;
    size_t n, n_band, n_runs;
    json_t *runs;
} score;

// Scores one target run's predictions (lo/hi NULL: no band).
static void score_run(score *s, const import_ladder *l, const import_run *r, size_t loss, double from,
                      const double *pred, const double *lo, const double *hi) {
    double sum = 0, mx = 0, in = 0, fin = NAN;
    size_t n = 0;
    json_t *pts = json_array();
    for (size_t q = 0; q < r->n_points; q++) {
        if (!((double)r->step[q] > from * (double)r->total_steps)) continue;
        double y = r->loss[q * l->n_loss + loss], e = fabs(pred[q] / y - 1);
        json_array_append_new(pts, lo ? json_pack("[I, f, f, f, f]", (json_int_t)r->step[q], y, pred[q], lo[q], hi[q])
                                      : json_pack("[I, f, f]", (json_int_t)r->step[q], y, pred[q]));
        if (!isfinite(e)) e = INFINITY;
        sum += e;
        mx = fmax(mx, e);
        n++;
        if (lo) {
            in += y >= lo[q] && y <= hi[q];
            s->width += 0.5 * (hi[q] - lo[q]) / pred[q];
        }
        if (q + 1 == r->n_points) fin = e;
    }
    if (!n) { json_decref(pts); return; }
    s->sum += sum;
    s->run_mean_sum += sum / (double)n;
    s->max = fmax(s->max, mx);
    s->n += n;
    if (lo) { s->inside += in; s->n_band += n; }
    if (isfinite(fin) || isinf(fin)) {
        s->final_sum += fin;
        s->final_max = fmax(s->final_max, fin);
        s->n_runs++;
    }
    json_t *o = json_pack("{s:s, s:s, s:I, s:f, s:f, s:f}", "run", r->id, "group", r->group, "points", (json_int_t)n,
                          "mean", sum / (double)n, "max", mx, "final", fin);
    if (lo) json_object_set_new(o, "coverage", json_real(in / (double)n));
    json_object_set_new(o, "points", pts); // [step, observed, forecast(, lo, hi)]
    json_array_append_new(s->runs, o);
}

static json_t *score_json(const char *method, score *s) {
    json_t *o = json_pack("{s:s, s:I, s:f, s:f, s:f, s:f, s:o}", "method", method, "n_points", (json_int_t)s->n,
                          "mean_abs_rel_err", s->n ? s->sum / (double)s->n : NAN, "max_abs_rel_err", s->max,
                          "final_abs_rel_err", s->n_runs ? s->final_sum / (double)s->n_runs : NAN,
                          "final_max_abs_rel_err", s->final_max, "runs", s->runs);
    // each run's mean, averaged over runs (the multi-power-law authors' PredE): long runs count once
    json_object_set_new(o, "run_mean_abs_rel_err", json_real(json_array_size(s->runs) ? s->run_mean_sum / (double)json_array_size(s->runs) : NAN));
    if (s->n_band) {
        json_object_set_new(o, "band_coverage", json_real(s->inside / (double)s->n_band));
        json_object_set_new(o, "band_half_width_rel", json_real(s->width / (double)s->n_band));
    }
    s->runs = NULL;
    return o;
}

// ---- the joint law ----------------------------------------------------------------------------------------

// RMS relative error after score_from of held-back training runs: the training set's largest group `top`
// fitted on the groups below it; or, top == SIZE_MAX (too few groups), every training run from the others.
static sx_status inner_error(const import_ladder *l, const groups *g, const unsigned char *train, size_t top,
                             const backtest_options *o, double *rms) {
    unsigned char *inner = sx_alloc(l->n_runs, "backtest inner");
    if (!inner) return sx_fail(SX_ERR_NOMEM, "backtest: out of memory");
    sx_status st = SX_OK;
    double ss = 0;
    size_t n = 0;
    for (size_t fold = 0; fold < (top == SIZE_MAX ? l->n_runs : 1) && !st; fold++) {
        if (top == SIZE_MAX && !train[fold]) continue;
        for (size_t i = 0; i < l->n_runs; i++) inner[i] = train[i] && (top == SIZE_MAX ? i != fold : g->of_run[i] < top);
        curvefit_model m;
        if ((st = curvefit_fit(l, inner, &o->fit, &m))) break;
        for (size_t i = 0; i < l->n_runs && !st; i++) {
            const import_run *r = &l->runs[i];
            if (!train[i] || (top == SIZE_MAX ? i != fold : g->of_run[i] != top)) continue;
            double *pred = sx_alloc(r->n_points * sizeof *pred, "backtest pred");
            if (!pred) { st = sx_fail(SX_ERR_NOMEM, "backtest: out of memory"); break; }
            st = curvefit_predict(&m, r, r->step, r->n_points, pred);
            for (size_t q = 0; q < r->n_points && !st; q++) {
                if (!((double)r->step[q] > o->score_from * (double)r->total_steps)) continue;
                double e = pred[q] / r->loss[q * l->n_loss + o->fit.loss] - 1;
                ss += e * e;
                n++;
            }
            free(pred);
        }
    }
    free(inner);
    *rms = n ? sqrt(ss / (double)n) : 0;
    return st;
}

// Mean N the law sees of group k's runs.
static double group_n(const import_ladder *l, const groups *g, size_t k, const curvefit_options *fit) {
    double sum = 0;
    size_t cnt = 0;
    for (size_t i = 0; i < l->n_runs; i++)
        if (g->of_run[i] == k) { sum += curvefit_n(&l->runs[i], fit->nonembed, fit->n_offset); cnt++; }
    return cnt ? sum / (double)cnt : NAN;
}

sx_status backtest_one_size_back(const import_ladder *l, const unsigned char *train, curvefit_options *fit,
                                 backtest_choice *c) {
    groups g;
    sx_status st = groups_of(l, 0, &g);
    if (st) { groups_free(&g); return st; }
    size_t top = 0, below = SIZE_MAX, bottom = SIZE_MAX, n_train_groups = 0;
    unsigned char *seen = sx_calloc_n(g.n_groups ? g.n_groups : 1, 1, "backtest seen");
    if (!seen) { groups_free(&g); return sx_fail(SX_ERR_NOMEM, "backtest: out of memory"); }
    // The offsets apply to N with embeddings (they stand for the embeddings), or to the only count the ladder gives
    int offset_kind = !import_gives_n(l, 0);
    *c = (backtest_choice){.inner_kind = {NAN, NAN}, .n_min = INFINITY, .offset_nonembed = offset_kind};
    for (size_t i = 0; i < l->n_runs; i++)
        if (train[i]) {
            seen[g.of_run[i]] = 1;
            if (g.of_run[i] > top) top = g.of_run[i];
            c->n_min = fmin(c->n_min, curvefit_n(&l->runs[i], offset_kind, 0));
        }
    for (size_t k = 0; k < g.n_groups; k++) {
        n_train_groups += seen[k];
        if (seen[k] && k < top) below = k;
        if (seen[k] && bottom == SIZE_MAX) bottom = k;
    }
    free(seen);
    for (size_t j = 0; j < BACKTEST_N_OFFSETS; j++) c->inner_offset[j] = NAN;
    int differ = 0;
    for (size_t i = 0; i < l->n_runs; i++) differ |= l->runs[i].n_params != l->runs[i].n_nonembed;
    curvefit_options o = *fit;
    backtest_options bo;
    backtest_options_default(&bo);
    // candidates: the offset kind at each offset (or the one given), the other kind as given -- each where every
    // run gave that count; the lowest error wins
    if (fit->nonembed >= 0) st = import_check_n_kind(l, fit->nonembed);
    // one size back where there are 3 sizes and those below the largest have a point for each of the law's parameters
    if (n_train_groups < 3) snprintf(c->by_run, sizeof c->by_run, n_train_groups < 2 ? "one size" : "2 sizes, fewer than 3");
    else if (!st) {
        unsigned char *below_top = sx_alloc(l->n_runs, "backtest below");
        if (!below_top) st = sx_fail(SX_ERR_NOMEM, "backtest: out of memory");
        for (size_t i = 0; i < l->n_runs && !st; i++) below_top[i] = train[i] && g.of_run[i] < top;
        size_t below_points = st ? 0 : curvefit_points(l, below_top, fit, NULL);
        free(below_top);
        if (!st && below_points < LAW_NDS_NPARAM)
            snprintf(c->by_run, sizeof c->by_run, "the sizes below the largest give %zu points, fewer than the law's %d "
                     "parameters", below_points, LAW_NDS_NPARAM);
    }
    int choose_offset = isnan(fit->n_offset) && n_train_groups >= 3;
    double best = INFINITY, best_offset = 0;
    int best_kind = 0;
    for (int kind = 0; kind < 2 && !st; kind++) {
        if (!import_gives_n(l, kind)) continue;
        if (fit->nonembed >= 0 ? kind != fit->nonembed : (kind == 1 && !differ && import_gives_n(l, 0))) continue;
        int offsets = kind == offset_kind;
        for (size_t j = 0; j < (offsets && choose_offset ? BACKTEST_N_OFFSETS : 1) && !st; j++) {
            o.nonembed = kind;
            o.n_offset = !offsets || isnan(fit->n_offset) ? (offsets && choose_offset ? backtest_offset_fracs[j] * c->n_min : 0)
                                                          : fit->n_offset;
            bo.fit = o;
            double e = NAN;
            st = inner_error(l, &g, train, *c->by_run ? SIZE_MAX : top, &bo, &e);
            if (offsets && choose_offset) c->inner_offset[j] = e;
            if (!(c->inner_kind[kind] <= e)) c->inner_kind[kind] = e;   // NAN-safe minimum
            if (e < best || isinf(best)) { best = e; best_kind = kind; best_offset = o.n_offset; }
        }
    }
    if (!st) {
        fit->nonembed = best_kind;
        fit->n_offset = best_offset;
        c->inner_rms = best;
        c->top_n = group_n(l, &g, top, fit);
        c->log_step = below != SIZE_MAX ? log(c->top_n / group_n(l, &g, below, fit)) : 0;
        c->bottom_n = bottom != SIZE_MAX ? group_n(l, &g, bottom, fit) : c->top_n;
    }
    groups_free(&g);
    return st;
}

double backtest_size_steps(double n, double top, double bottom, double log_step) {
    if (!(log_step > 0)) return 1;
    if (n > top) return log(n / top) / log_step;
    return bottom > 0 && n < bottom ? log(bottom / n) / log_step : 0;
}

json_t *backtest_choice_json(const backtest_choice *c) {
    json_t *o = json_object();
    char name[96];
    for (size_t j = 0; j < BACKTEST_N_OFFSETS; j++)
        if (!isnan(c->inner_offset[j])) {
            curvefit_n_name(c->offset_nonembed, backtest_offset_fracs[j] * c->n_min, name, sizeof name);
            json_object_set_new(o, name, json_real(c->inner_offset[j]));
        }
    for (int kind = 0; kind < 2; kind++)
        if ((kind != c->offset_nonembed || isnan(c->inner_offset[0])) && !isnan(c->inner_kind[kind])) {
            curvefit_n_name(kind, 0, name, sizeof name);
            json_object_set_new(o, name, json_real(c->inner_kind[kind]));
        }
    return o;
}

// ---- the schedule law, when the training runs are one size -----------------------------------------------

// Run r as a schedule-law curve: its LR of every step (*lr) and its points at or after `from` of the run, as the
// joint law takes min_frac (*steps, 0-based; *loss), thinned as the joint law's (curvefit_stride: the law's cost
// grows with points times LR changes); all three malloc'd.
static sx_status sched_curve(const import_ladder *l, const import_run *r, size_t loss, double from, schedfit_curve *c,
                             double **lr, size_t **steps, double **y) {
    *lr = sx_alloc((size_t)r->total_steps * sizeof **lr, "backtest lr");
    *steps = sx_alloc((r->n_points ? r->n_points : 1) * sizeof **steps, "backtest steps");
    *y = sx_alloc((r->n_points ? r->n_points : 1) * sizeof **y, "backtest y");
    if (!*lr || !*steps || !*y) return sx_fail(SX_ERR_NOMEM, "backtest: out of memory");
    size_t n = 0, stride, start = curvefit_thin(r->n_points, curvefit_first(r, from), &stride);
    for (size_t q = start; q < r->n_points; q += stride) {
        (*steps)[n] = (size_t)(r->step[q] - 1);
        (*y)[n++] = r->loss[q * l->n_loss + loss];
    }
    *c = (schedfit_curve){*lr, (size_t)r->total_steps, *steps, *y, n};
    return import_run_lr(r, *lr);
}

// The joint law's leave-one-curve-out error on the training runs (c[n]: their curves, in run order), scored as
// schedfit scores the multi-power law's (each curve's points no other curve shares), so the two compare.
static sx_status nds_loco(const import_ladder *l, const unsigned char *train, const curvefit_options *fit,
                          const schedfit_curve *c, size_t n, double *err) {
    unsigned char *use = sx_alloc(l->n_runs ? l->n_runs : 1, "backtest use");
    if (!use) return sx_fail(SX_ERR_NOMEM, "backtest: out of memory");
    double sum = 0;
    size_t folds = 0, k = 0;
    sx_status st = SX_OK;
    for (size_t i = 0; i < l->n_runs && !st; i++) {
        if (!train[i]) continue;
        memcpy(use, train, l->n_runs);
        use[i] = 0;
        size_t np = c[k].n_points;
        long *steps = sx_alloc((np ? np : 1) * sizeof *steps, "backtest steps");
        double *pred = sx_alloc((np ? np : 1) * sizeof *pred, "backtest pred");
        curvefit_model m;
        if (!steps || !pred) st = sx_fail(SX_ERR_NOMEM, "backtest: out of memory");
        for (size_t q = 0; !st && q < np; q++) steps[q] = (long)c[k].steps[q] + 1;
        if (!st && !curvefit_fit(l, use, fit, &m) && !curvefit_predict(&m, &l->runs[i], steps, np, pred)) {
            double e = 0;
            size_t cnt = 0;
            for (size_t q = 0; q < np; q++)
                if (!schedfit_point_shared(c, n, k, q)) { e += fabs(pred[q] / c[k].loss[q] - 1); cnt++; }
            if (cnt) { sum += e / (double)cnt; folds++; }
        }
        free(steps);
        free(pred);
        k++;
    }
    free(use);
    *err = folds ? sum / (double)folds : NAN;
    return st;
}

const char *const backtest_law_names[3] = {"nds", "mpl", "tissue"};

// Schedule law `law` fitted on the first half of every curve c[n] (its points at or before half its steps) as it
// is fitted on the whole curves (the MPL's prior weight chosen again, leaving one half out), its RMS relative
// error on the second halves in *rms (NAN when fewer than 2 curves have a first half, or the halves cannot be
// fitted).
static sx_status sched_length_back(const schedfit_curve *c, size_t n, backtest_law law, double *rms) {
    *rms = NAN;
    schedfit_curve *half = sx_calloc_n(n ? n : 1, sizeof *half, "backtest halves");
    if (!half) return sx_fail(SX_ERR_NOMEM, "backtest: out of memory");
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        size_t q = 0;
        while (q < c[k].n_points && 2 * (c[k].steps[q] + 1) <= c[k].n_steps) q++;
        if (q) { half[m] = c[k]; half[m++].n_points = q; }
    }
    fit_result r = {0};
    double weight;
    sx_status st = SX_OK, fst = m < 2 ? SX_ERR_ARG
                                : law == BACKTEST_LAW_TISSUE ? schedfit_tissue_fit(half, m, m, &r)
                                                             : schedfit_mpl(half, m, &weight, NULL, &r);
    if (fst == SX_ERR_NOMEM) st = fst;
    double ss = 0;
    size_t cnt = 0;
    for (size_t k = 0; k < n && !fst && !st; k++) {
        double *pred = sx_alloc((c[k].n_points ? c[k].n_points : 1) * sizeof *pred, "backtest pred");
        if (!pred) { st = sx_fail(SX_ERR_NOMEM, "backtest: out of memory"); break; }
        st = law == BACKTEST_LAW_TISSUE ? schedfit_tissue_predict(r.params, &c[k], pred) : schedfit_mpl_predict(r.params, &c[k], pred);
        for (size_t q = 0; q < c[k].n_points && !st; q++)
            if (2 * (c[k].steps[q] + 1) > c[k].n_steps) {
                double e = pred[q] / c[k].loss[q] - 1;
                ss += e * e;
                cnt++;
            }
        free(pred);
    }
    if (!fst && !st && cnt) *rms = sqrt(ss / (double)cnt);
    if (r.params) fit_result_free(&r);
    free(half);
    return st;
}

double backtest_tokens_per_param(const import_run *r, double n) { return (double)r->total_steps * r->tokens_per_step / n; }

double backtest_length_doublings(double length, double max_length) {
    return max_length > 0 && length > max_length ? log2(length / max_length) : 0;
}

double backtest_extrapolation(double size_term, double length_back, double length, double max_length) {
    double length_term = length_back * backtest_length_doublings(length, max_length);
    return length_term > size_term ? length_term : size_term;   // NAN length_back: the size term
}

double backtest_sched_size_term(double loo, double length_back) { return length_back > loo ? length_back : loo; }

sx_status backtest_length_back(const import_ladder *l, const unsigned char *train, const curvefit_options *fit,
                               double score_from, double *rms, double *max_tpp) {
    *rms = NAN;
    *max_tpp = 0;
    for (size_t i = 0; i < l->n_runs; i++)
        if (train[i])
            *max_tpp = fmax(*max_tpp, backtest_tokens_per_param(&l->runs[i], curvefit_n(&l->runs[i], fit->nonembed, fit->n_offset)));
    curvefit_options half = *fit;
    half.max_frac = 0.5;
    curvefit_model m;
    sx_status st = curvefit_fit(l, train, &half, &m);
    if (st) return st == SX_ERR_NOMEM ? st : SX_OK;   // halves too short to fit: no length term
    double ss = 0;
    size_t n = 0;
    for (size_t i = 0; i < l->n_runs && !st; i++) {
        const import_run *r = &l->runs[i];
        if (!train[i] || !r->n_points) continue;
        double *pred = sx_alloc(r->n_points * sizeof *pred, "backtest pred");
        if (!pred) return sx_fail(SX_ERR_NOMEM, "backtest: out of memory");
        st = curvefit_predict(&m, r, r->step, r->n_points, pred);
        for (size_t q = 0; q < r->n_points && !st; q++) {
            double at = (double)r->step[q] / (double)r->total_steps;
            if (!(at > 0.5 && at > score_from)) continue;
            double e = pred[q] / r->loss[q * l->n_loss + fit->loss] - 1;
            ss += e * e;
            n++;
        }
        free(pred);
    }
    if (!st && n) *rms = sqrt(ss / (double)n);
    return st;
}

sx_status backtest_schedule_law(const import_ladder *l, const unsigned char *train, const curvefit_options *fit,
                                backtest_schedlaw *s) {
    memset(s, 0, sizeof *s);
    size_t n = 0, cap = l->n_runs ? l->n_runs : 1;
    double n_first = NAN;
    int one_size = 1;
    for (size_t i = 0; i < l->n_runs; i++)
        if (!train || train[i]) {
            if (isnan(n_first)) n_first = l->runs[i].n_params;
            one_size &= l->runs[i].n_params == n_first;
            n++;
        }
    if (!one_size || n < 2) return SX_OK;
    unsigned char *use = sx_alloc(cap, "backtest use");
    schedfit_curve *c = sx_calloc_n(cap, sizeof *c, "backtest curves");
    void **blocks = sx_calloc_n(3 * cap, sizeof *blocks, "backtest blocks");
    sx_status st = use && c && blocks ? SX_OK : sx_fail(SX_ERR_NOMEM, "backtest: out of memory");
    n = 0;
    for (size_t i = 0; i < l->n_runs && !st; i++) {
        use[i] = !train || train[i];
        if (use[i] && l->runs[i].total_steps > s->max_steps) s->max_steps = l->runs[i].total_steps;
        if (use[i]) {
            st = sched_curve(l, &l->runs[i], fit->loss, fit->min_frac, &c[n], (double **)&blocks[3 * n],
                             (size_t **)&blocks[3 * n + 1], (double **)&blocks[3 * n + 2]);
            n++;
        }
    }
    if (!st) st = schedfit_mpl(c, n, &s->prior_weight, s->cv, &s->mpl);
    if (!st) st = schedfit_tissue_fit(c, n, n, &s->tissue);
    s->law_cv[BACKTEST_LAW_MPL] = INFINITY;
    for (size_t k = 0; k < SCHEDFIT_N_WEIGHTS; k++)
        s->law_cv[BACKTEST_LAW_MPL] = fmin(s->law_cv[BACKTEST_LAW_MPL], isnan(s->cv[k]) ? INFINITY : s->cv[k]);
    if (!st) s->law_cv[BACKTEST_LAW_TISSUE] = schedfit_tissue_cv_error(c, n);
    if (!st) st = nds_loco(l, use, fit, c, n, &s->law_cv[BACKTEST_LAW_NDS]);
    s->length_back[BACKTEST_LAW_NDS] = NAN;
    if (!st) st = sched_length_back(c, n, BACKTEST_LAW_MPL, &s->length_back[BACKTEST_LAW_MPL]);
    if (!st) st = sched_length_back(c, n, BACKTEST_LAW_TISSUE, &s->length_back[BACKTEST_LAW_TISSUE]);
    if (!st) {
        s->fitted = 1;
        s->chosen = BACKTEST_LAW_NDS;   // ties and failed folds (NAN) keep the joint law
        for (int k = BACKTEST_LAW_MPL; k <= BACKTEST_LAW_TISSUE; k++)
            if (s->law_cv[k] < s->law_cv[s->chosen] || isnan(s->law_cv[s->chosen])) s->chosen = (backtest_law)k;
    }
    for (size_t k = 0; blocks && k < 3 * n; k++) free(blocks[k]);
    free(blocks);
    free(c);
    free(use);
    if (st) backtest_schedlaw_free(s);
    return st;
}

void backtest_schedlaw_free(backtest_schedlaw *s) {
    if (s->mpl.params) fit_result_free(&s->mpl);
    if (s->tissue.params) fit_result_free(&s->tissue);
    memset(s, 0, sizeof *s);
}

sx_status backtest_sched_predict(backtest_law law, const double *p, const import_run *r, const long *steps, size_t n,
                                 double *pred) {
    double *lr = sx_alloc((size_t)r->total_steps * sizeof *lr, "backtest lr");
    size_t *s0 = sx_alloc((n ? n : 1) * sizeof *s0, "backtest steps");
    sx_status st = lr && s0 ? import_run_lr(r, lr) : sx_fail(SX_ERR_NOMEM, "backtest: out of memory");
    for (size_t q = 0; q < n && !st; q++) {
        if (steps[q] < 1 || steps[q] > r->total_steps) st = sx_fail(SX_ERR_ARG, "schedule law: step %ld outside [1, %ld]", steps[q], r->total_steps);
        else s0[q] = (size_t)(steps[q] - 1);
    }
    schedfit_curve c = {lr, (size_t)r->total_steps, s0, NULL, n};
    if (!st) st = law == BACKTEST_LAW_TISSUE ? schedfit_tissue_predict(p, &c, pred) : schedfit_mpl_predict(p, &c, pred);
    free(lr);
    free(s0);
    return st;
}

// The ±2σ band around pred: σ² = noise² + extrapolation².
static void band(const double *pred, size_t n, double noise, double extrapolation, double *lo, double *hi) {
    double sigma = sqrt(noise * noise + extrapolation * extrapolation);
    for (size_t q = 0; q < n; q++) {
        lo[q] = pred[q] * (1 - 2 * sigma);
        hi[q] = pred[q] * (1 + 2 * sigma);
    }
}

// The schedule laws on the training runs when they are all one size (schedule transfer), each scored on every
// target run (sm: the MPL, stis: Tissue's law): *info NULL (and nothing scored) otherwise.
static sx_status sched_methods(const import_ladder *l, const unsigned char *train, const backtest_options *o, double noise,
                               score *sm, score *stis, json_t **info) {
    *info = NULL;
    backtest_schedlaw s;
    sx_status st = backtest_schedule_law(l, train, &o->fit, &s);
    if (st || !s.fitted) return st;
    for (size_t i = 0; i < l->n_runs && !st; i++) {
        if (train[i]) continue;
        const import_run *t = &l->runs[i];
        size_t np = t->n_points ? t->n_points : 1;
        double *pred = sx_alloc(np * sizeof *pred, "backtest pred"), *lo = sx_alloc(np * sizeof *lo, "backtest lo"),
               *hi = sx_alloc(np * sizeof *hi, "backtest hi");
        if (!pred || !lo || !hi) st = sx_fail(SX_ERR_NOMEM, "backtest: out of memory");
        for (backtest_law law = BACKTEST_LAW_MPL; law <= BACKTEST_LAW_TISSUE && !st; law++) {
            st = backtest_sched_predict(law, (law == BACKTEST_LAW_MPL ? &s.mpl : &s.tissue)->params, t, t->step, t->n_points, pred);
            if (st) break;
            // the band `forecast` gives this law's forecast
            band(pred, t->n_points, noise, backtest_extrapolation(backtest_sched_size_term(s.law_cv[law], s.length_back[law]), s.length_back[law],
                                                                   (double)t->total_steps, (double)s.max_steps), lo, hi);
            score_run(law == BACKTEST_LAW_MPL ? sm : stis, l, t, o->fit.loss, o->score_from, pred, lo, hi);
        }
        free(pred); free(lo); free(hi);
    }
    if (!st) *info = backtest_schedlaw_json(&s);
    backtest_schedlaw_free(&s);
    return st;
}

static json_t *params_json(const fit_result *r) {
    json_t *p = json_array();
    for (size_t j = 0; j < r->n_params; j++) json_array_append_new(p, json_real(r->params[j]));
    return p;
}

json_t *backtest_schedlaw_json(const backtest_schedlaw *s) {
    json_t *cvs = json_array(), *lb = json_object();
    for (size_t k = 0; k < SCHEDFIT_N_WEIGHTS; k++) json_array_append_new(cvs, json_real(s->cv[k]));
    for (int k = BACKTEST_LAW_MPL; k <= BACKTEST_LAW_TISSUE; k++)
        if (isfinite(s->length_back[k])) json_object_set_new(lb, backtest_law_names[k], json_real(s->length_back[k]));
    json_t *o = json_pack("{s:s, s:o, s:f, s:o, s:f, s:{s:o, s:f}, s:{s:f, s:f, s:f, s:s}}", "law",
                     "multi-power (L0, A, B, alpha, C, beta, gamma)", "params", params_json(&s->mpl), "prior_weight",
                     s->prior_weight, "cv_error_by_weight", cvs, "in_sample_mean", s->mpl.mean_abs_rel, "tissue", "params",
                     params_json(&s->tissue), "in_sample_mean", s->tissue.mean_abs_rel, "schedule_law_choice", "nds",
                     s->law_cv[BACKTEST_LAW_NDS], "mpl", s->law_cv[BACKTEST_LAW_MPL], "tissue", s->law_cv[BACKTEST_LAW_TISSUE],
                     "chosen", backtest_law_names[s->chosen]);
    if (o) json_object_set_new(o, "length_back", lb);
    else json_decref(lb);
    if (o) json_object_set_new(o, "max_steps", json_integer(s->max_steps));
    return o;
}

sx_status backtest_run(const import_ladder *l, const backtest_options *o, json_t **report) {
    *report = NULL;
    groups g;
    sx_status st = groups_of(l, o->fit.nonembed == 1, &g);
    int by_role = o->protocol == BACKTEST_ROLE;
    if (!st && !by_role && (o->holdout < 1 || g.n_groups < o->holdout + 3))
        st = sx_fail(SX_ERR_ARG, "backtest: %zu groups (sizes); forecasting the largest %zu needs at least %zu", g.n_groups,
                     o->holdout, o->holdout + 3);
    if (st) { groups_free(&g); return st; }
    unsigned char *train = sx_alloc(l->n_runs, "backtest train"),
           *is_train_group = sx_calloc_n(g.n_groups, 1, "backtest is_train_group");
    if (!train || !is_train_group) { free(train); free(is_train_group); groups_free(&g); return sx_fail(SX_ERR_NOMEM, "backtest: out of memory"); }
    size_t first_target = g.n_groups - o->holdout, top = 0, n_train = 0, n_train_groups = 0, n_targets = 0;
    for (size_t i = 0; i < l->n_runs; i++) {
        train[i] = by_role ? !l->runs[i].heldout : g.of_run[i] < first_target;
        n_train += train[i];
        n_targets += !train[i];
        if (train[i]) is_train_group[g.of_run[i]] = 1;
        if (train[i] && g.of_run[i] > top) top = g.of_run[i];
    }
    size_t below = top; // the training group one size down from top (for the band's log-distance unit)
    for (size_t k = 0; k < g.n_groups; k++) {
        n_train_groups += is_train_group[k];
        if (is_train_group[k] && k < top) below = k;
    }
    free(is_train_group);
    if (n_train < 2 || n_targets < 1) {
        free(train);
        groups_free(&g);
        return sx_fail(SX_ERR_ARG, "backtest: %zu training runs and %zu targets (by role: mark targets with role heldout)", n_train, n_targets);
    }
    // N with or without embeddings: as asked, or (auto) the one with the lower error one size back
    backtest_options oo = *o;
    backtest_choice ch;
    if (!st) st = backtest_one_size_back(l, train, &oo.fit, &ch);
    double inner = ch.inner_rms;
    o = &oo;
    curvefit_model m;
    if (!st) st = curvefit_fit(l, train, &o->fit, &m);
    double length_back = NAN, max_tpp = 0;
    if (!st) st = backtest_length_back(l, train, &o->fit, o->score_from, &length_back, &max_tpp);
    score sn = {.runs = json_array()}, sb = {.runs = json_array()}, sc = {.runs = json_array()}, sf = {.runs = json_array()}, sm = {.runs = json_array()},
          stis = {.runs = json_array()};
    json_t *mpl_info = NULL;
    if (!st) st = sched_methods(l, train, o, m.sigma_noise, &sm, &stis, &mpl_info);
    // The final-loss law on the training runs' final losses, scored on the targets' (when it fits), and the
    // per-fraction baseline (with 3 training sizes or more): a ladder either cannot fit is scored without it,
    // but out of memory ends the backtest
    finallaw fl;
    sx_status fst = st ? st : finallaw_fit(l, train, o->fit.loss, o->fit.nonembed, 0, &fl);
    int have_fl = fst == SX_OK;
    if (fst == SX_ERR_NOMEM) st = fst;
    perfrac_model pf;
    fst = st || !o->baseline || n_train_groups < 3 ? SX_ERR_ARG : perfrac_fit(l, train, o->fit.loss, o->fit.nonembed, &pf);
    int have_pf = fst == SX_OK;
    if (fst == SX_ERR_NOMEM) st = fst;
    // Above the training sizes, the forecaster with the lower error one size back (curvecast's rule)
    double pf_back = NAN;
    if (have_pf) st = perfrac_one_size_back(l, train, o->fit.loss, o->fit.nonembed, o->score_from, &pf_back);
    const int pf_above = have_pf && pf_back < PERFRAC_CHOICE_MARGIN * inner;
    double log_step = ch.log_step;
    (void)below;
    for (size_t i = 0; i < l->n_runs && !st; i++) {
        const import_run *r = &l->runs[i];
        if (train[i]) continue;
        size_t np = r->n_points;
        double *pred = sx_alloc(np * sizeof *pred, "backtest pred"), *lo = sx_alloc(np * sizeof *lo, "backtest lo"),
               *hi = sx_alloc(np * sizeof *hi, "backtest hi");
        if (!pred || !lo || !hi) st = sx_fail(SX_ERR_NOMEM, "backtest: out of memory");
        if (!st) st = curvefit_predict(&m, r, r->step, np, pred);
        if (!st) {
            double n_r = curvefit_n(r, o->fit.nonembed, o->fit.n_offset);
            double dist = backtest_size_steps(n_r, ch.top_n, ch.bottom_n, log_step), length = backtest_tokens_per_param(r, n_r);
            band(pred, np, m.sigma_noise, backtest_extrapolation(inner * fmax(1, dist), length_back, length, max_tpp), lo, hi);
            score_run(&sn, l, r, o->fit.loss, o->score_from, pred, lo, hi);
            const int by_pf = pf_above && n_r > ch.top_n;
            if (!by_pf) score_run(&sc, l, r, o->fit.loss, o->score_from, pred, lo, hi);
            double y, tokens;
            if (have_fl && finallaw_final(l, r, o->fit.loss, &y, &tokens)) {   // its last point only
                pred[np - 1] = finallaw_predict(&fl, l, r);
                score_run(&sf, l, r, o->fit.loss, ((double)r->step[np - 1] - 0.5) / (double)r->total_steps, pred, NULL, NULL);
            }
            if (have_pf) {
                perfrac_predict(&pf, r, r->step, np, pred);
                score_run(&sb, l, r, o->fit.loss, o->score_from, pred, NULL, NULL);
            }
            if (by_pf && !(st = perfrac_predict_shaped(&pf, &m, r, r->step, np, pred))) {
                band(pred, np, m.sigma_noise, backtest_extrapolation(pf_back * fmax(1, dist), length_back, length, max_tpp), lo, hi);
                score_run(&sc, l, r, o->fit.loss, o->score_from, pred, lo, hi);
            }
        }
        free(pred); free(lo); free(hi);
    }
    if (!st) {
        json_t *tg = json_array(), *tr = json_array(), *methods = json_array(), *params = json_object();
        for (size_t k = 0; k < g.n_groups; k++)   // a group may be in both lists (by role: its runs are split)
            for (int as_target = 0; as_target < 2; as_target++) {
                int any = 0;
                for (size_t i = 0; i < l->n_runs; i++) any |= g.of_run[i] == k && train[i] == !as_target;
                if (any) json_array_append_new(as_target ? tg : tr, json_pack("{s:s, s:f}", "group", g.name[k], "n", g.n[k]));
            }
        json_array_append_new(methods, score_json("nds", &sn));
        if (have_pf) json_array_append_new(methods, score_json("perfrac", &sb));
        if (pf_above) json_array_append_new(methods, score_json("chosen", &sc));   // differs from nds only then
        if (sf.n) json_array_append_new(methods, score_json("final", &sf));
        if (sm.n) json_array_append_new(methods, score_json("mpl", &sm));
        if (stis.n) json_array_append_new(methods, score_json("tissue", &stis));
        for (size_t j = 0; j < LAW_NDS_NPARAM; j++) json_object_set_new(params, law_nds_param_name(j), json_real(m.p[j]));
        json_t *choice = backtest_choice_json(&ch);
        char n_kind[96];
        curvefit_n_name(o->fit.nonembed, o->fit.n_offset, n_kind, sizeof n_kind);
        *report = json_pack("{s:o, s:o, s:o, s:s, s:s, s:f, s:o, s:{s:o, s:I, s:I, s:f, s:f, s:f, s:f, s:f}}", "targets", tg,
                            "train", tr, "n_choice_inner_rms", choice, "n_param_kind", n_kind, "loss",
                            l->loss_names[o->fit.loss], "score_from", o->score_from, "methods", methods, "nds", "params",
                            params, "runs", (json_int_t)m.n_runs, "points", (json_int_t)m.n_points, "in_sample_mean",
                            m.in_mean, "in_sample_max", m.in_max, "sigma_noise", m.sigma_noise, "sigma_fit", m.sigma_fit,
                            "inner_rms", inner);
        if (!*report) st = sx_fail(SX_ERR_NOMEM, "backtest: cannot build the report");
        if (!st && isfinite(length_back)) json_object_set_new(json_object_get(*report, "nds"), "length_back", json_real(length_back));
        if (!st && *ch.by_run) json_object_set_new(*report, "inner_by_run", json_string(ch.by_run));
        if (!st && sf.n)
            json_object_set_new(*report, "final_law", json_pack("{s:f, s:f, s:f, s:f, s:f, s:I, s:f}", "E", fl.p[LAW_ND_E], "A",
                                fl.p[LAW_ND_A], "B", fl.p[LAW_ND_B], "alpha", fl.p[LAW_ND_ALPHA], "beta", fl.p[LAW_ND_BETA],
                                "runs", (json_int_t)fl.n_runs, "in_sample_mean", fl.in_mean));
        if (!st && mpl_info) json_object_set(*report, "mpl", mpl_info);
        if (!st && have_pf)
            json_object_set_new(*report, "forecaster_above", json_pack("{s:f, s:f, s:s}", "nds", inner, "perfrac", pf_back,
                                                                        "chosen", pf_above ? "perfrac" : "nds"));
    }
    json_decref(sn.runs);
    json_decref(sb.runs);
    json_decref(sc.runs);
    json_decref(sf.runs);
    json_decref(sm.runs);
    json_decref(stis.runs);
    json_decref(mpl_info);
    free(train);
    groups_free(&g);
    return st;
}

static double num(const json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

// o[key] as a percentage into buf[24], or "not measured" where absent.
static const char *pct_or_unmeasured(const json_t *o, const char *key, char *buf) {
    json_t *v = json_object_get(o, key);
    if (!v) return "not measured";
    snprintf(buf, 24, "%.3f%%", 100 * json_number_value(v));
    return buf;
}

void backtest_print(FILE *f, const json_t *rep) {
    json_t *tg = json_object_get(rep, "targets"), *tr = json_object_get(rep, "train"), *v;
    size_t i;
    fprintf(f, "train:");
    json_array_foreach(tr, i, v) fprintf(f, " %s", json_string_value(json_object_get(v, "group")));
    fprintf(f, "\ntargets:");
    json_array_foreach(tg, i, v) fprintf(f, " %s", json_string_value(json_object_get(v, "group")));
    json_t *ch = json_object_get(rep, "n_choice_inner_rms");
    const char *kind;
    json_t *e;
    if (json_object_size(ch) > 1) {
        fprintf(f, "\nN chosen by the error %s (RMS):", json_object_get(rep, "inner_by_run") ? "leaving one run out" : "one size back");
        json_object_foreach(ch, kind, e) fprintf(f, " %s %.3f%%", kind, 100 * json_number_value(e));
    }
    fprintf(f, "  (N %s; loss %s; scored after %.0f%% of each run)\n", json_string_value(json_object_get(rep, "n_param_kind")),
            json_string_value(json_object_get(rep, "loss")), 100 * num(rep, "score_from"));
    fprintf(f, "%-8s %7s %9s %9s %9s %9s %9s  %s\n", "method", "points", "mean|err|", "max|err|", "final", "final max", "run mean",
            "in band (half-width)");
    json_array_foreach(json_object_get(rep, "methods"), i, v) {
        json_t *cov = json_object_get(v, "band_coverage");
        char band[48] = "-";
        if (cov) snprintf(band, sizeof band, "%.1f%% (±%.2f%%)", 100 * json_number_value(cov), 100 * num(v, "band_half_width_rel"));
        fprintf(f, "%-8s %7lld %8.3f%% %8.3f%% %8.3f%% %8.3f%% %8.3f%%  %s\n", json_string_value(json_object_get(v, "method")),
                (long long)json_integer_value(json_object_get(v, "n_points")), 100 * num(v, "mean_abs_rel_err"),
                100 * num(v, "max_abs_rel_err"), 100 * num(v, "final_abs_rel_err"), 100 * num(v, "final_max_abs_rel_err"),
                100 * num(v, "run_mean_abs_rel_err"), band);
    }
    json_t *nds = json_object_get(rep, "nds"), *p = json_object_get(nds, "params");
    char lb_nds[24], lb_mpl[24], lb_tis[24];
    fprintf(f, "nds law: L = %.4g + %.4g*N^-%.4g + %.4g*N^%.3g*S^-%.4g - %.4g*LD(C=%.3g, g=%.3g); in-sample mean %.3f%%; "
               "sigma: noise %.3f%%, %s %.3f%%, one length back %s\n",
            num(p, "E"), num(p, "A"), num(p, "alpha"), num(p, "B"), num(p, "eps"), num(p, "beta"), num(p, "D"), num(p, "C"), num(p, "g"),
            100 * num(nds, "in_sample_mean"), 100 * num(nds, "sigma_noise"),
            json_object_get(rep, "inner_by_run") ? "leaving one run out" : "one size back", 100 * num(nds, "inner_rms"),
            pct_or_unmeasured(nds, "length_back", lb_nds));
    json_t *mpl = json_object_get(rep, "mpl"), *mp = json_object_get(mpl, "params");
    if (mpl)
        fprintf(f, "mpl law: L0 %.4g A %.4g B %.4g alpha %.4g C %.4g beta %.4g gamma %.4g (shape prior weight %g, chosen "
                   "leaving one training curve out); in-sample mean %.3f%%\n", json_number_value(json_array_get(mp, 0)),
                json_number_value(json_array_get(mp, 1)), json_number_value(json_array_get(mp, 2)),
                json_number_value(json_array_get(mp, 3)), json_number_value(json_array_get(mp, 4)),
                json_number_value(json_array_get(mp, 5)), json_number_value(json_array_get(mp, 6)), num(mpl, "prior_weight"),
                100 * num(mpl, "in_sample_mean"));
    json_t *law_ch = json_object_get(mpl, "schedule_law_choice");
    json_t *lb = json_object_get(mpl, "length_back");
    if (law_ch)
        fprintf(f, "schedule law by leaving one training curve out: nds %.3f%%, mpl %.3f%%, tissue %.3f%% -> %s (one length "
                "back, for the bands: mpl %s, tissue %s)\n", 100 * num(law_ch, "nds"), 100 * num(law_ch, "mpl"),
                100 * num(law_ch, "tissue"), json_string_value(json_object_get(law_ch, "chosen")),
                pct_or_unmeasured(lb, "mpl", lb_mpl), pct_or_unmeasured(lb, "tissue", lb_tis));
    json_t *above = json_object_get(rep, "forecaster_above");
    if (above)
        fprintf(f, "forecaster above the training sizes, by the error one size back (RMS; perfrac where below %.2f x nds's): "
                "nds %.3f%%, perfrac %.3f%% -> %s%s\n", PERFRAC_CHOICE_MARGIN, 100 * num(above, "nds"), 100 * num(above, "perfrac"), json_string_value(json_object_get(above, "chosen")),
                strcmp(json_string_value(json_object_get(above, "chosen")), "nds") ? " (scored as \"chosen\")" : "");
    json_t *fl = json_object_get(rep, "final_law");
    if (fl)
        fprintf(f, "final law (on %lld runs' final losses): L = %.4g + %.4g*N^-%.4g + %.4g*D^-%.4g; in-sample mean %.3f%%\n",
                (long long)json_integer_value(json_object_get(fl, "runs")), num(fl, "E"), num(fl, "A"), num(fl, "alpha"),
                num(fl, "B"), num(fl, "beta"), 100 * num(fl, "in_sample_mean"));
}
