// schedfit: the multi-power law with a cross-validated shape prior. See schedfit.h.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "laws/schedfit.h"

#define MPL_BLOCK 16 // LR changes merged per term while fitting (exact polish afterwards)

const double schedfit_weights[SCHEDFIT_N_WEIGHTS] = {0, 1e-5, 1e-4, 1e-3, 1e-2};

static const double shape_prior[LAW_MPL_NPARAM] = {
    [LAW_MPL_L0] = NAN, [LAW_MPL_A] = NAN, [LAW_MPL_B] = NAN, [LAW_MPL_ALPHA] = NAN,
    [LAW_MPL_C] = 1,    [LAW_MPL_BETA] = 0.5, [LAW_MPL_GAMMA] = 0.5};

// The law's curves and observations: every curve but `skip`. *curves and *obs malloc'd.
static sx_status gather(const schedfit_curve *c, size_t n, size_t skip, law_curve **curves, size_t *nc, double **obs) {
    *curves = sx_alloc((n ? n : 1) * sizeof **curves, "schedfit curves");
    size_t n_pts = 0;
    *nc = 0;
    for (size_t k = 0; *curves && k < n; k++)
        if (k != skip) {
            (*curves)[(*nc)++] = (law_curve){c[k].lr, c[k].n_steps, c[k].steps, c[k].n_points};
            n_pts += c[k].n_points;
        }
    *obs = sx_alloc((n_pts ? n_pts : 1) * sizeof **obs, "schedfit obs");
    if (!*curves || !*obs) return sx_fail(SX_ERR_NOMEM, "schedule law: out of memory");
    for (size_t k = 0, at = 0; k < n; k++)
        if (k != skip) {
            memcpy(*obs + at, c[k].loss, c[k].n_points * sizeof **obs);
            at += c[k].n_points;
        }
    return SX_OK;
}

sx_status schedfit_mpl_fit(const schedfit_curve *c, size_t n, double weight, size_t skip, fit_result *r) {
    law_curve *curves;
    double *obs;
    size_t nc;
    fit_law law = {0}, fast = {0};
    sx_status st = gather(c, n, skip, &curves, &nc, &obs);
    if (!st) st = law_mpl_bind(curves, nc, 1, &law);
    if (!st) st = law_mpl_bind(curves, nc, MPL_BLOCK, &fast);
    fit_options o;
    fit_options_default(&o);
    o.n_starts = 3;
    o.max_iter = 100;
    o.prior = shape_prior;
    o.prior_weight = weight;
    if (!st) st = fit_law_run_staged(&fast, &law, obs, NULL, &o, r);
    fit_law_free(&law);
    fit_law_free(&fast);
    free(obs);
    free(curves);
    return st;
}

sx_status schedfit_tissue_fit(const schedfit_curve *c, size_t n, size_t skip, fit_result *r) {
    law_curve *curves;
    double *obs;
    size_t nc;
    fit_law law = {0};
    sx_status st = gather(c, n, skip, &curves, &nc, &obs);
    if (!st) st = law_tissue_bind(curves, nc, &law);
    fit_options o;
    fit_options_default(&o);
    o.n_starts = 3;
    o.max_iter = 100;
    if (!st) st = fit_law_run(&law, obs, NULL, &o, r);
    fit_law_free(&law);
    free(obs);
    free(curves);
    return st;
}

typedef void (*sched_predict_fn)(const double *p, const law_sched *s, const size_t *steps, size_t n, double *pred);

static sx_status predict_with(sched_predict_fn fn, const double *p, const schedfit_curve *c, double *pred) {
    law_sched *s = law_sched_new(c->lr, c->n_steps);
    if (!s) return sx_fail(SX_ERR_NOMEM, "schedule law: out of memory");
    fn(p, s, c->steps, c->n_points, pred);
    law_sched_free(s);
    return SX_OK;
}

sx_status schedfit_tissue_predict(const double *p, const schedfit_curve *c, double *pred) {
    return predict_with(law_tissue_predict, p, c, pred);
}

sx_status schedfit_mpl_predict(const double *p, const schedfit_curve *c, double *pred) {
    return predict_with(law_mpl_predict, p, c, pred);
}

int schedfit_point_shared(const schedfit_curve *c, size_t n, size_t k, size_t i) {
    const schedfit_curve *a = &c[k];
    for (size_t j = 0; j < n; j++) {
        const schedfit_curve *b = &c[j];
        if (j == k || b->n_steps <= a->steps[i]) continue;
        for (size_t q = 0; q < b->n_points; q++)
            if (b->steps[q] == a->steps[i] && b->loss[q] == a->loss[i] && !memcmp(a->lr, b->lr, (a->steps[i] + 1) * sizeof *a->lr))
                return 1;
    }
    return 0;
}

// Leave-one-curve-out error of the MPL at `weight` (tissue 0) or of Tissue's law (tissue 1).
static double cv_error(const schedfit_curve *c, size_t n, int tissue, double weight) {
    double sum = 0;
    size_t folds = 0;
    for (size_t k = 0; k < n; k++) {
        fit_result r;
        if (tissue ? schedfit_tissue_fit(c, n, k, &r) : schedfit_mpl_fit(c, n, weight, k, &r)) continue;
        double *pred = sx_alloc((c[k].n_points ? c[k].n_points : 1) * sizeof *pred, "schedfit pred"), e = 0;
        size_t m = 0;
        if (pred && !(tissue ? schedfit_tissue_predict : schedfit_mpl_predict)(r.params, &c[k], pred))
            for (size_t i = 0; i < c[k].n_points; i++)
                if (!schedfit_point_shared(c, n, k, i)) {
                    e += fabs(pred[i] / c[k].loss[i] - 1);
                    m++;
                }
        sum += m ? e / (double)m : 0;
        folds += m > 0;
        free(pred);
        fit_result_free(&r);
    }
    return folds ? sum / (double)folds : NAN;
}

double schedfit_mpl_cv_error(const schedfit_curve *c, size_t n, double weight) { return cv_error(c, n, 0, weight); }
double schedfit_tissue_cv_error(const schedfit_curve *c, size_t n) { return cv_error(c, n, 1, 0); }

sx_status schedfit_mpl(const schedfit_curve *c, size_t n, double *weight, double *cv, fit_result *r) {
    if (n < 2) return sx_fail(SX_ERR_ARG, "schedule law: %zu curves; leave-one-curve-out needs at least 2", n);
    double best = INFINITY;
    *weight = 0;
    for (size_t k = 0; k < SCHEDFIT_N_WEIGHTS; k++) {
        double e = schedfit_mpl_cv_error(c, n, schedfit_weights[k]);
        if (cv) cv[k] = e;
        if (e < best) { best = e; *weight = schedfit_weights[k]; }
    }
    return schedfit_mpl_fit(c, n, *weight, n, r);
}
