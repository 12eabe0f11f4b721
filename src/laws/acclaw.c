// acclaw: accuracy-vs-task-loss laws (sigmoid, exponential), their choice, flatness test, bootstrap and
// forecast band. See acclaw.h.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include "core/rng.h"
#include "core/status.h"
#include "laws/acclaw.h"
#include "laws/fit.h"

#define ACCLAW_MAX_ITER 200
#define ACCLAW_PREDICT_DRAWS 4000
#define ACCLAW_CEILING_LEVEL 0.9   // a flat task this accurate is saturated, not at chance
// Chi-square quantiles at 99.9% for 2 and 3 degrees of freedom: a law must beat the constant by this much
// (in units of its own scatter) to count as signal rather than a fit through noise.
static const double chi2_q999[4] = {0, 10.83, 13.82, 16.27};

static const char *const form_names[ACCLAW_N_FORMS] = {"sigmoid", "exp"};
static const char *const param_names[ACCLAW_N_FORMS][ACCLAW_MAX_PARAMS] = {{"floor", "ceil", "k", "L0"},
                                                                           {"e", "k", "g", NULL}};
static const char *const status_names[] = {"informative", "chance", "ceiling"};

size_t acclaw_n_params(acclaw_form f) { return f == ACCLAW_SIGMOID ? 4 : 3; }
const char *acclaw_form_name(acclaw_form f) { return form_names[f]; }
const char *acclaw_param_name(acclaw_form f, size_t j) { return param_names[f][j]; }
const char *acclaw_status_name(acclaw_status s) { return status_names[s]; }

double acclaw_eval(acclaw_form f, const double *p, double loss) {
    if (f == ACCLAW_SIGMOID) return p[0] + (p[1] - p[0]) / (1 + exp(p[2] * (loss - p[3])));
    return 1 - p[0] + p[1] * exp(-p[2] * loss);
}

// ---- the optimiser works on unconstrained coordinates: floor, ceil and e through a logistic, k and g in logs

static double logistic(double x) { return 1 / (1 + exp(-x)); }
static double logit(double p) { p = fmin(fmax(p, 1e-6), 1 - 1e-6); return log(p / (1 - p)); }

static void natural_of(acclaw_form f, const double *x, double *p) {
    if (f == ACCLAW_SIGMOID) {
        p[0] = logistic(x[0]);
        p[1] = p[0] + (1 - p[0]) * logistic(x[1]);
        p[2] = exp(x[2]);
        p[3] = x[3];
    } else {
        p[0] = logistic(x[0]);
        p[1] = exp(x[1]);
        p[2] = exp(x[2]);
    }
}

static void coords_of(acclaw_form f, const double *p, double *x) {
    if (f == ACCLAW_SIGMOID) {
        x[0] = logit(p[0]);
        x[1] = logit((p[1] - p[0]) / fmax(1 - p[0], 1e-9));
        x[2] = log(p[2]);
        x[3] = p[3];
    } else {
        x[0] = logit(p[0]);
        x[1] = log(p[1]);
        x[2] = log(p[2]);
    }
}

// Weight of a point: the inverse binomial variance of its accuracy (a Laplace estimate of p, so that 0% and
// 100% keep a finite weight); 1 when its item count is unknown.
static double weight_of(const acclaw_data *d, size_t i) {
    double n = d->items ? d->items[i] : 0;
    if (!(n > 0)) return 1;
    double p = (d->acc[i] * n + 1) / (n + 2);
    return n / (p * (1 - p));
}

static int items_known(const acclaw_data *d) {
    if (!d->items) return 0;
    for (size_t i = 0; i < d->n; i++)
        if (!(d->items[i] > 0)) return 0;
    return 1;
}

typedef struct {
    const acclaw_data *d;
    const unsigned char *use;   // NULL: every point
    acclaw_form form;
} lm_ctx;

static int lm_f(const gsl_vector *x, void *vc, gsl_vector *r) {
    const lm_ctx *c = vc;
    double p[ACCLAW_MAX_PARAMS];
    natural_of(c->form, x->data, p);
    for (size_t i = 0, k = 0; i < c->d->n; i++) {
        if (c->use && !c->use[i]) continue;
        double v = sqrt(weight_of(c->d, i)) * (acclaw_eval(c->form, p, c->d->loss[i]) - c->d->acc[i]);
        gsl_vector_set(r, k++, isfinite(v) ? v : 1e6);
    }
    return GSL_SUCCESS;
}

static double chi2_of(const acclaw_data *d, const unsigned char *use, acclaw_form f, const double *p) {
    double s = 0;
    for (size_t i = 0; i < d->n; i++) {
        if (use && !use[i]) continue;
        double e = acclaw_eval(f, p, d->loss[i]) - d->acc[i];
        s += weight_of(d, i) * e * e;
    }
    return isfinite(s) ? s : INFINITY;
}

// Levenberg-Marquardt from the natural parameters p0; p overwritten with the result; returns its chi2
// (INFINITY when the solver failed).
static double refine(const acclaw_data *d, const unsigned char *use, size_t n_used, acclaw_form f, const double *p0,
                     double *p) {
    size_t np = acclaw_n_params(f);
    lm_ctx c = {d, use, f};
    gsl_multifit_nlinear_fdf fdf = {.f = lm_f, .df = NULL, .fvv = NULL, .n = n_used, .p = np, .params = &c};
    gsl_multifit_nlinear_parameters prm = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &prm, n_used, np);
    if (!w) return INFINITY;
    double x0[ACCLAW_MAX_PARAMS];
    coords_of(f, p0, x0);
    gsl_vector_view xv = gsl_vector_view_array(x0, np);
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int info;
    double chi2 = INFINITY;
    if (gsl_multifit_nlinear_init(&xv.vector, &fdf, w) == GSL_SUCCESS) {
        gsl_multifit_nlinear_driver(ACCLAW_MAX_ITER, 1e-10, 1e-10, 1e-10, NULL, NULL, &info, w);
        natural_of(f, gsl_multifit_nlinear_position(w)->data, p);
        chi2 = chi2_of(d, use, f, p);
    }
    gsl_set_error_handler(old);
    gsl_multifit_nlinear_free(w);
    return chi2;
}

// Grid of starts over the form's nonlinear parameters, each refined; the lowest chi2 wins.
static double fit_points(const acclaw_data *d, const unsigned char *use, acclaw_form f, double *best) {
    size_t n_used = 0;
    double lmin = INFINITY, lmax = -INFINITY, amin = 1, amax = 0;
    for (size_t i = 0; i < d->n; i++) {
        if (use && !use[i]) continue;
        n_used++;
        lmin = fmin(lmin, d->loss[i]);
        lmax = fmax(lmax, d->loss[i]);
        amin = fmin(amin, d->acc[i]);
        amax = fmax(amax, d->acc[i]);
    }
    if (n_used < acclaw_n_params(f)) return INFINITY;
    double range = fmax(lmax - lmin, 1e-3), best_chi2 = INFINITY, p0[ACCLAW_MAX_PARAMS], p[ACCLAW_MAX_PARAMS];
    if (f == ACCLAW_SIGMOID) {
        const double floors[] = {fmax(amin * 0.5, 1e-3), amin}, ceils[] = {amax, amax + 0.5 * (1 - amax)};
        const double centres[] = {-0.5, 0.2, 0.5, 0.8}, slopes[] = {2, 8};
        for (size_t a = 0; a < 2; a++)
            for (size_t b = 0; b < 2; b++)
                for (size_t c = 0; c < 4; c++)
                    for (size_t s = 0; s < 2; s++) {
                        p0[0] = floors[a];
                        p0[1] = fmax(ceils[b], p0[0] + 1e-3);
                        p0[2] = slopes[s] / range;
                        p0[3] = lmin + centres[c] * range;
                        double chi2 = refine(d, use, n_used, f, p0, p);
                        if (chi2 < best_chi2) { best_chi2 = chi2; memcpy(best, p, sizeof p); }
                    }
    } else {
        const double errs[] = {1 - amin + 0.01 * (1 - amin), 1 - 0.5 * amin, 0.999}, rates[] = {0.5, 2, 8};
        for (size_t a = 0; a < 3; a++)
            for (size_t b = 0; b < 3; b++) {
                p0[0] = fmin(errs[a], 0.999);
                p0[2] = rates[b] / range;
                double sxy = 0, sxx = 0;   // k by least squares given e and g
                for (size_t i = 0; i < d->n; i++) {
                    if (use && !use[i]) continue;
                    double x = exp(-p0[2] * (d->loss[i] - lmin)), y = d->acc[i] - 1 + p0[0], w = weight_of(d, i);
                    sxy += w * x * y;
                    sxx += w * x * x;
                }
                p0[1] = fmax(sxy / sxx, 1e-6) * exp(p0[2] * lmin);
                double chi2 = refine(d, use, n_used, f, p0, p);
                if (chi2 < best_chi2) { best_chi2 = chi2; memcpy(best, p, sizeof p); }
            }
    }
    return best_chi2;
}

static size_t count_groups(const acclaw_data *d) {
    size_t g = 0;
    for (size_t i = 0; i < d->n; i++) {
        size_t gi = d->group ? d->group[i] : i, seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = (d->group ? d->group[j] : j) == gi;
        g += !seen;
    }
    return g;
}

// RMS accuracy error on each group's points from a fit to the other groups.
static double loro(const acclaw_data *d, acclaw_form f) {
    unsigned char *use = sx_alloc(d->n, "acclaw use");
    unsigned char *done = sx_calloc_n(d->n, 1, "acclaw done");
    if (!use || !done) { free(use); free(done); return NAN; }
    double sse = 0;
    size_t cnt = 0;
    for (size_t i = 0; i < d->n && isfinite(sse); i++) {
        if (done[i]) continue;
        size_t gi = d->group ? d->group[i] : i;
        for (size_t j = 0; j < d->n; j++) use[j] = (d->group ? d->group[j] : j) != gi;
        double p[ACCLAW_MAX_PARAMS];
        if (!isfinite(fit_points(d, use, f, p))) { sse = INFINITY; break; }
        for (size_t j = 0; j < d->n; j++) {
            if (use[j]) continue;
            double e = fmin(fmax(acclaw_eval(f, p, d->loss[j]), 0), 1) - d->acc[j];
            sse += e * e;
            cnt++;
            done[j] = 1;
        }
    }
    free(use);
    free(done);
    return cnt ? sqrt(sse / (double)cnt) : NAN;
}

static sx_status check_data(const acclaw_data *d) {
    for (size_t i = 0; i < d->n; i++)
        if (!isfinite(d->loss[i]) || !(d->acc[i] >= 0 && d->acc[i] <= 1) || (d->items && !(d->items[i] >= 0)))
            return sx_fail(SX_ERR_ARG, "accuracy law: point %zu (loss %g, accuracy %g) is out of range", i, d->loss[i],
                           d->acc[i]);
    return SX_OK;
}

sx_status acclaw_fit_form(const acclaw_data *d, acclaw_form form, acclaw_fit *out) {
    memset(out, 0, sizeof *out);
    out->form = form;
    sx_status st = check_data(d);
    if (st) return st;
    size_t np = acclaw_n_params(form);
    if (d->n < np + 1)
        return sx_fail(SX_ERR_ARG, "accuracy law (%s): %zu points for %zu parameters", form_names[form], d->n, np);
    out->chi2 = fit_points(d, NULL, form, out->p);
    if (!isfinite(out->chi2)) return sx_fail(SX_ERR_NUMERIC, "accuracy law (%s): no start converged", form_names[form]);
    out->dispersion = out->chi2 / (double)(d->n - np);
    if (items_known(d)) out->dispersion = fmax(out->dispersion, 1);
    out->loro_rmse = count_groups(d) >= 3 ? loro(d, form) : NAN;
    return SX_OK;
}

void acclaw_model_free(acclaw_model *m) {
    free(m->boot);
    memset(m, 0, sizeof *m);
}

// Refits of the chosen form on accuracies redrawn around it: each point's binomial variance scaled by the
// dispersion (or, with unknown item counts, the residual variance).
static sx_status bootstrap(const acclaw_data *d, acclaw_model *m, size_t n_boot, uint64_t seed) {
    const acclaw_fit *b = &m->forms[m->chosen];
    double *acc = sx_alloc(d->n * sizeof *acc, "acclaw acc"), *pred = sx_alloc(d->n * sizeof *pred, "acclaw pred");
    m->boot = sx_calloc_n(n_boot ? n_boot * ACCLAW_MAX_PARAMS : 1, sizeof *m->boot, "acclaw boot");
    if (!acc || !pred || !m->boot) { free(acc); free(pred); return sx_fail(SX_ERR_NOMEM, "accuracy law: out of memory"); }
    acclaw_data bd = *d;
    bd.acc = acc;
    rng_state rng;
    rng_seed(&rng, seed);
    for (size_t i = 0; i < d->n; i++) pred[i] = fmin(fmax(acclaw_eval(b->form, b->p, d->loss[i]), 0), 1);
    m->n_boot = 0;
    for (size_t k = 0; k < n_boot; k++) {
        for (size_t i = 0; i < d->n; i++) {
            double sd = sqrt(b->dispersion / weight_of(d, i));
            acc[i] = fmin(fmax(pred[i] + sd * rng_normal(&rng), 0), 1);
        }
        double *p = m->boot + m->n_boot * ACCLAW_MAX_PARAMS;
        if (isfinite(refine(&bd, NULL, d->n, b->form, b->p, p))) m->n_boot++;
    }
    free(acc);
    free(pred);
    return SX_OK;
}

static sx_status model_fit(const acclaw_data *d, int only, size_t n_boot, uint64_t seed, acclaw_model *m) {
    memset(m, 0, sizeof *m);
    sx_status st = check_data(d);
    if (st) return st;
    m->n_points = d->n;
    m->n_groups = count_groups(d);
    const long failures = sx_alloc_failures();   // those of the held-out errors and point fits, which give NaN
    for (int f = 0; f < ACCLAW_N_FORMS; f++) {
        if (only >= 0 && f != only) continue;
        sx_status fst = acclaw_fit_form(d, (acclaw_form)f, &m->forms[f]);
        if (fst == SX_ERR_NOMEM) return fst;   // a form the data cannot fit is left out; this ends it
        m->ok[f] = fst == SX_OK;
    }
    if ((st = sx_alloc_check(failures))) return st;
    if (!m->ok[0] && !m->ok[1]) return sx_fail(SX_ERR_NUMERIC, "accuracy law: no form could be fitted (%s)", sx_last_error());
    // The choice: held-out error where there are groups to hold out, else the in-sample chi2 plus 2 per parameter.
    double score[ACCLAW_N_FORMS];
    for (int f = 0; f < ACCLAW_N_FORMS; f++) {
        const acclaw_fit *a = &m->forms[f];
        score[f] = !m->ok[f] ? INFINITY : isfinite(a->loro_rmse) ? a->loro_rmse
                                                                  : a->chi2 / a->dispersion + 2 * (double)acclaw_n_params(a->form);
    }
    m->chosen = score[ACCLAW_EXP] < score[ACCLAW_SIGMOID] ? ACCLAW_EXP : ACCLAW_SIGMOID;
    if (!m->ok[m->chosen]) m->chosen = (acclaw_form)!m->chosen;
    const acclaw_fit *b = &m->forms[m->chosen];
    double sw = 0, swa = 0, mean_var = 0;
    m->min_acc = 1;
    m->loss_lo = INFINITY;
    m->loss_hi = -INFINITY;
    for (size_t i = 0; i < d->n; i++) {
        double w = weight_of(d, i);
        sw += w;
        swa += w * d->acc[i];
        mean_var += b->dispersion / w / (double)d->n;
        m->min_acc = fmin(m->min_acc, d->acc[i]);
        m->loss_lo = fmin(m->loss_lo, d->loss[i]);
        m->loss_hi = fmax(m->loss_hi, d->loss[i]);
    }
    m->level = swa / sw;
    for (size_t i = 0; i < d->n; i++) m->chi2_const += weight_of(d, i) * (d->acc[i] - m->level) * (d->acc[i] - m->level);
    m->model_sd = isfinite(b->loro_rmse) ? sqrt(fmax(0, b->loro_rmse * b->loro_rmse - mean_var)) : 0;
    size_t extra = acclaw_n_params(b->form) - 1;
    double gain = (m->chi2_const - b->chi2) / b->dispersion;
    m->status = gain > chi2_q999[extra] ? ACCLAW_INFORMATIVE : m->level >= ACCLAW_CEILING_LEVEL ? ACCLAW_CEILING : ACCLAW_CHANCE;
    return bootstrap(d, m, n_boot, seed);
}

sx_status acclaw_model_fit(const acclaw_data *d, size_t n_boot, uint64_t seed, acclaw_model *m) {
    return model_fit(d, -1, n_boot, seed, m);
}

sx_status acclaw_model_fit_form(const acclaw_data *d, acclaw_form form, size_t n_boot, uint64_t seed, acclaw_model *m) {
    return model_fit(d, (int)form, n_boot, seed, m);
}

void acclaw_predict(const acclaw_model *m, double loss, double loss_sd_rel, double items, uint64_t seed, double *acc,
                    double *lo, double *hi) {
    const acclaw_fit *b = &m->forms[m->chosen];
    if (m->status != ACCLAW_INFORMATIVE) {
        double se = items > 0 ? sqrt(m->level * (1 - m->level) / items) : 0;
        *acc = m->level;
        *lo = fmax(0, (m->status == ACCLAW_CEILING ? m->min_acc : m->level) - 2 * se);
        *hi = 1;
        return;
    }
    *acc = fmin(fmax(acclaw_eval(b->form, b->p, loss), 0), 1);
    double draws[ACCLAW_PREDICT_DRAWS];   // 32 KB on the stack: a prediction that cannot fail (it returns no status)
    rng_state rng;
    rng_seed(&rng, seed);
    for (size_t s = 0; s < ACCLAW_PREDICT_DRAWS; s++) {
        const double *p = m->n_boot ? m->boot + (s % m->n_boot) * ACCLAW_MAX_PARAMS : b->p;
        double l = loss * (1 + loss_sd_rel * rng_normal(&rng));
        double a = fmin(fmax(acclaw_eval(b->form, p, l) + m->model_sd * rng_normal(&rng), 0), 1);
        if (items > 0) a = fmin(fmax(a + sqrt(a * (1 - a) / items) * rng_normal(&rng), 0), 1);
        draws[s] = a;
    }
    *lo = fit_quantile(draws, ACCLAW_PREDICT_DRAWS, 0.025);
    *hi = fit_quantile(draws, ACCLAW_PREDICT_DRAWS, 0.975);
}

// ---- JSON ----

static json_t *params_json(acclaw_form f, const double *p) {
    json_t *o = json_object();
    for (size_t j = 0; j < acclaw_n_params(f); j++) json_object_set_new(o, param_names[f][j], json_real(p[j]));
    return o;
}

json_t *acclaw_model_to_json(const acclaw_model *m) {
    const acclaw_fit *b = &m->forms[m->chosen];
    json_t *forms = json_object(), *boot = json_array();
    for (int f = 0; f < ACCLAW_N_FORMS; f++) {
        if (!m->ok[f]) continue;
        const acclaw_fit *a = &m->forms[f];
        json_object_set_new(forms, form_names[f],
                            json_pack("{s:o, s:f, s:f, s:o}", "params", params_json(a->form, a->p), "chi2", a->chi2,
                                      "dispersion", a->dispersion, "loro_rmse",
                                      isfinite(a->loro_rmse) ? json_real(a->loro_rmse) : json_null()));
    }
    for (size_t k = 0; k < m->n_boot; k++) {
        json_t *row = json_array();
        for (size_t j = 0; j < acclaw_n_params(b->form); j++) json_array_append_new(row, json_real(m->boot[k * ACCLAW_MAX_PARAMS + j]));
        json_array_append_new(boot, row);
    }
    return json_pack("{s:s, s:s, s:o, s:o, s:f, s:f, s:f, s:f, s:[f, f], s:I, s:I, s:o}", "status", status_names[m->status],
                     "form", form_names[b->form], "params", params_json(b->form, b->p), "forms", forms, "level", m->level,
                     "min_acc", m->min_acc, "chi2_const", m->chi2_const, "model_sd", m->model_sd, "loss_range", m->loss_lo,
                     m->loss_hi, "points", (json_int_t)m->n_points, "groups", (json_int_t)m->n_groups, "boot", boot);
}

sx_status acclaw_model_from_json(json_t *j, acclaw_model *m) {
    memset(m, 0, sizeof *m);
    const char *form = json_string_value(json_object_get(j, "form")), *status = json_string_value(json_object_get(j, "status"));
    int f = form && !strcmp(form, "exp") ? ACCLAW_EXP : form && !strcmp(form, "sigmoid") ? ACCLAW_SIGMOID : -1;
    int s = -1;
    for (int k = 0; k < 3 && status; k++)
        if (!strcmp(status, status_names[k])) s = k;
    if (f < 0 || s < 0) return sx_fail(SX_ERR_FORMAT, "accuracy law: unknown form or status");
    m->chosen = (acclaw_form)f;
    m->status = (acclaw_status)s;
    m->ok[f] = 1;
    acclaw_fit *b = &m->forms[f];
    b->form = (acclaw_form)f;
    size_t np = acclaw_n_params(b->form);
    json_t *p = json_object_get(j, "params"), *boot = json_object_get(j, "boot");
    for (size_t k = 0; k < np; k++) {
        json_t *v = json_object_get(p, param_names[f][k]);
        if (!json_is_number(v)) return sx_fail(SX_ERR_FORMAT, "accuracy law: parameter %s missing", param_names[f][k]);
        b->p[k] = json_number_value(v);
    }
    m->level = json_number_value(json_object_get(j, "level"));
    m->min_acc = json_number_value(json_object_get(j, "min_acc"));
    m->model_sd = json_number_value(json_object_get(j, "model_sd"));
    m->boot = sx_calloc_n(json_array_size(boot) * ACCLAW_MAX_PARAMS + 1, sizeof *m->boot, "acclaw boot");
    if (!m->boot) return sx_fail(SX_ERR_NOMEM, "accuracy law: out of memory");
    for (size_t k = 0; k < json_array_size(boot); k++) {
        json_t *row = json_array_get(boot, k);
        if (json_array_size(row) != np) { acclaw_model_free(m); return sx_fail(SX_ERR_FORMAT, "accuracy law: bootstrap row %zu malformed", k); }
        for (size_t q = 0; q < np; q++) m->boot[k * ACCLAW_MAX_PARAMS + q] = json_number_value(json_array_get(row, q));
    }
    m->n_boot = json_array_size(boot);
    return SX_OK;
}
