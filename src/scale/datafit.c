// datafit: fitting and applying the data-constrained law (see datafit.h).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "scale/datafit.h"
#include "scale/datalaw.h"
#include "scale/fit.h"
#include "scale/rundir.h"

#define DATAFIT_MIN_RUNS 12
#define DATAFIT_MIN_REPEATING 3

typedef struct {
    double *N, *D, *U, *L;
    size_t n, cap, repeating;
    double max_passes;
} points;

static sx_status add_point(points *p, double N, double D, double U, double L) {
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        double *a[4] = {realloc(p->N, p->cap * sizeof(double)), NULL, NULL, NULL};
        if (a[0]) p->N = a[0];
        a[1] = realloc(p->D, p->cap * sizeof(double));
        if (a[1]) p->D = a[1];
        a[2] = realloc(p->U, p->cap * sizeof(double));
        if (a[2]) p->U = a[2];
        a[3] = realloc(p->L, p->cap * sizeof(double));
        if (a[3]) p->L = a[3];
        if (!a[0] || !a[1] || !a[2] || !a[3]) return sx_fail(SX_ERR_NOMEM, "out of memory");
    }
    p->N[p->n] = N;
    p->D[p->n] = D;
    p->U[p->n] = U;
    p->L[p->n] = L;
    p->n++;
    if (U > 0 && D > U) {
        p->repeating++;
        p->max_passes = fmax(p->max_passes, D / U);
    }
    return SX_OK;
}

// The final evaluation of every finished run of one ladder.
static sx_status collect(const ladder_spec *spec, const char *dir, points *p) {
    ladder_run *plan = NULL;
    size_t n = 0;
    sx_status st = ladder_plan(spec, &plan, &n);
    for (size_t i = 0; i < n && !st; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, plan[i].dir);
        rundir_run r;
        if (rundir_read_set(path, spec->val_set, &r) == SX_OK && r.done && r.n_evals > 0) {
            const rundir_eval *e = &r.evals[r.n_evals - 1];
            json_t *u = json_object_get(r.config, "unique_tokens");
            if (e->step == r.n_steps && r.n_params_nonembed > 0 && e->tokens > 0)
                st = add_point(p, (double)r.n_params_nonembed, e->tokens, json_is_number(u) ? json_number_value(u) : 0,
                               e->val_loss);
        }
        rundir_free(&r);
    }
    free(plan);
    return st;
}

sx_status datafit_ladders(const ladder_spec *specs, const char *const *dirs, size_t n, json_t **out) {
    points p = {0};
    sx_status st = SX_OK;
    *out = NULL;
    for (size_t i = 0; i < n && !st; i++) st = collect(&specs[i], dirs[i], &p);
    if (!st && (p.n < DATAFIT_MIN_RUNS || p.repeating < DATAFIT_MIN_REPEATING))
        st = sx_fail(SX_ERR_ARG, "the data-constrained law needs at least %d finished runs, %d of them repeating data "
                     "(a ladder with the key unique_tokens); found %zu runs, %zu repeating", DATAFIT_MIN_RUNS,
                     DATAFIT_MIN_REPEATING, p.n, p.repeating);
    fit_law law = {0};
    fit_result res = {0};
    fit_options o;
    fit_options_default(&o);
    if (!st) st = law_dc_bind(p.N, p.D, p.U, p.n, &law);
    if (!st) st = fit_law_run(&law, p.L, NULL, &o, &res);
    // A degenerate fit (the runs show no data effect the law can resolve: Rstar or beta driven to zero, a
    // term to its floor) would forecast nonsense: refuse it.
    if (!st && !(res.params[LAW_DC_RSTAR] > 1e-3 && res.params[LAW_DC_RSTAR] < 1e4 && res.params[LAW_DC_BETA] > 1e-3 &&
                  res.params[LAW_DC_BETA] < 3 && res.params[LAW_DC_ALPHA] > 1e-3 && res.params[LAW_DC_ALPHA] < 3))
        st = sx_fail(SX_ERR_NUMERIC, "the data-constrained fit is degenerate (alpha %.3g, beta %.3g, Rstar %.3g): the "
                     "runs do not show an effect of data and repetition that the law resolves (more rungs, more tokens "
                     "per parameter, or a cap that makes the runs take 2-20 passes)", res.params[LAW_DC_ALPHA],
                     res.params[LAW_DC_BETA], res.params[LAW_DC_RSTAR]);
    if (!st) st = fit_bootstrap(&law, p.L, NULL, 0, &o, 200, 0.9, 0x5eed, &res);
    if (!st) {
        *out = fit_result_to_json("data_constrained", &law, &res);
        if (!*out) st = sx_fail(SX_ERR_NOMEM, "cannot build the data-constrained fit");
        else {
            json_object_set_new(*out, "repeating_points", json_integer((json_int_t)p.repeating));
            json_object_set_new(*out, "max_passes", json_real(p.max_passes));
        }
    }
    fit_result_free(&res);
    fit_law_free(&law);
    free(p.N); free(p.D); free(p.U); free(p.L);
    return st;
}

sx_status datafit_apply(json_t *forecast, const json_t *dc, double unique) {
    json_t *hero = json_object_get(forecast, "hero"), *method = json_object_get(forecast, "method");
    double tokens = json_number_value(json_object_get(hero, "tokens"));
    if (!json_is_object(method) || !(tokens > 0)) return sx_fail(SX_ERR_FORMAT, "forecast: no hero tokens or method");
    if (!(unique > 0) || tokens <= unique) {
        json_object_set_new(method, "data_law", json_pack("{s:s}", "law", "fresh data (no repetition)"));
        return SX_OK;
    }
    if (!dc) {
        json_object_set_new(method, "data_law", json_pack("{s:s, s:f, s:f}", "law", "fresh-data laws (optimistic: no "
                            "data-constrained fit)", "unique_tokens", unique, "passes", tokens / unique));
        return SX_OK;
    }
    json_t *pp = json_object_get(dc, "params");
    double B = json_number_value(json_object_get(pp, "B")), beta = json_number_value(json_object_get(pp, "beta"));
    double rstar = json_number_value(json_object_get(pp, "Rstar"));
    if (!(B > 0 && beta > 0 && rstar > 0)) return sx_fail(SX_ERR_FORMAT, "fit.json: data_constrained params B, beta, Rstar missing");
    json_t *pts = json_object_get(forecast, "points");
    double final_pen = 0;
    for (size_t i = 0; i < json_array_size(pts); i++) {
        json_t *e = json_array_get(pts, i);
        double D = json_number_value(json_object_get(e, "frac")) * tokens;
        double pen = D > 0 ? law_dc_repeat_penalty(B, beta, rstar, D, unique) : 0;
        static const char *keys[] = {"loss", "lo", "hi"};
        for (int k = 0; k < 3; k++)
            json_object_set_new(e, keys[k], json_real(json_number_value(json_object_get(e, keys[k])) + pen));
        json_object_set_new(e, "repeat_penalty", json_real(pen));
        final_pen = pen;
    }
    json_object_set_new(method, "data_law", json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f}", "law",
                        "data-constrained (Muennighoff et al. 2023)", "unique_tokens", unique, "passes", tokens / unique,
                        "Rstar", rstar, "B", B, "beta", beta, "final_penalty", final_pen));
    return SX_OK;
}
