// lrfit: LR optima from a sweep and the LR rule across widths (see lrfit.h).
#include <math.h>
#include <string.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_multifit.h>
#include "laws/lrfit.h"

// The number of distinct LRs; when there are 3 or more, [*lo, *hi] spans the LR whose mean loss is lowest and its
// two neighbours among them (the three lowest or highest when the best is at an edge). Loss against ln LR is not
// a parabola over a wide sweep: it climbs faster above the optimum than below, so a parabola through all of a
// 16x sweep puts its vertex too low (by 20-25% on such a curve; README "One size up"). Near the optimum any
// smooth curve is a parabola.
static size_t best_window(const double *lr, const double *loss, size_t n, double *lo, double *hi) {
    double x[LRFIT_MAX_POINTS], mean[LRFIT_MAX_POINTS];
    size_t d = 0;
    for (size_t i = 0; i < n; i++) {   // distinct LRs, ascending, with their mean loss
        size_t j = 0;
        while (j < d && x[j] < lr[i]) j++;
        if (j < d && x[j] == lr[i]) continue;
        memmove(x + j + 1, x + j, (d - j) * sizeof *x);
        x[j] = lr[i];
        d++;
    }
    for (size_t j = 0; j < d; j++) {
        double sum = 0, count = 0;
        for (size_t i = 0; i < n; i++)
            if (lr[i] == x[j]) { sum += loss[i]; count++; }
        mean[j] = sum / count;
    }
    if (d < 3) return d;
    size_t best = 0;
    for (size_t j = 1; j < d; j++)
        if (mean[j] < mean[best]) best = j;
    size_t first = best == 0 ? 0 : best + 1 == d ? d - 3 : best - 1;
    *lo = x[first];
    *hi = x[first + 2];
    return d;
}

sx_status lrfit_vertex(const double *lr, const double *loss, size_t n, double se_floor_rel, lrfit_optimum *out) {
    memset(out, 0, sizeof *out);
    if (n > LRFIT_MAX_POINTS) return sx_fail(SX_ERR_ARG, "an LR sweep of %zu points (at most %d)", n, LRFIT_MAX_POINTS);
    for (size_t i = 0; i < n; i++)
        if (!(lr[i] > 0) || !(loss[i] > 0) || !isfinite(loss[i]))
            return sx_fail(SX_ERR_ARG, "LR sweep point %zu: lr %g, loss %g must be positive", i, lr[i], loss[i]);
    double lo, hi;
    size_t distinct = best_window(lr, loss, n, &lo, &hi);
    if (distinct < 3) return sx_fail(SX_ERR_ARG, "an LR sweep needs at least 3 distinct LRs, it has %zu", distinct);
    size_t m = 0;   // the points inside the window, moved to the front of local copies
    double wlr[LRFIT_MAX_POINTS], wloss[LRFIT_MAX_POINTS];
    for (size_t i = 0; i < n; i++)
        if (lr[i] >= lo && lr[i] <= hi) { wlr[m] = lr[i]; wloss[m++] = loss[i]; }
    lr = wlr;
    loss = wloss;
    n = m;
    gsl_matrix *X = gsl_matrix_alloc(n, 3), *cov = gsl_matrix_alloc(3, 3);
    gsl_vector *y = gsl_vector_alloc(n), *c = gsl_vector_alloc(3);
    gsl_multifit_linear_workspace *w = gsl_multifit_linear_alloc(n, 3);
    if (!X || !cov || !y || !c || !w) {
        gsl_matrix_free(X); gsl_matrix_free(cov); gsl_vector_free(y); gsl_vector_free(c); gsl_multifit_linear_free(w);
        return sx_fail(SX_ERR_NOMEM, "out of memory");
    }
    double mean_loss = 0;
    for (size_t i = 0; i < n; i++) {
        double x = log(lr[i]);
        gsl_matrix_set(X, i, 0, 1);
        gsl_matrix_set(X, i, 1, x);
        gsl_matrix_set(X, i, 2, x * x);
        gsl_vector_set(y, i, loss[i]);
        mean_loss += loss[i] / (double)n;
    }
    double chisq;
    gsl_multifit_linear(X, y, c, cov, &chisq, w);
    // GSL's cov is scaled by its own residual variance (undefined for n == 3): recompute (X'X)^-1 unscaled.
    gsl_matrix *xtx = gsl_matrix_alloc(3, 3);
    gsl_permutation *perm = gsl_permutation_alloc(3);
    int sign;
    gsl_blas_dgemm(CblasTrans, CblasNoTrans, 1.0, X, X, 0.0, xtx);
    gsl_linalg_LU_decomp(xtx, perm, &sign);
    gsl_linalg_LU_invert(xtx, perm, cov);
    gsl_matrix_free(xtx);
    gsl_permutation_free(perm);
    double b = gsl_vector_get(c, 1), cc = gsl_vector_get(c, 2);
    double s2 = n > 3 ? chisq / (double)(n - 3) : 0, floor2 = pow(se_floor_rel * mean_loss, 2);
    if (s2 < floor2) s2 = floor2;
    double vbb = s2 * gsl_matrix_get(cov, 1, 1), vcc = s2 * gsl_matrix_get(cov, 2, 2), vbc = s2 * gsl_matrix_get(cov, 1, 2);
    gsl_matrix_free(X); gsl_matrix_free(cov); gsl_vector_free(y); gsl_vector_free(c); gsl_multifit_linear_free(w);
    if (!(cc > 0)) return sx_fail(SX_ERR_NUMERIC, "the losses of the LR sweep do not curve upward around an optimum "
                                  "(curvature %g): widen the sweep", cc);
    double xs = -b / (2 * cc), xmin = INFINITY, xmax = -INFINITY;
    for (size_t i = 0; i < n; i++) { xmin = fmin(xmin, log(lr[i])); xmax = fmax(xmax, log(lr[i])); }
    if (xs < xmin - M_LN2 || xs > xmax + M_LN2)
        return sx_fail(SX_ERR_NUMERIC, "the LR sweep's optimum %.3g lies more than 2x outside the swept LRs [%.3g, %.3g]: "
                       "move the sweep towards it", exp(xs), exp(xmin), exp(xmax));
    double db = -1 / (2 * cc), dc = b / (2 * cc * cc);
    out->lr = exp(xs);
    out->se_log = sqrt(fmax(0, db * db * vbb + dc * dc * vcc + 2 * db * dc * vbc));
    out->curvature = cc;
    return SX_OK;
}

sx_status lrfit_power(const lrfit_optimum *opt, size_t n, double ref_width, lrfit_rule *out) {
    memset(out, 0, sizeof *out);
    if (n < 2) return sx_fail(SX_ERR_ARG, "the LR rule needs optima at 2 or more widths, it has %zu", n);
    // Weighted least squares of y = ln lr* on z = ln(w/ref): y = u - power*z.
    double S = 0, Sz = 0, Szz = 0, Sy = 0, Szy = 0, curv = 0;
    for (size_t i = 0; i < n; i++) {
        double se = fmax(opt[i].se_log, 1e-6), wt = 1 / (se * se), z = log(opt[i].width / ref_width), y = log(opt[i].lr);
        S += wt; Sz += wt * z; Szz += wt * z * z; Sy += wt * y; Szy += wt * z * y;
        curv += opt[i].curvature / (double)n;
    }
    double det = S * Szz - Sz * Sz;
    if (!(det > 0)) return sx_fail(SX_ERR_ARG, "the LR sweep's widths must differ");
    double slope = (S * Szy - Sz * Sy) / det, icpt = (Szz * Sy - Sz * Szy) / det;
    out->ref_width = ref_width;
    out->log_coef = icpt;
    out->power = -slope;
    out->cov[0][0] = Szz / det;
    out->cov[1][1] = S / det;
    out->cov[0][1] = out->cov[1][0] = Sz / det;   // cov(u, -slope) = -cov(u, slope) = Sz/det
    out->curvature = curv;
    return SX_OK;
}

double lrfit_predict(const lrfit_rule *r, double width, double *se_log, double *loss_cost) {
    double z = log(width / r->ref_width), y = r->log_coef - r->power * z;
    // Var(u - p z) = var u + z^2 var p - 2 z cov(u, p)
    double v = r->cov[0][0] + z * z * r->cov[1][1] - 2 * z * r->cov[0][1];
    double se = sqrt(fmax(0, v));
    if (se_log) *se_log = se;
    if (loss_cost) *loss_cost = r->curvature * se * se;
    return exp(y);
}
