// accchain: loss law L(N, D) -> error-vs-loss law, the pair chosen by leave-one-size-out. See accchain.h.
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "core/status.h"
#include "laws/accchain.h"
#include "laws/fit.h"

static const char *const loss_names[ACCCHAIN_N_LOSS] = {"nd", "nd1"};

const char *accchain_loss_name(accchain_loss_form f) { return loss_names[f]; }

double accchain_loss_eval(accchain_loss_form f, const double *p, double params, double tokens) {
    return f == ACCCHAIN_LOSS_ND ? law_nd_eval(p, params, tokens) : law_nd1_eval(p, params, tokens);
}

sx_status accchain_fit_loss(accchain_loss_form f, const double *params, const double *tokens, const double *loss,
                            size_t n, int least_squares, double *p) {
    fit_law law;
    sx_status st = f == ACCCHAIN_LOSS_ND ? law_nd_bind(params, tokens, n, &law) : law_nd1_bind(params, tokens, n, &law);
    if (st) return st;
    fit_options o;
    fit_options_default(&o);
    double *w = least_squares ? sx_alloc(n * sizeof *w, "accchain w") : NULL;
    if (least_squares && !w) { fit_law_free(&law); return SX_ERR_NOMEM; }
    if (least_squares) {
        o.huber_delta = 1e9;   // Huber with an unreachable delta is the plain square
        for (size_t i = 0; i < n; i++) w[i] = loss[i] * loss[i];
    }
    fit_result r;
    if (!(st = fit_law_run(&law, loss, w, &o, &r))) {
        memcpy(p, r.params, law.n_params * sizeof *p);
        fit_result_free(&r);
    }
    free(w);
    fit_law_free(&law);
    return st;
}

// Both laws of a pair on the runs with use[i] (NULL: all). The error law is fitted without its own
// leave-one-out (one group for all), which only the choice here needs.
static sx_status fit_pair(const accchain_data *d, const unsigned char *use, accchain_loss_form lf, acclaw_form af,
                          double *scratch, double *loss_p, double *acc_p) {
    double *N = scratch, *D = N + d->n, *L = D + d->n, *A = L + d->n;
    size_t *one = (size_t *)(A + d->n), k = 0;
    for (size_t i = 0; i < d->n; i++) {
        if (use && !use[i]) continue;
        N[k] = d->params[i];
        D[k] = d->tokens[i];
        L[k] = d->loss[i];
        A[k] = d->acc[i];
        one[k++] = 0;
    }
    sx_status st = accchain_fit_loss(lf, N, D, L, k, 0, loss_p);
    if (st) return st;
    acclaw_data ad = {.n = k, .loss = L, .acc = A, .items = NULL, .group = one};
    acclaw_fit fit;
    if ((st = acclaw_fit_form(&ad, af, &fit))) return st;
    memcpy(acc_p, fit.p, sizeof fit.p);
    return SX_OK;
}

// Leave-one-group-out RMS relative errors of the chained error and of the loss for one pair.
static void cross_validate(const accchain_data *d, size_t n_groups, accchain_loss_form lf, acclaw_form af,
                           unsigned char *use, double *scratch, double *cv_err, double *cv_loss) {
    double se = 0, sl = 0;
    for (size_t g = 0; g < n_groups; g++) {
        for (size_t i = 0; i < d->n; i++) use[i] = d->group[i] != g;
        double lp[LAW_ND_NPARAM], ap[ACCLAW_MAX_PARAMS];
        if (fit_pair(d, use, lf, af, scratch, lp, ap)) { *cv_err = *cv_loss = INFINITY; return; }
        for (size_t i = 0; i < d->n; i++) {
            if (use[i]) continue;
            double l = accchain_loss_eval(lf, lp, d->params[i], d->tokens[i]);
            double re = (1 - acclaw_eval(af, ap, l)) / (1 - d->acc[i]) - 1, rl = l / d->loss[i] - 1;
            se += re * re;
            sl += rl * rl;
        }
    }
    *cv_err = isfinite(se) ? sqrt(se / (double)d->n) : INFINITY;
    *cv_loss = isfinite(sl) ? sqrt(sl / (double)d->n) : INFINITY;
}

sx_status accchain_fit(const accchain_data *d, accchain_model *m) {
    memset(m, 0, sizeof *m);
    for (size_t i = 0; i < d->n; i++) {
        if (!(d->params[i] > 0 && d->tokens[i] > 0 && d->loss[i] > 0 && d->acc[i] >= 0 && d->acc[i] < 1))
            return sx_fail(SX_ERR_ARG, "chained law: run %zu (N %g, D %g, loss %g, accuracy %g) is out of range", i,
                           d->params[i], d->tokens[i], d->loss[i], d->acc[i]);
        if (d->group[i] + 1 > m->n_groups) m->n_groups = d->group[i] + 1;
    }
    if (m->n_groups < 3 || d->n < 2 * LAW_ND_NPARAM)
        return sx_fail(SX_ERR_ARG, "chained law: %zu runs in %zu sizes (at least 3 sizes and %d runs)", d->n,
                       m->n_groups, 2 * LAW_ND_NPARAM);
    unsigned char *use = sx_alloc(d->n, "accchain use");
    double *scratch = sx_alloc(d->n * (4 * sizeof(double) + sizeof(size_t)), "accchain scratch");
    if (!use || !scratch) { free(use); free(scratch); return SX_ERR_NOMEM; }
    double best = INFINITY;
    for (int lf = 0; lf < ACCCHAIN_N_LOSS; lf++)
        for (int af = 0; af < ACCLAW_N_FORMS; af++) {
            cross_validate(d, m->n_groups, (accchain_loss_form)lf, (acclaw_form)af, use, scratch, &m->cv_err[lf][af],
                           &m->cv_loss[lf]);
            if (m->cv_err[lf][af] < best) {
                best = m->cv_err[lf][af];
                m->loss_form = (accchain_loss_form)lf;
                m->acc_form = (acclaw_form)af;
            }
        }
    sx_status st = isfinite(best) ? fit_pair(d, NULL, m->loss_form, m->acc_form, scratch, m->loss_p, m->acc_p)
                                  : sx_fail(SX_ERR_NUMERIC, "chained law: no pair of forms fitted in every fold");
    free(use);
    free(scratch);
    return st;
}

void accchain_predict(const accchain_model *m, double params, double tokens, double *loss, double *acc) {
    *loss = accchain_loss_eval(m->loss_form, m->loss_p, params, tokens);
    *acc = acclaw_eval(m->acc_form, m->acc_p, *loss);
}

static json_t *array_of(const double *p, size_t n) {
    json_t *a = json_array();
    for (size_t j = 0; j < n; j++) json_array_append_new(a, json_real(p[j]));
    return a;
}

static json_t *number_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

json_t *accchain_model_to_json(const accchain_model *m) {
    json_t *cv = json_object(), *cv_loss = json_object();
    for (int lf = 0; lf < ACCCHAIN_N_LOSS; lf++) {
        json_object_set_new(cv_loss, loss_names[lf], number_or_null(m->cv_loss[lf]));
        for (int af = 0; af < ACCLAW_N_FORMS; af++) {
            char key[32];
            snprintf(key, sizeof key, "%s/%s", loss_names[lf], acclaw_form_name((acclaw_form)af));
            json_object_set_new(cv, key, number_or_null(m->cv_err[lf][af]));
        }
    }
    size_t nl = m->loss_form == ACCCHAIN_LOSS_ND ? LAW_ND_NPARAM : LAW_ND1_NPARAM;
    return json_pack("{s:s, s:o, s:s, s:o, s:o, s:o}", "loss_form", loss_names[m->loss_form], "loss_params",
                     array_of(m->loss_p, nl), "acc_form", acclaw_form_name(m->acc_form), "acc_params",
                     array_of(m->acc_p, acclaw_n_params(m->acc_form)), "cv", cv, "cv_loss", cv_loss);
}
