// perfrac: the per-fraction law as a forecaster. See perfrac.h.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "laws/fit.h"
#include "laws/perfrac.h"

enum { MIN_RUNS = 6 };   // runs with a point at a fraction, for a law of 5 parameters there

double perfrac_frac(size_t k) { return 0.10 + 0.05 * (double)k; }

static double run_n(const import_run *r, int nonembed) { return nonembed ? r->n_nonembed : r->n_params; }
static double run_d(const import_run *r) { return (double)r->total_steps * r->tokens_per_step; }

// The run's loss at fraction f of its steps: log-step linear between the points around it; NAN outside.
static double loss_at_frac(const import_ladder *l, const import_run *r, size_t loss, double f) {
    double s = f * (double)r->total_steps;
    for (size_t q = 0; q < r->n_points; q++) {
        double sq = (double)r->step[q];
        if (fabs(sq - s) < 1e-9 * s) return r->loss[q * l->n_loss + loss];
        if (sq > s) {
            if (q == 0) return NAN;
            double s0 = (double)r->step[q - 1], y0 = r->loss[(q - 1) * l->n_loss + loss], y1 = r->loss[q * l->n_loss + loss];
            return y0 + (y1 - y0) * log(s / s0) / log(sq / s0);
        }
    }
    return NAN;
}

// The group of the training run with the largest N: the anchor, and the size one_size_back forecasts.
static const char *top_group(const import_ladder *l, const unsigned char *train, int nonembed) {
    const import_run *top = NULL;
    for (size_t i = 0; i < l->n_runs; i++)
        if (train[i] && (!top || run_n(&l->runs[i], nonembed) > run_n(top, nonembed))) top = &l->runs[i];
    return top ? top->group : "";
}

sx_status perfrac_fit(const import_ladder *l, const unsigned char *train, size_t loss, int nonembed, perfrac_model *m) {
    m->nonembed = nonembed;
    const char *top = top_group(l, train, nonembed);
    double *n = sx_alloc((l->n_runs ? l->n_runs : 1) * sizeof *n, "perfrac n"),
           *d = sx_alloc((l->n_runs ? l->n_runs : 1) * sizeof *d, "perfrac d"),
           *y = sx_alloc((l->n_runs ? l->n_runs : 1) * sizeof *y, "perfrac y");
    sx_status st = n && d && y ? SX_OK : sx_fail(SX_ERR_NOMEM, "perfrac: out of memory");
    fit_options fo;
    fit_options_default(&fo);
    size_t fitted = 0;
    for (size_t k = 0; k < PERFRAC_N_FRACS && !st; k++) {
        double f = perfrac_frac(k);
        for (size_t j = 0; j < LAW_ND_NPARAM; j++) m->p[k][j] = NAN;
        m->ratio[k] = NAN;
        size_t cnt = 0;
        for (size_t i = 0; i < l->n_runs; i++) {
            double v = train[i] ? loss_at_frac(l, &l->runs[i], loss, f) : NAN;
            if (!isfinite(v)) continue;
            n[cnt] = run_n(&l->runs[i], nonembed);
            d[cnt] = run_d(&l->runs[i]);
            y[cnt++] = v;
        }
        fit_law law;
        fit_result res;
        if (cnt < MIN_RUNS) continue;
        sx_status fst = law_nd_bind(n, d, cnt, &law);
        if (!fst) fst = fit_law_run(&law, y, NULL, &fo, &res);
        if (fst == SX_ERR_NOMEM) st = fst;   // out of memory ends the fit; a fraction the law cannot fit has no law
        if (fst == SX_OK) {
            double ratio = 0;
            size_t anchored = 0;
            for (size_t i = 0; i < l->n_runs; i++) {
                double v = train[i] && !strcmp(l->runs[i].group, top) ? loss_at_frac(l, &l->runs[i], loss, f) : NAN;
                if (!isfinite(v)) continue;
                ratio += v / law_nd_eval(res.params, run_n(&l->runs[i], nonembed), run_d(&l->runs[i]));
                anchored++;
            }
            memcpy(m->p[k], res.params, sizeof m->p[k]);
            m->ratio[k] = anchored ? ratio / (double)anchored : 1;
            fitted++;
            fit_result_free(&res);
        }
        fit_law_free(&law);
    }
    free(n); free(d); free(y);
    if (!st && !fitted)
        st = sx_fail(SX_ERR_ARG, "per-fraction law: no fraction of the runs has points of %d training runs", MIN_RUNS);
    return st;
}

void perfrac_predict(const perfrac_model *m, const import_run *t, const long *steps, size_t n, double *pred) {
    double at[PERFRAC_N_FRACS];
    for (size_t k = 0; k < PERFRAC_N_FRACS; k++)
        at[k] = isnan(m->p[k][0]) ? NAN : law_nd_eval(m->p[k], run_n(t, m->nonembed), run_d(t)) * m->ratio[k];
    for (size_t q = 0; q < n; q++) { // log-fraction interpolation, held at the ends
        double f = (double)steps[q] / (double)t->total_steps, v = NAN;
        size_t k0 = PERFRAC_N_FRACS, k1 = PERFRAC_N_FRACS;
        for (size_t k = 0; k < PERFRAC_N_FRACS; k++) {
            if (!isfinite(at[k])) continue;
            if (perfrac_frac(k) <= f + 1e-12) k0 = k;
            else if (k1 == PERFRAC_N_FRACS) k1 = k;
        }
        if (k0 < PERFRAC_N_FRACS && k1 < PERFRAC_N_FRACS)
            v = at[k0] + (at[k1] - at[k0]) * log(f / perfrac_frac(k0)) / log(perfrac_frac(k1) / perfrac_frac(k0));
        else if (k0 < PERFRAC_N_FRACS) v = at[k0];
        else if (k1 < PERFRAC_N_FRACS) v = at[k1];
        pred[q] = v;
    }
}

sx_status perfrac_predict_shaped(const perfrac_model *m, const curvefit_model *shape, const import_run *t, const long *steps,
                                 size_t n, double *pred) {
    perfrac_predict(m, t, steps, n, pred);
    size_t first = PERFRAC_N_FRACS, last = 0;
    for (size_t k = 0; k < PERFRAC_N_FRACS; k++)
        if (!isnan(m->p[k][0])) { if (first == PERFRAC_N_FRACS) first = k; last = k; }
    double *joint = sx_alloc((n ? n : 1) * sizeof *joint, "perfrac joint");
    if (!joint) return sx_fail(SX_ERR_NOMEM, "perfrac: out of memory");
    sx_status st = curvefit_predict(shape, t, steps, n, joint);
    double scale[2] = {NAN, NAN};   // per-fraction / joint at the first and last fitted fraction
    for (int e = 0; e < 2 && !st && first < PERFRAC_N_FRACS; e++) {
        long s = lround(perfrac_frac(e ? last : first) * (double)t->total_steps);
        s = s < 1 ? 1 : s > t->total_steps ? t->total_steps : s;
        double pf, nds;
        perfrac_predict(m, t, &s, 1, &pf);
        if (!(st = curvefit_predict(shape, t, &s, 1, &nds))) scale[e] = pf / nds;
    }
    for (size_t q = 0; q < n && !st; q++) {
        double f = (double)steps[q] / (double)t->total_steps;
        if (f < perfrac_frac(first) - 1e-12) pred[q] = joint[q] * scale[0];
        else if (f > perfrac_frac(last) + 1e-12) pred[q] = joint[q] * scale[1];
    }
    free(joint);
    return st;
}

sx_status perfrac_one_size_back(const import_ladder *l, const unsigned char *train, size_t loss, int nonembed,
                                double score_from, double *rms) {
    *rms = NAN;
    const char *top = top_group(l, train, nonembed);
    unsigned char *inner = sx_alloc(l->n_runs ? l->n_runs : 1, "perfrac inner");
    if (!inner) return sx_fail(SX_ERR_NOMEM, "perfrac: out of memory");
    size_t groups = 0;
    for (size_t i = 0; i < l->n_runs; i++) {
        inner[i] = train[i] && strcmp(l->runs[i].group, top);
        size_t j = 0;   // a group counted at its first inner run
        while (j < i && !(inner[j] && !strcmp(l->runs[j].group, l->runs[i].group))) j++;
        groups += inner[i] && j == i;
    }
    perfrac_model m;
    sx_status fst = groups >= 3 ? perfrac_fit(l, inner, loss, nonembed, &m) : SX_ERR_ARG;
    sx_status st = fst == SX_ERR_NOMEM ? fst : SX_OK;   // another failure: no law one size back, and no error
    if (fst == SX_OK) {
        double ss = 0;
        size_t cnt = 0;
        for (size_t i = 0; i < l->n_runs && !st; i++) {
            const import_run *r = &l->runs[i];
            if (!train[i] || inner[i]) continue;
            double *pred = sx_alloc((r->n_points ? r->n_points : 1) * sizeof *pred, "perfrac pred");
            if (!pred) { st = sx_fail(SX_ERR_NOMEM, "perfrac: out of memory"); break; }
            perfrac_predict(&m, r, r->step, r->n_points, pred);
            for (size_t q = 0; q < r->n_points; q++) {
                double e = pred[q] / r->loss[q * l->n_loss + loss] - 1;
                if ((double)r->step[q] > score_from * (double)r->total_steps && isfinite(e)) { ss += e * e; cnt++; }
            }
            free(pred);
        }
        if (cnt) *rms = sqrt(ss / (double)cnt);
    }
    free(inner);
    return st;
}

json_t *perfrac_json(const perfrac_model *m) {
    json_t *fracs = json_array(), *params = json_array(), *ratio = json_array();
    for (size_t k = 0; k < PERFRAC_N_FRACS; k++) {
        json_array_append_new(fracs, json_real(perfrac_frac(k)));
        json_t *row = isnan(m->p[k][0]) ? json_null() : json_array();
        for (size_t j = 0; j < LAW_ND_NPARAM && !json_is_null(row); j++) json_array_append_new(row, json_real(m->p[k][j]));
        json_array_append_new(params, row);
        json_array_append_new(ratio, isnan(m->ratio[k]) ? json_null() : json_real(m->ratio[k]));
    }
    return json_pack("{s:b, s:o, s:o, s:o}", "nonembed", m->nonembed, "fracs", fracs, "params", params, "ratio", ratio);
}

sx_status perfrac_read(json_t *j, perfrac_model *m) {
    json_t *params = json_object_get(j, "params"), *ratio = json_object_get(j, "ratio");
    if (!json_is_boolean(json_object_get(j, "nonembed")) || json_array_size(params) != PERFRAC_N_FRACS ||
        json_array_size(ratio) != PERFRAC_N_FRACS)
        return sx_fail(SX_ERR_FORMAT, "fit.json: perfrac needs nonembed and %d rows of params and ratio", PERFRAC_N_FRACS);
    m->nonembed = json_is_true(json_object_get(j, "nonembed"));
    size_t fitted = 0;
    for (size_t k = 0; k < PERFRAC_N_FRACS; k++) {
        json_t *row = json_array_get(params, k), *r = json_array_get(ratio, k);
        for (size_t i = 0; i < LAW_ND_NPARAM; i++) m->p[k][i] = NAN;
        m->ratio[k] = NAN;
        if (json_is_null(row)) continue;
        for (size_t i = 0; i < LAW_ND_NPARAM; i++) {
            m->p[k][i] = json_number_value(json_array_get(row, i));
            if (json_array_size(row) != LAW_ND_NPARAM || !isfinite(m->p[k][i]))
                return sx_fail(SX_ERR_FORMAT, "fit.json: perfrac params at fraction %.2f are not %d numbers", perfrac_frac(k),
                               LAW_ND_NPARAM);
        }
        m->ratio[k] = json_number_value(r);
        if (!(m->ratio[k] > 0 && isfinite(m->ratio[k])))
            return sx_fail(SX_ERR_FORMAT, "fit.json: perfrac ratio at fraction %.2f is not a positive number", perfrac_frac(k));
        fitted++;
    }
    return fitted ? SX_OK : sx_fail(SX_ERR_FORMAT, "fit.json: perfrac has no fraction with a law");
}
