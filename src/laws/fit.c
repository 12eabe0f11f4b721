// fit: grid + variable projection + GSL Levenberg-Marquardt on Huber-log residuals, bootstrap, backtests,
// per-fraction and cross-rung scale fits, JSON. See fit.h.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_multifit_nlinear.h>
#include "core/status.h"
#include "core/rng.h"
#include "laws/fit.h"

#define FIT_MAX_LINEAR 8
#define FIT_STAGED_POLISH_ITER 10 // exact-law iterations after a fast fit
#define FIT_BAD_RESIDUAL 1e3 // log residual charged for a non-positive or non-finite prediction
#define FIT_TINY 1e-300 // where a parameter on its bound 0 starts in the optimiser's log space

void fit_options_default(fit_options *o) {
    *o = (fit_options){.huber_delta = 1e-3, .n_starts = 4, .max_iter = 200, .pin = NULL, .prior = NULL,
                       .prior_weight = 0};
}

void fit_result_free(fit_result *r) {
    free(r->params);
    free(r->ci_lo);
    free(r->ci_hi);
    free(r->bt_mean_abs_rel);
    free(r->bt_max_abs_rel);
    memset(r, 0, sizeof *r);
}

static int is_pinned(const fit_options *o, size_t j) { return o->pin && !isnan(o->pin[j]); }

static int has_prior(const fit_options *o, size_t j) {
    return o->prior && o->prior_weight > 0 && !isnan(o->prior[j]);
}

// prior_weight/2 * sum_j (log p_j - log prior_j)^2 over the parameters with a prior.
static double prior_penalty(const fit_law *law, const fit_options *o, const double *p) {
    double sum = 0;
    for (size_t j = 0; j < law->n_params; j++) {
        if (!has_prior(o, j)) continue;
        double d = log(p[j] / o->prior[j]);
        sum += 0.5 * o->prior_weight * d * d;
    }
    return sum;
}

static double huber(double r, double delta) {
    double a = fabs(r);
    return a <= delta ? 0.5 * r * r : delta * (a - 0.5 * delta);
}

// Log residual with a large penalty where the prediction is unusable.
static double log_residual(double pred, double obs) {
    if (!(pred > 0) || !isfinite(pred)) return FIT_BAD_RESIDUAL;
    return log(pred / obs);
}

static double weight_of(const double *w, size_t i) { return w ? w[i] : 1.0; }

// A thread's prediction buffer, grown as needed and kept: the fits evaluate thousands of times.
static double *predictions(size_t n) {
    static _Thread_local double *buf;
    static _Thread_local size_t cap;
    if (n > cap) {
        double *b = sx_realloc(buf, n * sizeof *b, "fit predictions");
        if (!b) return NULL;
        buf = b;
        cap = n;
    }
    return buf;
}

void fit_evaluate(const fit_law *law, const double *params, const double *obs, const double *w,
                  const fit_options *o, double *objective, double *mean_abs_rel, double *max_abs_rel) {
    double *pred = predictions(law->n_points);
    if (!pred) {   // the fit sees an unusable point; its caller's sx_alloc_check reports the failure
        if (objective) *objective = INFINITY;
        if (mean_abs_rel) *mean_abs_rel = INFINITY;
        if (max_abs_rel) *max_abs_rel = INFINITY;
        return;
    }
    law->eval(law->ctx, params, pred, NULL);
    double obj = 0, sum = 0, mx = 0, cnt = 0;
    for (size_t i = 0; i < law->n_points; i++) {
        double wi = weight_of(w, i);
        if (wi <= 0) continue;
        obj += wi * huber(log_residual(pred[i], obs[i]), o->huber_delta);
        double e = fabs(pred[i] / obs[i] - 1);
        if (!isfinite(e)) e = INFINITY;
        sum += wi * e;
        cnt += wi;
        if (e > mx) mx = e;
    }
    if (objective) *objective = obj + prior_penalty(law, o, params);
    if (mean_abs_rel) *mean_abs_rel = cnt > 0 ? sum / cnt : NAN;
    if (max_abs_rel) *max_abs_rel = mx;
}

// ---- local refinement: GSL trust-region LM on Huber-transformed log residuals -----------------------

typedef struct {
    const fit_law *law;
    const double *obs, *w;
    const fit_options *o;
    double *p;          // [n_params] natural-unit parameters, free ones overwritten from x
    const size_t *free; // [n_free] parameter index of each optimisation variable (log space)
    size_t n_free;
    int with_prior;     // rows n_points..n_points+n_free-1 hold the prior's residuals
    double *pred, *jac; // [n_points], [n_points x n_params]
} lm_data;

// psi(r) with psi^2/2 = Huber(r): r inside [-delta, delta], sign(r)*sqrt(2 delta |r| - delta^2) outside.
static double huber_psi(double r, double delta, double *dpsi) {
    double a = fabs(r);
    if (a <= delta) {
        *dpsi = 1;
        return r;
    }
    double s = sqrt(2 * delta * a - delta * delta);
    *dpsi = delta / s;
    return r < 0 ? -s : s;
}

// The optimiser works on log p: law parameters are positive and span orders of magnitude (A ~ 1e3, alpha ~
// 0.3), so log space keeps them positive without constraints and makes one step size fit every parameter.
static void lm_set_params(lm_data *d, const gsl_vector *x) {
    for (size_t j = 0; j < d->n_free; j++) d->p[d->free[j]] = exp(gsl_vector_get(x, j));
}

static int lm_f(const gsl_vector *x, void *vd, gsl_vector *f) {
    lm_data *d = vd;
    lm_set_params(d, x);
    d->law->eval(d->law->ctx, d->p, d->pred, NULL);
    for (size_t i = 0; i < d->law->n_points; i++) {
        double wi = weight_of(d->w, i), dpsi;
        double v = wi > 0 ? sqrt(wi) * huber_psi(log_residual(d->pred[i], d->obs[i]), d->o->huber_delta, &dpsi) : 0;
        gsl_vector_set(f, i, v);
    }
    if (d->with_prior)
        for (size_t j = 0; j < d->n_free; j++) { // half the square of each is its penalty term
            size_t k = d->free[j];
            double v = has_prior(d->o, k) ? sqrt(d->o->prior_weight) * log(d->p[k] / d->o->prior[k]) : 0;
            gsl_vector_set(f, d->law->n_points + j, v);
        }
    return GSL_SUCCESS;
}

static int lm_df(const gsl_vector *x, void *vd, gsl_matrix *J) {
    lm_data *d = vd;
    lm_set_params(d, x);
    size_t np = d->law->n_params;
    d->law->eval(d->law->ctx, d->p, d->pred, d->jac);
    for (size_t i = 0; i < d->law->n_points; i++) {
        double wi = weight_of(d->w, i), dpsi = 0;
        double pi = d->pred[i];
        int usable = wi > 0 && pi > 0 && isfinite(pi);
        if (usable) huber_psi(log(pi / d->obs[i]), d->o->huber_delta, &dpsi);
        // chain rule for the residual psi(log(pred/obs)) in log p_k: psi' * (1/pred) * dpred/dp_k * p_k
        double scale = usable ? sqrt(wi) * dpsi / pi : 0;
        for (size_t j = 0; j < d->n_free; j++) {
            size_t k = d->free[j];
            double v = scale * d->jac[i * np + k] * d->p[k]; // d/d log p_k
            gsl_matrix_set(J, i, j, isfinite(v) ? v : 0);
        }
    }
    if (d->with_prior)
        for (size_t j = 0; j < d->n_free; j++)
            for (size_t q = 0; q < d->n_free; q++)
                gsl_matrix_set(J, d->law->n_points + j, q,
                               q == j && has_prior(d->o, d->free[j]) ? sqrt(d->o->prior_weight) : 0);
    return GSL_SUCCESS;
}

size_t fit_free_params(const fit_law *law, const fit_options *o) {
    size_t n_free = 0;
    for (size_t j = 0; j < law->n_params; j++) n_free += !is_pinned(o, j) && law->params[j].kind != LAW_GRID;
    return n_free;
}

static sx_status check_inputs(const fit_law *law, const double *obs, const double *w, const fit_options *o) {
    size_t n_free = fit_free_params(law, o), n_used = 0;
    for (size_t i = 0; i < law->n_points; i++) {
        if (!(obs[i] > 0) || !isfinite(obs[i]))
            return sx_fail(SX_ERR_ARG, "%s fit: observation %zu is not a positive number", law->name, i);
        double wi = weight_of(w, i);
        if (!(wi >= 0) || !isfinite(wi)) return sx_fail(SX_ERR_ARG, "%s fit: bad weight at point %zu", law->name, i);
        n_used += wi > 0;
    }
    if (n_used < n_free)
        return sx_fail(SX_ERR_ARG, "%s fit: %zu points for %zu free parameters", law->name, n_used, n_free);
    return SX_OK;
}

// ---- grid search with variable projection --------------------------------------------------------------

// Non-negative least squares min ||M c - b||^2, c >= 0, for m <= FIT_MAX_LINEAR columns, by trying every
// support set (exact: the optimum is the unconstrained solution on its support). gram = M^T M (m x m),
// mtb = M^T b, btb = b^T b, all with columns already scaled. c[m] overwritten. Returns the residual.
static double nnls_small(const double *gram, const double *mtb, double btb, size_t m, double *c) {
    double best = btb;
    memset(c, 0, m * sizeof(double));
    for (unsigned mask = 1; mask < (1u << m); mask++) {
        size_t idx[FIT_MAX_LINEAR], k = 0;
        for (size_t j = 0; j < m; j++)
            if (mask & (1u << j)) idx[k++] = j;
        double g[FIT_MAX_LINEAR * FIT_MAX_LINEAR], rhs[FIT_MAX_LINEAR], sol[FIT_MAX_LINEAR];
        for (size_t a = 0; a < k; a++) {
            rhs[a] = mtb[idx[a]];
            for (size_t b = 0; b < k; b++) g[a * k + b] = gram[idx[a] * m + idx[b]];
        }
        gsl_matrix_view G = gsl_matrix_view_array(g, k, k);
        gsl_vector_view R = gsl_vector_view_array(rhs, k), S = gsl_vector_view_array(sol, k);
        gsl_error_handler_t *old = gsl_set_error_handler_off(); // collinear columns (e.g. one size): skip the set
        int bad = gsl_linalg_cholesky_decomp1(&G.matrix) != GSL_SUCCESS;
        gsl_set_error_handler(old);
        if (bad) continue;
        if (gsl_linalg_cholesky_solve(&G.matrix, &R.vector, &S.vector) != GSL_SUCCESS) continue;
        int feasible = 1;
        double res = btb;
        for (size_t a = 0; a < k; a++) {
            feasible &= sol[a] >= 0 && isfinite(sol[a]);
            res -= sol[a] * mtb[idx[a]]; // at the LS solution: ||r||^2 = b'b - c'M'b
        }
        if (feasible && res < best) {
            best = res;
            memset(c, 0, m * sizeof(double));
            for (size_t a = 0; a < k; a++) c[idx[a]] = sol[a];
        }
    }
    return best;
}

typedef struct {
    const fit_law *law;
    const double *obs, *w;
    const fit_options *o;
    double *phi, *pred, *h; // [n x n_linear], [n], [n] Huber IRLS weights
    size_t lin_idx[FIT_MAX_LINEAR], n_lin; // solved linear parameters and their basis columns
    size_t lin_col[FIT_MAX_LINEAR];
} vp_work;

// Fills the LINEAR parameters of p (non-pinned ones) by IRLS-weighted NNLS on relative residuals and
// returns the Huber objective of the completed p.
static double vp_solve(vp_work *v, double *p) {
    const fit_law *law = v->law;
    size_t n = law->n_points, m = law->n_linear;
    law->basis(law->ctx, p, v->phi);
    for (size_t i = 0; i < n; i++) v->h[i] = 1;
    double obj = INFINITY;
    // Huber on log residuals by iteratively reweighted least squares: log(pred/obs) ~ (pred - obs)/obs, so
    // each pass is linear least squares on relative residuals (weights 1/obs^2) with the Huber weights h
    // (1 inside delta, delta/|r| outside) of the previous pass. Four passes settle the outliers' weights; the
    // exact objective is evaluated after each, and LM polishes the rest.
    for (int iter = 0; iter < 4; iter++) {
        double gram[FIT_MAX_LINEAR * FIT_MAX_LINEAR] = {0}, mtb[FIT_MAX_LINEAR] = {0}, btb = 0;
        double cscale[FIT_MAX_LINEAR] = {0};
        size_t k = v->n_lin;
        // column scales so the Gram matrix is well conditioned
        for (size_t i = 0; i < n; i++) {
            double s = weight_of(v->w, i) * v->h[i] / (v->obs[i] * v->obs[i]);
            for (size_t a = 0; a < k; a++) {
                double x = v->phi[i * m + v->lin_col[a]];
                cscale[a] += s * x * x;
            }
        }
        for (size_t a = 0; a < k; a++) cscale[a] = cscale[a] > 0 ? 1 / sqrt(cscale[a]) : 1;
        for (size_t i = 0; i < n; i++) {
            double s = weight_of(v->w, i) * v->h[i] / (v->obs[i] * v->obs[i]);
            if (s == 0) continue;
            double target = v->obs[i];
            size_t col = 0;
            for (size_t j = 0; j < law->n_params; j++) {
                if (law->params[j].kind != LAW_LINEAR) continue;
                if (is_pinned(v->o, j)) target -= v->o->pin[j] * v->phi[i * m + col];
                col++;
            }
            btb += s * target * target;
            for (size_t a = 0; a < k; a++) {
                double xa = v->phi[i * m + v->lin_col[a]] * cscale[a];
                mtb[a] += s * xa * target;
                for (size_t b = 0; b <= a; b++) gram[a * k + b] += s * xa * v->phi[i * m + v->lin_col[b]] * cscale[b];
            }
        }
        for (size_t a = 0; a < k; a++)
            for (size_t b = a + 1; b < k; b++) gram[a * k + b] = gram[b * k + a];
        double c[FIT_MAX_LINEAR];
        nnls_small(gram, mtb, btb, k, c);
        double ymean = 0;
        for (size_t i = 0; i < n; i++) ymean += v->obs[i] / (double)n;
        for (size_t a = 0; a < k; a++) {
            double colmean = 0;
            for (size_t i = 0; i < n; i++) colmean += fabs(v->phi[i * m + v->lin_col[a]]) / (double)n;
            double floor_v = 1e-6 * ymean / (colmean > 0 ? colmean : 1);
            double val = c[a] * cscale[a];
            p[v->lin_idx[a]] = val > floor_v ? val : floor_v; // parameters stay positive for log space
        }
        law->eval(law->ctx, p, v->pred, NULL);
        obj = 0;
        for (size_t i = 0; i < n; i++) {
            double r = log_residual(v->pred[i], v->obs[i]);
            obj += weight_of(v->w, i) * huber(r, v->o->huber_delta);
            v->h[i] = fabs(r) <= v->o->huber_delta ? 1 : v->o->huber_delta / fabs(r);
        }
    }
    obj += prior_penalty(law, v->o, p);
    return isfinite(obj) ? obj : INFINITY;
}

// Allocates v's buffers and lists the non-pinned LINEAR parameters with their basis columns. 0 on OOM.
static int vp_init(vp_work *v, const fit_law *law, const double *obs, const double *w, const fit_options *o) {
    size_t n = law->n_points, m = law->n_linear;
    *v = (vp_work){.law = law, .obs = obs, .w = w, .o = o, .phi = sx_alloc(n * (m ? m : 1) * sizeof(double), "fit phi"),
                   .pred = sx_alloc(n * sizeof(double), "fit pred"), .h = sx_alloc(n * sizeof(double), "fit h")};
    size_t col = 0;
    for (size_t j = 0; j < law->n_params; j++) {
        if (law->params[j].kind != LAW_LINEAR) continue;
        if (!is_pinned(o, j)) {
            v->lin_idx[v->n_lin] = j;
            v->lin_col[v->n_lin++] = col;
        }
        col++;
    }
    return v->phi && v->pred && v->h;
}

static void vp_release(vp_work *v) {
    free(v->phi);
    free(v->pred);
    free(v->h);
}

sx_status fit_refine(const fit_law *law, const double *obs, const double *w, const fit_options *o,
                     const double *start, double *params, double *objective) {
    sx_status st = check_inputs(law, obs, w, o);
    if (st != SX_OK) return st;
    size_t n = law->n_points, np = law->n_params;
    size_t free_idx[32], n_free = 0;
    int with_prior = 0;
    SX_CHECK(np <= 32, "a law has at most 32 parameters");
    for (size_t j = 0; j < np; j++) {
        params[j] = is_pinned(o, j) ? o->pin[j] : start[j];
        // 0 is allowed: a fit can end on the bound of a linear parameter (the projection clamps it there)
        SX_CHECK(params[j] >= 0, "law parameters are non-negative");
        if (!is_pinned(o, j) && law->params[j].kind != LAW_GRID) {
            free_idx[n_free++] = j;
            with_prior |= has_prior(o, j);
        }
    }
    // variable projection of the start: if the best linear parameters for its non-linear ones beat the
    // given linear ones, start from those (a far-off start then still begins in a sensible place)
    vp_work v;
    if (!vp_init(&v, law, obs, w, o)) {
        vp_release(&v);
        return sx_fail(SX_ERR_NOMEM, "%s fit: out of memory", law->name);
    }
    double projected[32], obj_given;
    memcpy(projected, params, np * sizeof(double));
    double obj_proj = vp_solve(&v, projected);
    vp_release(&v);
    fit_evaluate(law, params, obs, w, o, &obj_given, NULL, NULL);
    if (obj_proj < obj_given) memcpy(params, projected, np * sizeof(double));
    if (n_free == 0) {
        fit_evaluate(law, params, obs, w, o, objective, NULL, NULL);
        return SX_OK;
    }
    lm_data d = {.law = law, .obs = obs, .w = w, .o = o, .p = params, .free = free_idx, .n_free = n_free,
                 .with_prior = with_prior, .pred = sx_alloc(n * sizeof(double), "fit pred"),
                        .jac = sx_alloc(n * np * sizeof(double), "fit jac")};
    size_t n_rows = n + (with_prior ? n_free : 0);
    gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *ws =
        n_rows >= n_free ? gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, n_rows, n_free) : NULL;
    gsl_vector *x = gsl_vector_alloc(n_free);
    if (!d.pred || !d.jac || !ws || !x) {
        st = sx_fail(SX_ERR_NOMEM, "%s fit: cannot allocate the optimiser", law->name);
        goto done;
    }
    double best[32];
    memcpy(best, params, np * sizeof(double));
    // The optimiser works in log space: a parameter on its bound 0 starts just above it.
    for (size_t j = 0; j < n_free; j++) gsl_vector_set(x, j, log(fmax(params[free_idx[j]], FIT_TINY)));
    gsl_multifit_nlinear_fdf fdf = {.f = lm_f, .df = lm_df, .fvv = NULL, .n = n_rows, .p = n_free, .params = &d};
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int info = 0;
    gsl_multifit_nlinear_init(x, &fdf, ws);
    gsl_multifit_nlinear_driver(o->max_iter, 1e-10, 1e-12, 1e-14, NULL, NULL, &info, ws);
    gsl_set_error_handler(old);
    const gsl_vector *xs = gsl_multifit_nlinear_position(ws);
    int finite = 1;
    for (size_t j = 0; j < n_free; j++) finite &= isfinite(gsl_vector_get(xs, j));
    double obj_start, obj_end = INFINITY;
    fit_evaluate(law, best, obs, w, o, &obj_start, NULL, NULL);
    if (finite) {
        lm_set_params(&d, xs);
        fit_evaluate(law, params, obs, w, o, &obj_end, NULL, NULL);
    }
    if (!(obj_end <= obj_start)) { // never return something worse than the start
        memcpy(params, best, np * sizeof(double));
        obj_end = obj_start;
    }
    *objective = obj_end;
done:
    gsl_vector_free(x);
    if (ws) gsl_multifit_nlinear_free(ws);
    free(d.pred);
    free(d.jac);
    return st;
}

sx_status fit_law_run(const fit_law *law, const double *obs, const double *w, const fit_options *o,
                      fit_result *out) {
    memset(out, 0, sizeof *out);
    sx_status st = check_inputs(law, obs, w, o);
    if (st != SX_OK) return st;
    const long failures = sx_alloc_failures();   // fit_evaluate's, which it cannot return
    size_t n = law->n_points, np = law->n_params, m = law->n_linear;
    SX_CHECK(m <= FIT_MAX_LINEAR && np <= 32, "a law has at most FIT_MAX_LINEAR linear and 32 parameters");
    size_t ns = o->n_starts ? o->n_starts : 1;
    vp_work v;
    int vp_ok = vp_init(&v, law, obs, w, o);
    double *starts = sx_alloc(ns * np * sizeof(double), "fit starts"),
           *start_obj = sx_alloc(ns * sizeof(double), "fit start_obj");
    double *combo_obj = NULL, *combo_p = NULL;
    out->n_params = np;
    out->params = sx_alloc(np * sizeof(double), "fit out.params");
    if (!vp_ok || !starts || !start_obj || !out->params) {
        st = sx_fail(SX_ERR_NOMEM, "%s fit: out of memory", law->name);
        goto done;
    }
    // searched dimensions, first one varying fastest (laws order them so caches hit); GRID dimensions
    // also index a profile: the best grid point for each combination of GRID values is refined too
    size_t dims[32], n_dims = 0, total = 1, n_combo = 1;
    double p[32];
    for (size_t j = 0; j < np; j++) {
        const law_param *lp = &law->params[j];
        p[j] = is_pinned(o, j) ? o->pin[j] : 1;
        if (lp->kind != LAW_LINEAR && !is_pinned(o, j)) {
            SX_CHECK(lp->n_grid > 0, "a law's grid needs at least one point");
            dims[n_dims++] = j;
            total *= lp->n_grid;
            if (lp->kind == LAW_GRID) n_combo *= lp->n_grid;
        }
    }
    combo_obj = sx_alloc(n_combo * sizeof(double), "fit combo_obj");
    combo_p = sx_alloc(n_combo * np * sizeof(double), "fit combo_p");
    if (!combo_obj || !combo_p) {
        st = sx_fail(SX_ERR_NOMEM, "%s fit: out of memory", law->name);
        goto done;
    }
    for (size_t c = 0; c < n_combo; c++) combo_obj[c] = INFINITY;
    size_t n_kept = 0;
    for (size_t g = 0; g < total; g++) {
        size_t rem = g, combo = 0, radix = 1;
        for (size_t d = 0; d < n_dims; d++) {
            const law_param *lp = &law->params[dims[d]];
            size_t k = rem % lp->n_grid;
            p[dims[d]] = lp->grid[k];
            rem /= lp->n_grid;
            if (lp->kind == LAW_GRID) {
                combo += k * radix;
                radix *= lp->n_grid;
            }
        }
        double obj = vp_solve(&v, p);
        if (!isfinite(obj)) continue;
        if (obj < combo_obj[combo]) {
            combo_obj[combo] = obj;
            memcpy(combo_p + combo * np, p, np * sizeof(double));
        }
        // keep the ns best, sorted ascending
        size_t pos = n_kept < ns ? n_kept : ns;
        while (pos > 0 && start_obj[pos - 1] > obj) {
            if (pos < ns) {
                start_obj[pos] = start_obj[pos - 1];
                memcpy(starts + pos * np, starts + (pos - 1) * np, np * sizeof(double));
            }
            pos--;
        }
        if (pos < ns) {
            start_obj[pos] = obj;
            memcpy(starts + pos * np, p, np * sizeof(double));
            if (n_kept < ns) n_kept++;
        }
    }
    if (n_kept == 0) {
        st = sx_fail(SX_ERR_NUMERIC, "%s fit: no grid point gave a finite objective", law->name);
        goto done;
    }
    out->objective = INFINITY;
    double cand[32], obj;
    size_t n_profile = n_combo > 1 ? n_combo : 0;
    for (size_t s = 0; s < n_kept + n_profile; s++) {
        const double *start = s < n_kept ? starts + s * np : combo_p + (s - n_kept) * np;
        if (s >= n_kept && !isfinite(combo_obj[s - n_kept])) continue;
        st = fit_refine(law, obs, w, o, start, cand, &obj);
        if (st != SX_OK) goto done;
        if (obj < out->objective) {
            out->objective = obj;
            memcpy(out->params, cand, np * sizeof(double));
        }
    }
    fit_evaluate(law, out->params, obs, w, o, NULL, &out->mean_abs_rel, &out->max_abs_rel);
    for (size_t i = 0; i < n; i++) out->n_points += weight_of(w, i) > 0;
    st = sx_alloc_check(failures);
done:
    vp_release(&v);
    free(starts);
    free(start_obj);
    free(combo_obj);
    free(combo_p);
    if (st != SX_OK) fit_result_free(out);
    return st;
}

sx_status fit_law_run_staged(const fit_law *fast, const fit_law *exact, const double *obs, const double *w,
                             const fit_options *o, fit_result *out) {
    SX_CHECK(fast->n_points == exact->n_points && fast->n_params == exact->n_params, "the fast and exact laws must describe the same data");
    sx_status st = fit_law_run(fast, obs, w, o, out);
    if (st != SX_OK) return st;
    double start[32];
    memcpy(start, out->params, out->n_params * sizeof(double));
    fit_options polish = *o;
    polish.max_iter = o->max_iter < FIT_STAGED_POLISH_ITER ? o->max_iter : FIT_STAGED_POLISH_ITER;
    st = fit_refine(exact, obs, w, &polish, start, out->params, &out->objective);
    if (st != SX_OK) {
        fit_result_free(out);
        return st;
    }
    fit_evaluate(exact, out->params, obs, w, o, NULL, &out->mean_abs_rel, &out->max_abs_rel);
    return SX_OK;
}

// ---- bootstrap and backtests ---------------------------------------------------------------------------

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double fit_quantile(double *x, size_t n, double q) {
    qsort(x, n, sizeof(double), cmp_double);
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo + 1 >= n) return x[n - 1];
    if (x[lo] == x[lo + 1] || pos == (double)lo) return x[lo];   // also keeps infinite values out of 0·inf
    return x[lo] + (pos - (double)lo) * (x[lo + 1] - x[lo]);
}

sx_status fit_bootstrap(const fit_law *law, const double *obs, const size_t *group, size_t n_groups,
                        const fit_options *o, size_t n_boot, double level, uint64_t seed, fit_result *r) {
    SX_CHECK(r->params && n_boot > 0 && level > 0 && level < 1, "bootstrap a fitted result with n_boot > 0 and a level in (0, 1)");
    size_t n = law->n_points, np = law->n_params;
    size_t units = group ? n_groups : n;
    double *w = sx_alloc(n * sizeof(double), "fit w"), *cnt = sx_alloc(units * sizeof(double), "fit cnt");
    double *samples = sx_alloc(n_boot * np * sizeof(double), "fit samples"),
           *col = sx_alloc(n_boot * sizeof(double), "fit col");
    double *ci_lo = sx_alloc(np * sizeof(double), "fit ci_lo"), *ci_hi = sx_alloc(np * sizeof(double), "fit ci_hi");
    sx_status st = SX_OK;
    if (!w || !cnt || !samples || !col || !ci_lo || !ci_hi) {
        st = sx_fail(SX_ERR_NOMEM, "%s bootstrap: out of memory", law->name);
        goto done;
    }
    rng_state rng;
    rng_seed(&rng, seed);
    size_t ok = 0;
    for (size_t b = 0; b < n_boot; b++) {
        memset(cnt, 0, units * sizeof(double));
        for (size_t u = 0; u < units; u++) cnt[rng_below(&rng, units)] += 1;
        for (size_t i = 0; i < n; i++) {
            SX_CHECK(!group || group[i] < n_groups, "group ids must be below n_groups");
            w[i] = cnt[group ? group[i] : i];
        }
        double obj;
        sx_status rst = fit_refine(law, obs, w, o, r->params, samples + ok * np, &obj);
        if (rst == SX_ERR_NOMEM) { st = rst; goto done; }   // a resample the law cannot fit is left out; this ends it
        ok += rst == SX_OK;
    }
    if (ok < 2) {
        st = sx_fail(SX_ERR_NUMERIC, "%s bootstrap: fewer than 2 resamples could be fitted", law->name);
        goto done;
    }
    for (size_t j = 0; j < np; j++) {
        for (size_t b = 0; b < ok; b++) col[b] = samples[b * np + j];
        ci_lo[j] = fit_quantile(col, ok, 0.5 * (1 - level));
        ci_hi[j] = fit_quantile(col, ok, 1 - 0.5 * (1 - level));
    }
    free(r->ci_lo);
    free(r->ci_hi);
    r->ci_lo = ci_lo;
    r->ci_hi = ci_hi;
    ci_lo = ci_hi = NULL;
    r->n_boot = ok;
    r->ci_level = level;
    r->boot_by_group = group != NULL;
done:
    free(w);
    free(cnt);
    free(samples);
    free(col);
    free(ci_lo);
    free(ci_hi);
    return st;
}

sx_status fit_backtest(const fit_law *law, const double *obs, const size_t *group, size_t n_groups,
                       const fit_options *o, int full_search, fit_result *r) {
    SX_CHECK(r->params && group && n_groups >= 2, "a backtest needs a fitted result and at least 2 groups");
    size_t n = law->n_points, np = law->n_params;
    double *w = sx_alloc(n * sizeof(double), "fit w"), *pred = sx_alloc(n * sizeof(double), "fit pred");
    double *bt_mean = sx_calloc_n(n_groups, sizeof(double), "fit bt_mean"),
           *bt_max = sx_calloc_n(n_groups, sizeof(double), "fit bt_max");
    double *params = sx_alloc(np * sizeof(double), "fit params");
    sx_status st = SX_OK;
    if (!w || !pred || !bt_mean || !bt_max || !params) {
        st = sx_fail(SX_ERR_NOMEM, "%s backtest: out of memory", law->name);
        goto done;
    }
    double sum_all = 0, max_all = 0;
    size_t cnt_all = 0;
    for (size_t g = 0; g < n_groups; g++) {
        for (size_t i = 0; i < n; i++) w[i] = group[i] != g;
        if (full_search) {
            fit_result fr;
            st = fit_law_run(law, obs, w, o, &fr);
            if (st != SX_OK) goto done;
            memcpy(params, fr.params, np * sizeof(double));
            fit_result_free(&fr);
        } else {
            double obj;
            st = fit_refine(law, obs, w, o, r->params, params, &obj);
            if (st != SX_OK) goto done;
        }
        law->eval(law->ctx, params, pred, NULL);
        size_t cnt = 0;
        for (size_t i = 0; i < n; i++) {
            if (group[i] != g) continue;
            double e = fabs(pred[i] / obs[i] - 1);
            if (!isfinite(e)) e = INFINITY;
            bt_mean[g] += e;
            if (e > bt_max[g]) bt_max[g] = e;
            cnt++;
        }
        sum_all += bt_mean[g];
        cnt_all += cnt;
        bt_mean[g] = cnt ? bt_mean[g] / (double)cnt : NAN;
        if (bt_max[g] > max_all) max_all = bt_max[g];
    }
    free(r->bt_mean_abs_rel);
    free(r->bt_max_abs_rel);
    r->bt_mean_abs_rel = bt_mean;
    r->bt_max_abs_rel = bt_max;
    bt_mean = bt_max = NULL;
    r->n_groups = n_groups;
    r->bt_mean = cnt_all ? sum_all / (double)cnt_all : NAN;
    r->bt_max = max_all;
done:
    free(w);
    free(pred);
    free(bt_mean);
    free(bt_max);
    free(params);
    return st;
}

// ---- per-fraction and cross-rung fits ------------------------------------------------------------------

sx_status fit_per_fraction(const double *x, const double *loss, size_t n_rungs, size_t n_fracs,
                           const fit_options *o, fit_result *out) {
    double *y = sx_alloc((n_rungs ? n_rungs : 1) * sizeof(double), "fit y");
    if (!y) return sx_fail(SX_ERR_NOMEM, "per-fraction fit: out of memory");
    memset(out, 0, n_fracs * sizeof *out);
    sx_status st = SX_OK;
    for (size_t f = 0; f < n_fracs && st == SX_OK; f++) {
        fit_law law;
        for (size_t r = 0; r < n_rungs; r++) y[r] = loss[r * n_fracs + f];
        st = law_power_bind(x, n_rungs, &law);
        if (st == SX_OK) st = fit_law_run(&law, y, NULL, o, &out[f]);
        fit_law_free(&law);
    }
    free(y);
    if (st != SX_OK)
        for (size_t f = 0; f < n_fracs; f++) fit_result_free(&out[f]);
    return st;
}

sx_status fit_scale_dependence(const double *x, const double *rung_params, size_t n_rungs, size_t n_params,
                               const int *vary, fit_scale *out) {
    memset(out, 0, sizeof *out);
    if (n_rungs < 2) return sx_fail(SX_ERR_ARG, "scale dependence needs at least 2 rungs, got %zu", n_rungs);
    out->n_params = n_params;
    out->coef = sx_alloc(n_params * sizeof(double), "fit out.coef");
    out->expo = sx_alloc(n_params * sizeof(double), "fit out.expo");
    out->rmse_log = sx_alloc(n_params * sizeof(double), "fit out.rmse_log");
    double *lx = sx_alloc(n_rungs * sizeof(double), "fit lx"), *lp = sx_alloc(n_rungs * sizeof(double), "fit lp");
    sx_status st = SX_OK;
    if (!out->coef || !out->expo || !out->rmse_log || !lx || !lp) {
        st = sx_fail(SX_ERR_NOMEM, "scale dependence: out of memory");
        goto done;
    }
    for (size_t r = 0; r < n_rungs; r++) {
        if (!(x[r] > 0)) {
            st = sx_fail(SX_ERR_ARG, "scale dependence: rung %zu has non-positive scale", r);
            goto done;
        }
        lx[r] = log(x[r]);
    }
    for (size_t j = 0; j < n_params; j++) {
        double mean = 0;
        for (size_t r = 0; r < n_rungs; r++) {
            double v = rung_params[r * n_params + j];
            if (!(v > 0)) {
                st = sx_fail(SX_ERR_ARG, "scale dependence: parameter %zu of rung %zu is not positive", j, r);
                goto done;
            }
            lp[r] = log(v);
            mean += lp[r] / (double)n_rungs;
        }
        double c0 = mean, c1 = 0, cov00, cov01, cov11, sumsq = 0;
        if (vary[j]) gsl_fit_linear(lx, 1, lp, 1, n_rungs, &c0, &c1, &cov00, &cov01, &cov11, &sumsq);
        else
            for (size_t r = 0; r < n_rungs; r++) sumsq += (lp[r] - mean) * (lp[r] - mean);
        out->coef[j] = exp(c0);
        out->expo[j] = c1;
        out->rmse_log[j] = vary[j] ? sqrt(sumsq / (double)n_rungs) : 0;
    }
done:
    free(lx);
    free(lp);
    if (st != SX_OK) fit_scale_free(out);
    return st;
}

void fit_scale_predict(const fit_scale *s, double x, double *params) {
    for (size_t j = 0; j < s->n_params; j++) params[j] = s->coef[j] * pow(x, s->expo[j]);
}

void fit_scale_free(fit_scale *s) {
    free(s->coef);
    free(s->expo);
    free(s->rmse_log);
    memset(s, 0, sizeof *s);
}

// ---- JSON ----------------------------------------------------------------------------------------------

json_t *fit_result_to_json(const char *name, const fit_law *law, const fit_result *r) {
    json_t *o = json_object(), *params = json_object();
    if (!o || !params) goto fail;
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "law", json_string(law->name));
    for (size_t j = 0; j < r->n_params; j++) json_object_set_new(params, law->params[j].name, json_real(r->params[j]));
    json_object_set_new(o, "params", params);
    params = NULL;
    if (r->n_boot > 0) {
        json_t *ci = json_object();
        if (!ci) goto fail;
        for (size_t j = 0; j < r->n_params; j++)
            json_object_set_new(ci, law->params[j].name, json_pack("[ff]", r->ci_lo[j], r->ci_hi[j]));
        json_object_set_new(o, "ci", ci);
        json_object_set_new(o, "ci_level", json_real(r->ci_level));
        json_object_set_new(o, "n_boot", json_integer((json_int_t)r->n_boot));
        json_object_set_new(o, "boot_unit", json_string(r->boot_by_group ? "group" : "point"));
    }
    json_object_set_new(o, "objective", json_real(r->objective));
    json_object_set_new(o, "n_points", json_integer((json_int_t)r->n_points));
    json_object_set_new(o, "mean_abs_rel_err", json_real(r->mean_abs_rel));
    json_object_set_new(o, "max_abs_rel_err", json_real(r->max_abs_rel));
    if (r->n_groups > 0) {
        json_t *bt = json_object(), *groups = json_array();
        if (!bt || !groups) {
            json_decref(bt);
            json_decref(groups);
            goto fail;
        }
        for (size_t g = 0; g < r->n_groups; g++)
            json_array_append_new(groups, json_pack("{sfsf}", "mean_abs_rel_err", r->bt_mean_abs_rel[g],
                                                    "max_abs_rel_err", r->bt_max_abs_rel[g]));
        json_object_set_new(bt, "groups", groups);
        json_object_set_new(bt, "mean_abs_rel_err", json_real(r->bt_mean));
        json_object_set_new(bt, "max_abs_rel_err", json_real(r->bt_max));
        json_object_set_new(o, "backtest", bt);
    }
    return o;
fail:
    json_decref(o);
    json_decref(params);
    return NULL;
}

json_t *fit_scale_to_json(const fit_law *law, const fit_scale *s, const char *x_name) {
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "law", json_string(law->name));
    json_object_set_new(o, "x", json_string(x_name));
    json_t *params = json_object();
    for (size_t j = 0; j < s->n_params; j++)
        json_object_set_new(params, law->params[j].name,
                            json_pack("{sfsfsf}", "coef", s->coef[j], "expo", s->expo[j], "rmse_log",
                                      s->rmse_log[j]));
    json_object_set_new(o, "params", params);
    return o;
}
