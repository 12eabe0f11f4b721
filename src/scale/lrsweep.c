// lrsweep: the LR rule from a ladder's LR sweep (see lrsweep.h).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "laws/lrfit.h"
#include "scale/lrsweep.h"

#define LRSWEEP_NOISE_FLOOR 1e-3   // relative loss noise assumed at least (seed spread below this is luck)

// The last evaluation of a run (its final loss), or NAN.
static double final_loss(const rundir_run *r) {
    return r->n_evals && r->evals[r->n_evals - 1].step == r->n_steps ? r->evals[r->n_evals - 1].val_loss : NAN;
}

sx_status lrsweep_fit(const ladder_data *d, json_t **out) {
    const ladder_spec *s = d->spec;
    *out = NULL;
    // Seed noise: the mean relative seed spread of the rungs' final losses.
    size_t R = s->n_rungs, F = s->n_eval;
    double *mean = sx_calloc_n(R * F, sizeof *mean, "lr sweep rung means"), *sd = sx_calloc_n(R * F, sizeof *sd, "lr sweep rung spreads"), noise = 0;
    if (!mean || !sd) { free(mean); free(sd); return sx_fail(SX_ERR_NOMEM, "out of memory"); }
    ladder_rung_curves(d, NULL, mean, sd);
    for (size_t r = 0; r < R; r++) noise += sd[r * F + F - 1] / (double)R;
    free(mean);
    free(sd);
    noise = fmax(noise, LRSWEEP_NOISE_FLOOR);
    lrfit_optimum opt[LADDER_MAX_RUNGS];
    size_t n_opt = 0;
    sx_status st = SX_OK;
    json_t *optima = json_array();
    // The swept widths, as the plan resolved them (the key's, or by default the smallest rungs).
    size_t widths[LADDER_MAX_RUNGS], n_w = 0;
    for (size_t i = 0; i < d->n_plan; i++) {
        if (d->plan[i].branch != LADDER_SWEEP) continue;
        size_t j = 0;
        while (j < n_w && widths[j] != d->plan[i].width) j++;
        if (j == n_w && n_w < LADDER_MAX_RUNGS) widths[n_w++] = d->plan[i].width;
    }
    for (size_t w = 0; w < n_w && !st; w++) {
        size_t width = widths[w], n = 0;
        double lr[LRFIT_MAX_POINTS], loss[LRFIT_MAX_POINTS];
        for (size_t i = 0; i < d->n_plan && n < LRFIT_MAX_POINTS; i++) {
            const ladder_run *x = &d->plan[i];
            if (x->width != width || (x->branch != -1 && x->branch != LADDER_SWEEP)) continue;
            double l = final_loss(&d->runs[i]);
            if (!isfinite(l)) return sx_fail(SX_ERR_FORMAT, "%s: no final evaluation", x->dir);
            lr[n] = x->lr;
            loss[n++] = l;
        }
        if ((st = lrfit_vertex(lr, loss, n, noise, &opt[n_opt]))) {
            st = sx_fail(st, "LR sweep at width %zu: %s", width, sx_last_error());
            break;
        }
        opt[n_opt].width = (double)width;
        json_array_append_new(optima, json_pack("{s:I, s:f, s:f, s:f, s:I}", "width", (json_int_t)width, "lr", opt[n_opt].lr,
                                                "se_log", opt[n_opt].se_log, "curvature", opt[n_opt].curvature, "runs",
                                                (json_int_t)n));
        n_opt++;
    }
    lrfit_rule rule;
    if (!st) st = lrfit_power(opt, n_opt, s->lr_ref_width, &rule);
    if (st) { json_decref(optima); return st; }
    *out = json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:[[f, f], [f, f]], s:f, s:f, s:o, s:{s:f, s:f}}", "law", "lr_power",
                     "ref_width", rule.ref_width, "coef", exp(rule.log_coef), "power", rule.power, "se_log_coef",
                     sqrt(rule.cov[0][0]), "se_power", sqrt(rule.cov[1][1]), "cov", rule.cov[0][0], rule.cov[0][1],
                     rule.cov[1][0], rule.cov[1][1], "curvature", rule.curvature, "noise_rel", noise, "optima", optima,
                     "assumed", "lr", s->lr, "power", s->lr_width_power);
    return *out ? SX_OK : sx_fail(SX_ERR_NOMEM, "cannot build the LR rule");
}

sx_status lrsweep_apply(const json_t *rule, json_t *forecast, size_t hero_width) {
    if (!rule) return SX_OK;
    lrfit_rule r = {.ref_width = json_number_value(json_object_get(rule, "ref_width")),
                    .log_coef = log(json_number_value(json_object_get(rule, "coef"))),
                    .power = json_number_value(json_object_get(rule, "power")),
                    .curvature = json_number_value(json_object_get(rule, "curvature"))};
    json_t *cov = json_object_get(rule, "cov");
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) r.cov[i][j] = json_number_value(json_array_get(json_array_get(cov, (size_t)i), (size_t)j));
    if (!(r.ref_width > 0) || !isfinite(r.log_coef) || !isfinite(r.power))
        return sx_fail(SX_ERR_FORMAT, "fit.json: lr_rule is malformed");
    double se, cost, lr = lrfit_predict(&r, (double)hero_width, &se, &cost);
    json_t *hero = json_object_get(forecast, "hero");
    json_object_set_new(hero, "lr_assumed", json_real(json_number_value(json_object_get(hero, "lr"))));
    json_object_set_new(hero, "lr", json_real(lr));
    json_object_set_new(hero, "lr_rule", json_string("fitted from the ladder's LR sweep"));
    json_object_set_new(hero, "lr_se_log", json_real(se));
    json_object_set_new(hero, "lr_loss_cost", json_real(cost));
    return SX_OK;
}
