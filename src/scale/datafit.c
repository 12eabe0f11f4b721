// datafit: fitting and applying the repeat penalty of the data-constrained law (see datafit.h).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "scale/datafit.h"
#include "laws/datalaw.h"
#include "laws/fit.h"
#include "runs/rundir.h"

#define PEN_BETA_MIN 0.02    // the search box: beta in [0.02, 2], Rstar in [0.1, 1e4]
#define PEN_BETA_MAX 2.0
#define PEN_RSTAR_MIN 0.1
#define PEN_RSTAR_MAX 1e4
#define PEN_NB 30
#define PEN_NR 36

// Residual sum of squares of delta ~ B*g(beta, rstar) with the best B >= 0 for these (beta, rstar); *B set.
static double pen_rss(const double *D, const double *U, const double *delta, const size_t *idx, size_t n, double beta,
                      double rstar, double *B) {
    double gg = 0, gd = 0, dd = 0;
    for (size_t k = 0; k < n; k++) {
        size_t i = idx ? idx[k] : k;
        double g = law_dc_repeat_penalty(1, beta, rstar, D[i], U[i]);
        gg += g * g;
        gd += g * delta[i];
        dd += delta[i] * delta[i];
    }
    *B = gg > 0 && gd > 0 ? gd / gg : 0;
    return dd - 2 * *B * gd + *B * *B * gg;
}

// Grid search over (ln beta, ln rstar), then three rounds of a finer grid around the best point.
static void pen_search(const double *D, const double *U, const double *delta, const size_t *idx, size_t n, double p[3]) {
    double lb0 = log(PEN_BETA_MIN), lb1 = log(PEN_BETA_MAX), lr0 = log(PEN_RSTAR_MIN), lr1 = log(PEN_RSTAR_MAX);
    double best = INFINITY, cb = 0, cr = 0;
    for (int round = 0; round < 4; round++) {
        for (int a = 0; a < PEN_NB; a++)
            for (int c = 0; c < PEN_NR; c++) {
                double lb = lb0 + (lb1 - lb0) * a / (PEN_NB - 1), lr = lr0 + (lr1 - lr0) * c / (PEN_NR - 1), B;
                double rss = pen_rss(D, U, delta, idx, n, exp(lb), exp(lr), &B);
                if (rss < best) { best = rss; cb = lb; cr = lr; p[0] = B; p[1] = exp(lb); p[2] = exp(lr); }
            }
        double hb = 2 * (lb1 - lb0) / (PEN_NB - 1), hr = 2 * (lr1 - lr0) / (PEN_NR - 1);
        // zoom in around the best point, inside the search box
        lb0 = fmax(cb - hb, log(PEN_BETA_MIN)); lb1 = fmin(cb + hb, log(PEN_BETA_MAX));
        lr0 = fmax(cr - hr, log(PEN_RSTAR_MIN)); lr1 = fmin(cr + hr, log(PEN_RSTAR_MAX));
    }
}

sx_status datafit_penalty(const double *D, const double *U, const double *delta, size_t n, const size_t *group,
                          size_t n_groups, datafit_result *out) {
    memset(out, 0, sizeof *out);
    size_t rep = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(D[i] > 0) || !isfinite(delta[i])) return sx_fail(SX_ERR_ARG, "data-constrained point %zu is malformed", i);
        rep += U[i] > 0 && D[i] > U[i];
    }
    if (rep < 3) return sx_fail(SX_ERR_ARG, "the repeat penalty needs at least 3 points that repeat data, it has %zu", rep);
    pen_search(D, U, delta, NULL, n, out->params);
    if (!(out->params[0] > 0))
        return sx_fail(SX_ERR_NUMERIC, "the data-limited runs are not worse than the fresh ones (no repeat penalty to fit)");
    // An optimum on the edge of the search box is not identified by the data: refuse it.
    if (out->params[1] < 1.05 * PEN_BETA_MIN || out->params[1] > PEN_BETA_MAX / 1.05 ||
        out->params[2] < 1.05 * PEN_RSTAR_MIN || out->params[2] > PEN_RSTAR_MAX / 1.05)
        return sx_fail(SX_ERR_NUMERIC, "the repeat penalty is not identified by these runs: the best fit lies on the "
                       "edge of the search (beta %.3g in [%g, %g], Rstar %.3g in [%g, %g]); more run pairs, passes "
                       "between 1 and ~20, or less noisy evaluations are needed", out->params[1], PEN_BETA_MIN,
                       PEN_BETA_MAX, out->params[2], PEN_RSTAR_MIN, PEN_RSTAR_MAX);
    double B;
    out->rmse = sqrt(fmax(0, pen_rss(D, U, delta, NULL, n, out->params[1], out->params[2], &B)) / (double)n);
    // Bootstrap: resample whole groups (one data-limited/fresh pair of runs each) and refit.
    size_t *idx = sx_calloc_n(n, sizeof *idx, "datafit bootstrap sample"), *members = sx_calloc_n(n, sizeof *members, "datafit group members"),
           *start = sx_calloc_n(n_groups + 1, sizeof *start, "datafit group starts");
    double *boot = sx_calloc_n(3 * DATAFIT_BOOT, sizeof *boot, "datafit bootstrap fits");
    if (!idx || !members || !start || !boot) { free(idx); free(members); free(start); free(boot); return sx_fail(SX_ERR_NOMEM, "out of memory"); }
    for (size_t i = 0; i < n; i++) start[group[i] + 1]++;
    for (size_t g = 0; g < n_groups; g++) start[g + 1] += start[g];
    size_t *fill = sx_calloc_n(n_groups, sizeof *fill, "datafit group fill");
    for (size_t i = 0; fill && i < n; i++) members[start[group[i]] + fill[group[i]]++] = i;
    free(fill);
    rng_state r;
    rng_seed(&r, 0xda7a);
    size_t nb = 0;
    for (int b = 0; b < DATAFIT_BOOT; b++) {
        size_t m = 0;
        for (size_t k = 0; k < n_groups; k++) {
            size_t g = rng_below(&r, n_groups);
            for (size_t j = start[g]; j < start[g + 1] && m < n; j++) idx[m++] = members[j];
        }
        double p[3] = {0, 0, 0};
        pen_search(D, U, delta, idx, m, p);
        if (p[0] > 0) { for (int j = 0; j < 3; j++) boot[j * DATAFIT_BOOT + nb] = p[j]; nb++; }
    }
    for (int j = 0; j < 3 && nb > 0; j++) {
        out->lo[j] = fit_quantile(boot + j * DATAFIT_BOOT, nb, 0.05);
        out->hi[j] = fit_quantile(boot + j * DATAFIT_BOOT, nb, 0.95);
    }
    out->n_boot = nb;
    out->n_points = n;
    out->repeating = rep;
    free(idx); free(members); free(start); free(boot);
    return SX_OK;
}

// A growing set of points (D, U, delta, group).
typedef struct {
    double *D, *U, *delta;
    size_t *group;
    size_t n, cap;
} points;

static sx_status add_point(points *p, double D, double U, double delta, size_t group) {
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 256;
        sx_status st = sx_grow_columns((void *[]){&p->D, &p->U, &p->delta, &p->group},
                                       (size_t[]){sizeof *p->D, sizeof *p->U, sizeof *p->delta, sizeof *p->group}, 4,
                                       cap, "the repeat penalty's points");
        if (st) return st;
        p->cap = cap;
    }
    p->D[p->n] = D;
    p->U[p->n] = U;
    p->delta[p->n] = delta;
    p->group[p->n++] = group;
    return SX_OK;
}

sx_status datafit_ladders(const ladder_spec *fresh, const char *fresh_dir, const ladder_spec *limited,
                          const char *limited_dir, json_t **out) {
    *out = NULL;
    if (!(limited->unique_tokens > 0))
        return sx_fail(SX_ERR_ARG, "%s has no unique_tokens key: it is not a data-limited ladder", limited->spec_path);
    ladder_run *plan = NULL;
    size_t n_plan = 0, pairs = 0;
    points p = {0};
    double max_passes = 0, overfit_passes = INFINITY;
    sx_status st = ladder_plan(limited, &plan, &n_plan);
    for (size_t i = 0; i < n_plan && !st; i++) {
        if (plan[i].branch != -1) continue;
        char a[4200], b[4200];
        snprintf(a, sizeof a, "%s/%s", limited_dir, plan[i].dir);
        snprintf(b, sizeof b, "%s/%s", fresh_dir, plan[i].dir);
        rundir_run rl, rf;
        sx_status sl = rundir_read_set(a, limited->val_set, &rl), sf = rundir_read_set(b, fresh->val_set, &rf);
        if (!sl && !sf && rl.done && rf.done) {
            if (rl.total_steps != rf.total_steps || rl.batch_tokens != rf.batch_tokens)
                st = sx_fail(SX_ERR_MISMATCH, "%s and %s are not twins (steps %lld/%lld, batch tokens %lld/%lld): the "
                             "data-limited ladder must be the fresh ladder's recipe plus unique_tokens", a, b,
                             (long long)rl.total_steps, (long long)rf.total_steps, (long long)rl.batch_tokens,
                             (long long)rf.batch_tokens);
            json_t *u = json_object_get(rl.config, "unique_tokens");
            double U = json_is_number(u) ? json_number_value(u) : limited->unique_tokens;
            // The law models diminishing returns, not overfitting: once a limited run's loss rises while it
            // trains on (past its lowest evaluation), its points are outside the law and left out.
            size_t best = 0;
            for (size_t j = 1; j < rl.n_evals; j++)
                if (rl.evals[j].val_loss < rl.evals[best].val_loss) best = j;
            if (best + 1 < rl.n_evals) overfit_passes = fmin(overfit_passes, rl.evals[best].tokens / U);
            for (size_t j = 0; j <= best && j < rl.n_evals && !st; j++)
                for (size_t k = 0; k < rf.n_evals && !st; k++)
                    if (rf.evals[k].step == rl.evals[j].step) {
                        st = add_point(&p, rl.evals[j].tokens, U, rl.evals[j].val_loss - rf.evals[k].val_loss, pairs);
                        max_passes = fmax(max_passes, rl.evals[j].tokens / U);
                    }
            pairs++;
        }
        rundir_free(&rl);
        rundir_free(&rf);
    }
    free(plan);
    datafit_result r;
    if (!st && pairs < 3)
        st = sx_fail(SX_ERR_ARG, "the data-constrained law needs at least 3 finished run pairs (a run of %s and the same "
                     "run of %s); found %zu", limited->spec_path, fresh->spec_path, pairs);
    if (!st) st = datafit_penalty(p.D, p.U, p.delta, p.n, p.group, pairs, &r);
    if (!st) {
        *out = json_pack("{s:s, s:s, s:{s:f, s:f, s:f}, s:{s:[f, f], s:[f, f], s:[f, f]}, s:f, s:I, s:I, s:I, s:I, s:f, s:f}",
                         "law", "data_constrained", "method", "paired differences of data-limited and fresh runs at "
                         "matched steps", "params", "B", r.params[0], "beta", r.params[1], "Rstar", r.params[2], "ci", "B",
                         r.lo[0], r.hi[0], "beta", r.lo[1], r.hi[1], "Rstar", r.lo[2], r.hi[2], "ci_level", 0.9,
                         "n_boot", (json_int_t)r.n_boot, "n_points", (json_int_t)r.n_points, "repeating_points",
                         (json_int_t)r.repeating, "run_pairs", (json_int_t)pairs, "max_passes", max_passes, "rmse", r.rmse);
        if (*out && isfinite(overfit_passes))   // where the twins stopped improving: the law's reach
            json_object_set_new(*out, "overfits_from_passes", json_real(overfit_passes));
        if (!*out) st = sx_fail(SX_ERR_NOMEM, "cannot build the data-constrained fit");
    }
    free(p.D); free(p.U); free(p.delta); free(p.group);
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
