#include <math.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "core/rng.h"
#include "model/config.h"
#include "optim/schedule.h"
#include "laws/fit.h"
#include "model/flops.h"
#include "core/fsutil.h"
#include "scale/curvecast.h"
#include "scale/forecast.h"
#include "scale/ladder_curves.h"
#include "laws/laws.h"
#include "scale/ladder_data.h"
#include "runs/rundir.h"
#include "scale/taskcast.h"
#include "train/runlog.h"

#define N_BOOT 64
#define FORECAST_VERSION 1
#define FORECAST_OFF_LADDER 2   // a hero beyond 2x the ladder's tokens per parameter either way is off its allocation
#define FIT_MAX_LOSS 1e3   // nats per token: far above any real loss (ln of a 2^24 vocabulary is 16.6)

static json_t *array_of(const double *x, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_real(x[i]));
    return a;
}

// The lr array of a run (its logged per-step LR) bound as one curve at its evaluation steps.
static sx_status curve_of(const rundir_run *r, size_t **steps_out, double **obs_out, law_curve *c) {
    size_t *steps = sx_alloc((r->n_evals ? r->n_evals : 1) * sizeof *steps, "forecast steps");
    double *obs = sx_alloc((r->n_evals ? r->n_evals : 1) * sizeof *obs, "forecast obs");
    if (!steps || !obs) { free(steps); free(obs); return sx_fail(SX_ERR_NOMEM, "out of memory"); }
    size_t n = 0;
    for (size_t i = 0; i < r->n_evals; i++)
        if (r->evals[i].step >= 1 && r->evals[i].step <= r->n_steps) {
            steps[n] = r->evals[i].step - 1;
            obs[n++] = r->evals[i].val_loss;
        }
    *c = (law_curve){.lr = r->lr, .n_steps = r->n_steps, .steps = steps, .n_points = n};
    *steps_out = steps;
    *obs_out = obs;
    return SX_OK;
}

// Multi-power law fitted to every run (main runs and branches, all seeds) of rung `width`.
static sx_status fit_schedule_law(const ladder_data *d, size_t width, json_t **out) {
    size_t n = 0, total = 0;
    law_curve curves[LADDER_MAX_RUNGS * (1 + LADDER_MAX_BRANCHES)];
    size_t *steps[LADDER_MAX_RUNGS * (1 + LADDER_MAX_BRANCHES)];
    double *obs_parts[LADDER_MAX_RUNGS * (1 + LADDER_MAX_BRANCHES)];
    sx_status st = SX_OK;
    for (size_t i = 0; i < d->n_plan && !st && n < sizeof curves / sizeof *curves; i++) {
        if (d->plan[i].width != width || d->plan[i].branch == LADDER_SWEEP) continue;   // sweeps: other LRs
        st = curve_of(&d->runs[i], &steps[n], &obs_parts[n], &curves[n]);
        if (!st) total += curves[n++].n_points;
    }
    double *obs = sx_alloc((total ? total : 1) * sizeof *obs, "forecast obs");
    if (!obs && !st) st = SX_ERR_NOMEM;   // sx_alloc said what
    for (size_t c = 0, k = 0; c < n && !st; c++)
        for (size_t j = 0; j < curves[c].n_points; j++) obs[k++] = obs_parts[c][j];
    fit_law law;
    fit_result res;
    fit_options fo;
    fit_options_default(&fo);
    if (!st) st = law_mpl_bind(curves, n, 1, &law);
    if (!st) {
        st = fit_law_run(&law, obs, NULL, &fo, &res);
        if (!st) {
            *out = json_pack("{s:I, s:o, s:f, s:f, s:I}", "width", (json_int_t)width, "params",
                             array_of(res.params, res.n_params), "mean_abs_rel_err", res.mean_abs_rel,
                             "max_abs_rel_err", res.max_abs_rel, "curves", (json_int_t)n);
            fit_result_free(&res);
        }
        fit_law_free(&law);
    }
    for (size_t c = 0; c < n; c++) { free(steps[c]); free(obs_parts[c]); }
    free(obs);
    return st;
}


// The joint law over size, data and LR schedule (laws/law_nds.h), fitted to every main run and cooldown
// branch as a curve ladder, as `sextant fit` fits an imported one. NULL, with a warning, where it cannot be
// fitted (the forecast is then the per-fraction method's alone, and says so).
static json_t *fit_joint_law(const ladder_data *d) {
    import_ladder l;
    json_t *joint = NULL;
    sx_status st = ladder_curves_from_data(d, &l);
    if (!st) st = curvecast_fit(&l, 0, false, &joint);   // the spec's own per-fraction laws stand beside it
    double p[LAW_NDS_NPARAM];
    if (!st) st = curvecast_params(joint, p);   // e.g. rungs of one size, where the law's N term is undetermined
    import_ladder_free(&l);
    if (!st) return joint;
    fprintf(stderr, "fit: the joint law could not be fitted (%s); forecasts use the per-fraction laws alone\n", sx_last_error());
    json_decref(joint);
    return NULL;
}

sx_status forecast_fit_ladder(const ladder_spec *spec, const char *dir, json_t **fit) {
    ladder_data d;
    sx_status st = ladder_data_read(spec, dir, &d);
    if (st) { ladder_data_free(&d); return st; }
    size_t R = spec->n_rungs, F = spec->n_eval, mains = ladder_rung_start(spec, R), first[LADDER_MAX_RUNGS];
    bool resample = false;   // some rung has seeds to resample
    for (size_t r = 0; r < R; r++) {
        first[r] = ladder_rung_start(spec, r);
        resample = resample || ladder_rung_seeds(spec, r) > 1;
    }
    if (R < 3) { ladder_data_free(&d); return sx_fail(SX_ERR_ARG, "%s: a forecast needs at least 3 rungs", spec->spec_path); }
    double *mean = sx_alloc(R * F * sizeof *mean, "forecast mean"), *sd = sx_alloc(R * F * sizeof *sd, "forecast sd"),
           *x = sx_alloc(R * sizeof *x, "forecast x");
    fit_result *pf = sx_calloc_n(F, sizeof *pf, "forecast pf");
    // Allocation failures anywhere below (here, in the fits, in the FLOP counts) end in their own message.
    const long failures = sx_alloc_failures();
    if (!mean || !sd || !x || !pf) {
        free(mean); free(sd); free(x); free(pf);
        ladder_data_free(&d);
        return SX_ERR_NOMEM;   // sx_alloc said what
    }
    ladder_rung_curves(&d, NULL, mean, sd);
    for (size_t r = 0; r < R; r++) x[r] = d.plan[first[r]].flops;
    for (size_t i = 0; i < R * F; i++)
        if (!isfinite(mean[i])) st = sx_fail(SX_ERR_FORMAT, "%s: a run lacks an evaluation at one of the ladder's fractions", dir);
    // Each fraction's law has its own floor: early in training the gain from scale flattens, which a floor
    // shared with the final losses cannot express (it overshoots the hero's early curve). The independent fits
    // are smoothed across fractions where they are used (forecast_make).
    fit_options fo;
    fit_options_default(&fo);
    if (!st) st = fit_per_fraction(x, mean, R, F, &fo, pf);
    // The final-loss law L(C) with its floor free, and its leave-one-rung-out backtest, for the report.
    json_t *final_law = NULL;
    if (!st) {
        fit_law flaw;
        double y[LADDER_MAX_RUNGS];
        size_t group[LADDER_MAX_RUNGS];
        for (size_t r = 0; r < R; r++) { y[r] = mean[r * F + F - 1]; group[r] = r; }
        if (law_power_bind(x, R, &flaw) == SX_OK) {
            if (fit_backtest(&flaw, y, group, R, &fo, 1, &pf[F - 1]) == SX_OK)
                final_law = fit_result_to_json("final_loss_vs_compute", &flaw, &pf[F - 1]);
            fit_law_free(&flaw);
        }
    }
    // The method's own track record one rung back: fitted without the largest rung, how wrong was it there?
    // forecast_make scales this error by how much further the hero lies (in log compute).
    double *holdout = sx_calloc_n(F, sizeof *holdout, "forecast holdout");
    if (!st && !holdout) st = SX_ERR_NOMEM;
    if (!st && R >= 4) {
        fit_result *hf = sx_calloc_n(F, sizeof *hf, "forecast hf");
        if (hf && fit_per_fraction(x + 1, mean + F, R - 1, F, &fo, hf) == SX_OK)
            for (size_t f = 0; f < F; f++) {
                holdout[f] = law_power_eval(hf[f].params, x[0]) / mean[f] - 1;
                fit_result_free(&hf[f]);
            }
        free(hf);
    }
    // Bootstrap over seeds: each rung re-averages a resample of its seeds; the per-fraction fits are redone.
    double *boot = sx_alloc((size_t)N_BOOT * F * LAW_POW_NPARAM * sizeof *boot, "forecast boot"),
           *bmean = sx_alloc(R * F * sizeof *bmean, "forecast bmean");
    size_t *pick = sx_alloc(mains * sizeof *pick, "forecast pick");
    if (!st && (!boot || !bmean || !pick)) st = SX_ERR_NOMEM;
    rng_state rng;
    rng_seed(&rng, 2024);
    for (int b = 0; b < N_BOOT && !st && resample; b++) {
        for (size_t r = 0; r < R; r++)
            for (size_t k = 0, S = ladder_rung_seeds(spec, r); k < S; k++) pick[first[r] + k] = S > 1 ? rng_below(&rng, S) : 0;
        ladder_rung_curves(&d, pick, bmean, NULL);
        fit_result *bf = sx_calloc_n(F, sizeof *bf, "forecast bf");
        if (!bf) { st = SX_ERR_NOMEM; break; }
        sx_status bs = fit_per_fraction(x, bmean, R, F, &fo, bf);
        for (size_t f = 0; f < F; f++) {
            for (int j = 0; j < LAW_POW_NPARAM; j++)
                boot[((size_t)b * F + f) * LAW_POW_NPARAM + j] = bs ? pf[f].params[j] : bf[f].params[j];
            if (!bs) fit_result_free(&bf[f]);
        }
        free(bf);
    }
    json_t *joint = NULL;
    if (!st && !*spec->metric) joint = fit_joint_law(&d);   // validation loss only: tasks keep the per-fraction laws
    json_t *doc = NULL;
    if (!st) {
        fit_law plaw;
        law_power_bind(x, R, &plaw);
        json_t *rungs = json_array(), *fracs = json_array(), *sched = json_array();
        for (size_t r = 0; r < R; r++)
            json_array_append_new(rungs, json_pack("{s:I, s:s, s:f, s:I, s:f, s:o, s:o}", "width", (json_int_t)d.plan[first[r]].width,
                                                   "descriptor", d.plan[first[r]].descriptor, "flops", x[r], "steps",
                                                   (json_int_t)d.plan[first[r]].steps, "peak_lr", d.plan[first[r]].lr, "loss",
                                                   array_of(mean + r * F, F), "seed_sd_rel", array_of(sd + r * F, F)));
        for (size_t f = 0; f < F; f++) {
            json_t *bs = json_array();
            for (int b = 0; b < N_BOOT && resample; b++) json_array_append_new(bs, array_of(boot + ((size_t)b * F + f) * LAW_POW_NPARAM, LAW_POW_NPARAM));
            json_array_append_new(fracs, json_pack("{s:f, s:o, s:o, s:o}", "frac", spec->eval_at[f], "params",
                                                   array_of(pf[f].params, LAW_POW_NPARAM), "fit",
                                                   fit_result_to_json("loss_vs_compute", &plaw, &pf[f]), "boot", bs));
        }
        fit_law_free(&plaw);
        for (size_t r = 0; r < R && !st; r++) {
            json_t *sl = NULL;
            sx_status ss = fit_schedule_law(&d, d.plan[first[r]].width, &sl);
            if (!ss) json_array_append_new(sched, sl);
            else fprintf(stderr, "fit: schedule law for width %zu failed: %s\n", d.plan[first[r]].width, sx_last_error());
        }
        model_config c;
        model_config_parse(d.plan[0].descriptor, (size_t)json_integer_value(json_object_get(json_object_get(d.runs[0].config, "model_config"), "vocab")), &c);
        doc = json_pack("{s:i, s:{s:s, s:s, s:s, s:s, s:f, s:I, s:I, s:f, s:I, s:f, s:f, s:f, s:o}, s:o, s:o, s:{s:s, s:o}}",
                        "version", FORECAST_VERSION, "ladder", "name", spec->name, "spec", spec->spec_path, "train", spec->train, "schedule",
                        spec->schedule, "warmup", spec->warmup, "seq", (json_int_t)spec->seq, "batch", (json_int_t)spec->batch,
                        "tokens_per_param", spec->tokens_per_param, "vocab", (json_int_t)c.vocab, "lr", spec->lr,
                        "lr_ref_width", spec->lr_ref_width, "lr_width_power", spec->lr_width_power, "fracs",
                        array_of(spec->eval_at, F), "rungs", rungs, "per_fraction", fracs, "schedule_law", "law", "mpl",
                        "per_rung", sched);
        if (doc && R >= 4)
            json_object_set_new(doc, "holdout_top", json_pack("{s:f, s:o}", "log_distance", log(x[0] / x[1]), "rel_err",
                                                              array_of(holdout, F)));
        if (doc && *spec->val_set)   // which loss was fitted: val_loss_<val_set> of a mixture run
            json_object_set_new(json_object_get(doc, "ladder"), "val_set", json_string(spec->val_set));
        if (!doc) st = sx_fail(SX_ERR_NOMEM, "cannot build fit.json");
        else if (final_law) json_object_set_new(doc, "final_loss_vs_compute", final_law);
        if (doc && joint) json_object_set_new(doc, "joint_law", joint), joint = NULL;
    }
    json_decref(joint);
    for (size_t f = 0; f < F; f++) fit_result_free(&pf[f]);
    free(pf); free(mean); free(sd); free(x); free(boot); free(bmean); free(pick); free(holdout);
    ladder_data_free(&d);
    if (sx_alloc_failures() != failures) {   // even one a fit survived, or one behind another message
        json_decref(doc);
        doc = NULL;
        st = sx_alloc_check(failures);
    }
    if (!st) forecast_seal(doc);
    *fit = doc;
    return st;
}

static double num_at(json_t *a, size_t i) { return json_number_value(json_array_get(a, i)); }

static void params_of(json_t *a, double *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = num_at(a, i);
}

// Warmup steps of an n-step run whose warmup is a fraction (at least one step, as train counts them).
static long warmup_steps(double warmup, long n) {
    long ws = lround(warmup * (double)n);
    return ws < 1 ? 1 : ws;
}

// LR per step of a schedule shape scaled to peak_lr over n steps with warmup as a fraction.
static sx_status lr_array(const char *spec, long n, double warmup, double peak_lr, double *lr) {
    lr_schedule s;
    sx_status st = lr_schedule_parse(spec, n, &s);
    char w[32];
    snprintf(w, sizeof w, "%ld", warmup_steps(warmup, n));
    if (!st) st = lr_schedule_set_warmup(&s, w);
    if (st) return st;
    lr_schedule_fill(&s, lr, n);
    for (long i = 0; i < n; i++) lr[i] *= peak_lr;
    return SX_OK;
}

// Schedule-law ratio law(hero shape)/law(rung shape) at every fraction for one rung's fitted law.
// ratio[f] = law(hero schedule)/law(rung schedule) at every fraction f, both schedules laid over the rung's
// own steps and peak LR. A ratio of one law's two predictions, not a prediction: the law's misfit on the
// rung is common to both and cancels, and only the schedule's effect carries over to the hero.
static sx_status schedule_ratio(json_t *fit, json_t *law, json_t *rung, const char *hero_sched, double warmup,
                                double *ratio) {
    json_t *ld = json_object_get(fit, "ladder"), *fr = json_object_get(ld, "fracs");
    size_t F = json_array_size(fr);
    long n = (long)json_integer_value(json_object_get(rung, "steps"));
    double peak = json_number_value(json_object_get(rung, "peak_lr")), p[LAW_MPL_NPARAM];
    params_of(json_object_get(law, "params"), p, LAW_MPL_NPARAM);
    if (n < 1 || n > (1L << 27) || !(peak > 0))
        return sx_fail(SX_ERR_FORMAT, "fit.json: a rung has a bad \"steps\" (%ld) or \"peak_lr\" (%g)", n, peak);
    for (size_t f = 0; f < F; f++)
        if (!(num_at(fr, f) > 0 && num_at(fr, f) <= 1))
            return sx_fail(SX_ERR_FORMAT, "fit.json: ladder fraction %g is not in (0, 1]", num_at(fr, f));
    double *lr_r = sx_alloc((size_t)n * sizeof *lr_r, "forecast lr_r"),
           *lr_h = sx_alloc((size_t)n * sizeof *lr_h, "forecast lr_h");
    double *pr = sx_alloc(F * sizeof *pr, "forecast pr"), *ph = sx_alloc(F * sizeof *ph, "forecast ph");
    size_t *steps = sx_alloc(F * sizeof *steps, "forecast steps");
    sx_status st = lr_array(json_string_value(json_object_get(ld, "schedule")), n,
                            json_number_value(json_object_get(ld, "warmup")), peak, lr_r);
    if (!st) st = lr_array(hero_sched, n, warmup, peak, lr_h);
    if (!st) {
        for (size_t f = 0; f < F; f++) {
            long s = lround(num_at(fr, f) * (double)n) - 1;
            steps[f] = (size_t)(s < 0 ? 0 : s);
        }
        law_sched *a = law_sched_new(lr_r, (size_t)n), *b = law_sched_new(lr_h, (size_t)n);
        if (!a || !b) st = SX_ERR_NOMEM;
        else {
            law_mpl_predict(p, a, steps, F, pr);
            law_mpl_predict(p, b, steps, F, ph);
            for (size_t f = 0; f < F; f++) ratio[f] = ph[f] / pr[f];
        }
        law_sched_free(a);
        law_sched_free(b);
    }
    free(lr_r); free(lr_h); free(pr); free(ph); free(steps);
    return st;
}

static void sha256_hex(const char *text, char out[65]) {
    struct sha256_ctx ctx;
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_init(&ctx);
    sha256_update(&ctx, strlen(text), (const uint8_t *)text);
    sha256_digest(&ctx, SHA256_DIGEST_SIZE, digest);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) sprintf(out + 2 * i, "%02x", digest[i]);
}

// Hash of the document without its "sha256" member, keys sorted, full precision (17 digits: every double
// prints back to the same bits, so a document re-read and re-hashed keeps its hash).
static void forecast_hash(json_t *doc, char out[65]) {
    json_t *copy = json_deep_copy(doc);
    json_object_del(copy, "sha256");
    char *text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    sha256_hex(text ? text : "", out);
    free(text);
    json_decref(copy);
}

// Stores the document's hash in it ("sha256"), so that any later edit is seen.
void forecast_seal(json_t *doc) {
    char h[65];
    forecast_hash(doc, h);
    json_object_set_new(doc, "sha256", json_string(h));
}

sx_status forecast_verify_hash(json_t *forecast, const char *path) {
    char h[65];
    forecast_hash(forecast, h);
    const char *stored = json_string_value(json_object_get(forecast, "sha256"));
    if (!stored || strcmp(stored, h))
        return sx_fail(SX_ERR_FORMAT, "%s: sha256 does not match its content (edited after it was frozen?)", path);
    return SX_OK;
}

// fit.json's numbers in their ranges, so that a forecast is never made from a loss of 1e300, a negative
// LR or a missing vocabulary (which once became model_config's default).
static sx_status check_fit(json_t *fit) {
    json_t *ld = json_object_get(fit, "ladder"), *rungs = json_object_get(fit, "rungs"), *pf = json_object_get(fit, "per_fraction");
    json_t *v = json_object_get(ld, "vocab");
    if (!json_is_integer(v) || json_integer_value(v) < 2 || json_integer_value(v) > (1 << 24))
        return sx_fail(SX_ERR_FORMAT, "fit.json: ladder.vocab is missing or not a vocabulary size in [2, 2^24]");
    static const struct { const char *key; double lo, hi; } lad[] = {
        {"lr", 1e-12, 1e3}, {"lr_ref_width", 1, 1e6}, {"lr_width_power", -10, 10}, {"warmup", 0, 1},
    };
    for (size_t i = 0; i < sizeof lad / sizeof *lad; i++) {
        json_t *x = json_object_get(ld, lad[i].key);
        double val = json_number_value(x);
        if (!json_is_number(x) || !(val >= lad[i].lo && val <= lad[i].hi))
            return sx_fail(SX_ERR_FORMAT, "fit.json: ladder.%s is missing or outside [%g, %g]", lad[i].key, lad[i].lo, lad[i].hi);
    }
    for (size_t r = 0; r < json_array_size(rungs); r++) {
        json_t *rung = json_array_get(rungs, r), *loss = json_object_get(rung, "loss"), *sd = json_object_get(rung, "seed_sd_rel");
        double flops = json_number_value(json_object_get(rung, "flops"));
        if (!(flops > 0 && isfinite(flops)))
            return sx_fail(SX_ERR_FORMAT, "fit.json: rungs[%zu].flops is missing or not a positive number", r);
        for (size_t f = 0; f < json_array_size(loss); f++)
            if (!(num_at(loss, f) > 0 && num_at(loss, f) < FIT_MAX_LOSS))
                return sx_fail(SX_ERR_FORMAT, "fit.json: rungs[%zu].loss[%zu] = %g is not a loss in (0, %g)", r, f,
                               num_at(loss, f), FIT_MAX_LOSS);
        for (size_t f = 0; f < json_array_size(sd); f++)
            if (!(num_at(sd, f) >= 0 && num_at(sd, f) < 1e3))
                return sx_fail(SX_ERR_FORMAT, "fit.json: rungs[%zu].seed_sd_rel[%zu] = %g is not a spread in [0, 1000)", r,
                               f, num_at(sd, f));
    }
    for (size_t f = 0; f < json_array_size(pf); f++) {
        json_t *p = json_object_get(json_array_get(pf, f), "params");
        for (size_t j = 0; j < json_array_size(p); j++)
            if (!isfinite(num_at(p, j)))
                return sx_fail(SX_ERR_FORMAT, "fit.json: per_fraction[%zu].params[%zu] is not a finite number", f, j);
    }
    return SX_OK;
}

// The joint law's forecast of the hero at the ladder's fractions of its steps (curvecast_forecast on the
// hero described as a runs-table row: its parameter counts, tokens per step, LR schedule and FLOPs per token).
static sx_status joint_forecast(json_t *joint, const model_config *c, long seq, long tokens_per_step, long steps,
                                double peak_lr, double warmup, const char *sched, json_t *fracs, json_t **out) {
    model_flops mf = model_flops_count(c, (size_t)seq);
    import_run t = {.n_params = mf.params_total, .n_nonembed = mf.params_nonembed, .n_given = IMPORT_N_BOTH,
                    .tokens_per_step = (double)tokens_per_step,
                    .peak_lr = peak_lr, .flops_per_token = mf.train_per_token, .total_steps = steps,
                    .warmup_steps = warmup_steps(warmup, steps)};
    snprintf(t.id, sizeof t.id, "hero");
    snprintf(t.schedule, sizeof t.schedule, "%s", sched);
    size_t F = json_array_size(fracs);
    long *at = sx_alloc(F * sizeof *at, "forecast joint steps");
    if (!at) return SX_ERR_NOMEM;
    for (size_t f = 0; f < F; f++) at[f] = lround(num_at(fracs, f) * (double)steps);
    sx_status st = SX_OK;
    for (size_t f = 0; f < F && !st; f++)
        if (at[f] < 1 || (f && at[f] <= at[f - 1]))
            st = sx_fail(SX_ERR_ARG, "the hero's %ld steps are too few for the ladder's %zu fractions", steps, F);
    if (!st) st = curvecast_forecast(joint, &t, at, F, out);
    free(at);
    return st;
}

sx_status forecast_make(json_t *fit, const hero_spec *hero, json_t **out) {
    json_t *ld = json_object_get(fit, "ladder"), *fr = json_object_get(ld, "fracs"), *pf = json_object_get(fit, "per_fraction");
    json_t *rungs = json_object_get(fit, "rungs"), *laws = json_object_get(json_object_get(fit, "schedule_law"), "per_rung");
    size_t F = json_array_size(fr), R = json_array_size(rungs);
    if (!F || json_array_size(pf) != F || !R) return sx_fail(SX_ERR_FORMAT, "fit.json: missing per-fraction fits");
    long batch = hero->batch > 0 ? hero->batch : (long)json_integer_value(json_object_get(ld, "batch"));
    long seq = hero->seq > 0 ? hero->seq : (long)json_integer_value(json_object_get(ld, "seq"));
    const char *rung_sched = json_string_value(json_object_get(ld, "schedule"));
    const char *sched = hero->schedule && *hero->schedule ? hero->schedule : rung_sched;
    double warmup = hero->warmup >= 0 ? hero->warmup : json_number_value(json_object_get(ld, "warmup"));
    if (!rung_sched || !sched || batch < 1 || seq < 1 || batch > (1L << 24) || seq > (1L << 24))
        return sx_fail(SX_ERR_FORMAT, "fit.json: the ladder needs a schedule and a batch and seq in [1, 2^24]");
    sx_status st = check_fit(fit);
    if (st) return st;
    model_config c;
    if ((st = model_config_parse(hero->model, (size_t)json_integer_value(json_object_get(ld, "vocab")), &c))) return st;
    model_flops hero_count = model_flops_count(&c, (size_t)seq);
    double per_token = hero_count.train_per_token, C_max = 0;
    if (!isfinite(per_token)) return SX_ERR_NOMEM;   // the parameter table could not be built: sx_alloc said what
    for (size_t r = 0; r < R; r++) C_max = fmax(C_max, json_number_value(json_object_get(json_array_get(rungs, r), "flops")));
    double tokens = hero->flops_ratio > 0 ? hero->flops_ratio * C_max / per_token : hero->tokens;
    long steps = lround(tokens / (double)(batch * seq));
    if (steps < 1) return sx_fail(SX_ERR_ARG, "%.0f tokens is less than one batch of %ld x %ld", tokens, batch, seq);
    double C = per_token * (double)steps * (double)(batch * seq);
    // The ladder's LR rule applied to the hero's width.
    double lr = json_number_value(json_object_get(ld, "lr")) *
                pow(json_number_value(json_object_get(ld, "lr_ref_width")) / (double)c.width,
                    json_number_value(json_object_get(ld, "lr_width_power")));
    bool same_schedule = !strcmp(sched, rung_sched);
    // Schedule ratio from every rung with a fitted law: the largest rung's value, the spread across rungs.
    double *ratio = sx_alloc(F * sizeof *ratio, "forecast ratio"),
           *rsum = sx_calloc_n(F, sizeof *rsum, "forecast rsum"), *rsq = sx_calloc_n(F, sizeof *rsq, "forecast rsq"),
           *tmp = sx_alloc(F * sizeof *tmp, "forecast tmp");
    size_t nr = 0;
    if (!ratio || !rsum || !rsq || !tmp) st = SX_ERR_NOMEM;   // sx_alloc recorded what
    for (size_t f = 0; f < F && !st; f++) ratio[f] = 1;
    for (size_t i = 0; i < json_array_size(laws) && !same_schedule && !st; i++) {
        json_t *law = json_array_get(laws, i), *rung = NULL;
        for (size_t r = 0; r < R; r++)
            if (json_integer_value(json_object_get(json_array_get(rungs, r), "width")) == json_integer_value(json_object_get(law, "width")))
                rung = json_array_get(rungs, r);
        if (!rung || (st = schedule_ratio(fit, law, rung, sched, warmup, tmp))) continue;
        if (nr == 0) memcpy(ratio, tmp, F * sizeof *tmp);
        for (size_t f = 0; f < F; f++) { rsum[f] += tmp[f]; rsq[f] += tmp[f] * tmp[f]; }
        nr++;
    }
    if (!st && !same_schedule && !nr) st = sx_fail(SX_ERR_ARG, "fit.json has no schedule law: cannot forecast a different schedule");
    json_t *points = json_array();
    // Scale gain of the hero over the largest rung at every fraction, g_f = L_f(C_hero) / L_f(C_top), for the
    // fit and every bootstrap resample; smoothed over neighbouring fractions (the fits are independent per
    // fraction, the gain is a smooth function of f), then applied to the largest rung's observed curve.
    json_t *top = json_array_get(rungs, 0);
    double C_top = json_number_value(json_object_get(top, "flops")), X = C;
    size_t B = json_array_size(json_object_get(json_array_get(pf, 0), "boot"));
    double *gain = sx_alloc(F * (B + 1) * sizeof *gain, "forecast gain");
    double *smooth = sx_alloc(F * (B + 1) * sizeof *smooth, "forecast smooth");
    if (!gain || !smooth) st = SX_ERR_NOMEM;
    for (size_t f = 0; f < F && !st; f++) {
        json_t *e = json_array_get(pf, f), *boot = json_object_get(e, "boot");
        double q[LAW_POW_NPARAM];
        for (size_t b = 0; b <= B; b++) {
            params_of(b < B ? json_array_get(boot, b) : json_object_get(e, "params"), q, LAW_POW_NPARAM);
            gain[b * F + f] = law_power_eval(q, X) / law_power_eval(q, C_top);
        }
    }
    const size_t half = 2;   // smoothing window: f-2..f+2 (clipped at the ends)
    for (size_t b = 0; b <= B && !st; b++)
        for (size_t f = 0; f < F; f++) {
            size_t lo = f >= half ? f - half : 0, hi = f + half < F ? f + half : F - 1;
            double sum = 0;
            for (size_t k = lo; k <= hi; k++) sum += gain[b * F + k];
            smooth[b * F + f] = sum / (double)(hi - lo + 1);
        }
    json_t *jf = NULL, *jl = json_object_get(fit, "joint_law");
    if (!st && jl) st = joint_forecast(jl, &c, seq, batch * seq, steps, lr, warmup, sched, fr, &jf);
    // The per-fraction laws are loss against compute along the ladder's own allocation (tokens_per_param
    // tokens per non-embedding parameter). A hero far off it (more than FORECAST_OFF_LADDER times more or
    // fewer tokens per parameter) is a point they cannot describe: the joint law, a function of N and D, forecasts alone.
    double hero_tpp = tokens / hero_count.params_nonembed, ladder_tpp = json_number_value(json_object_get(ld, "tokens_per_param"));
    bool off_allocation = ladder_tpp > 0 && fabs(log(hero_tpp / ladder_tpp)) > log(FORECAST_OFF_LADDER);
    bool off_ladder = off_allocation && jf;
    if (off_ladder)
        fprintf(stderr, "forecast: the hero trains %.3g tokens per non-embedding parameter, the ladder's rungs %g: the "
                "per-fraction laws (loss against compute at the ladder's allocation) do not describe it; forecasting "
                "from the joint law alone\n", hero_tpp, ladder_tpp);
    else if (off_allocation)
        fprintf(stderr, "forecast: warning: the hero trains %.3g tokens per non-embedding parameter, the ladder's rungs %g, "
                "and fit.json has no joint law: the per-fraction laws assume the ladder's allocation\n", hero_tpp, ladder_tpp);
    json_t *jpts = json_object_get(jf, "points");
    double s_joint = json_number_value(json_object_get(json_object_get(jf, "sigma"), "total"));
    double p[LAW_POW_NPARAM];
    for (size_t f = 0; f < F && !st; f++) {
        json_t *e = json_array_get(pf, f);
        params_of(json_object_get(e, "params"), p, LAW_POW_NPARAM);
        double pred = num_at(json_object_get(top, "loss"), f) * smooth[B * F + f], bs = 0, bq = 0;
        for (size_t b = 0; b < B; b++) {
            double v = smooth[b * F + f] / smooth[B * F + f];
            bs += v;
            bq += v * v;
        }
        double s_boot = B > 1 ? sqrt(fmax(0, (bq - bs * bs / (double)B) / (double)(B - 1))) : 0, v_seed = 0;
        // The hero is one seed: the rungs' seed variance, pooled over rungs (a mean of unbiased variances,
        // not of standard deviations, which two seeds would underestimate).
        for (size_t r = 0; r < R; r++) {
            double sd = num_at(json_object_get(json_array_get(rungs, r), "seed_sd_rel"), f);
            v_seed += sd * sd / (double)R;
        }
        // Misfit of the law itself: its in-sample residual at this fraction, a mean |error| turned into a
        // standard deviation (x sqrt(pi/2) ~ 1.25 for normal errors).
        double s_misfit = 1.25 * json_number_value(json_object_get(json_object_get(e, "fit"), "mean_abs_rel_err"));
        double s_sched = nr > 1 ? sqrt(fmax(0, (rsq[f] - rsum[f] * rsum[f] / (double)nr) / (double)(nr - 1))) / ratio[f] : 0;
        // Extrapolation: the held-out-top-rung error near f (RMS over the smoothing window), scaled by the
        // hero's distance beyond the top rung relative to the top rung's beyond the next (in log compute).
        double s_extrap = 0;
        json_t *ho = json_object_get(fit, "holdout_top");
        if (ho) {
            json_t *he = json_object_get(ho, "rel_err");
            size_t lo = f >= half ? f - half : 0, hi = f + half < F ? f + half : F - 1;
            for (size_t k = lo; k <= hi; k++) s_extrap += num_at(he, k) * num_at(he, k) / (double)(hi - lo + 1);
            s_extrap = sqrt(s_extrap) * fmax(0, log(X / C_top)) / json_number_value(json_object_get(ho, "log_distance"));
        }
        double s_seed = sqrt(v_seed), loss_pf = pred * ratio[f];
        double sigma_pf = sqrt(s_boot * s_boot + v_seed + s_misfit * s_misfit + s_sched * s_sched + s_extrap * s_extrap);
        // Two forecasters, averaged: their errors one size back are partly independent (see docs/FORECAST.md).
        // The band takes their mean sigma and half their disagreement, so two that differ widen it.
        double loss_joint = jf ? json_number_value(json_object_get(json_array_get(jpts, f), "loss")) : NAN;
        double loss = off_ladder ? loss_joint : jf ? (loss_pf + loss_joint) / 2 : loss_pf;
        double s_methods = jf && !off_ladder ? fabs(loss_pf - loss_joint) / (2 * loss) : 0;
        double sigma = off_ladder ? s_joint : jf ? sqrt(pow((sigma_pf + s_joint) / 2, 2) + s_methods * s_methods) : sigma_pf;
        double frac = num_at(fr, f);
        if (!isfinite(loss) || !isfinite(sigma)) {   // e.g. a degenerate fit from two rungs of the same size
            st = sx_fail(SX_ERR_NUMERIC, "fit.json: the forecast at fraction %g is not finite (loss %g, sigma %g) from "
                         "the per-fraction law L(C) = %g + %g * C^-%g and schedule ratio %g: refit a ladder whose rungs "
                         "differ in size", frac, loss, sigma, p[LAW_POW_LINF], p[LAW_POW_A], p[LAW_POW_ALPHA], ratio[f]);
            break;
        }
        json_t *point = json_pack("{s:f, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "frac", frac, "step",
                                                (json_int_t)lround(frac * (double)steps), "loss", loss, "lo", loss * (1 - 2 * sigma),
                                                "hi", loss * (1 + 2 * sigma), "loss_per_fraction", loss_pf, "scale_only", pred,
                                                "schedule_ratio", ratio[f], "sigma_per_fraction", sigma_pf,
                                                "sigma_fit", sqrt(s_boot * s_boot + s_misfit * s_misfit), "sigma_seed", s_seed,
                                                "sigma_schedule", s_sched, "sigma_extrapolation", s_extrap);
        if (point && jf) {
            json_object_set_new(point, "loss_joint", json_real(loss_joint));
            json_object_set_new(point, "sigma_methods", json_real(s_methods));
        }
        if (!point) { st = sx_fail(SX_ERR_NOMEM, "cannot build the forecast point at fraction %g", frac); break; }
        json_array_append_new(points, point);
    }
    free(ratio); free(rsum); free(rsq); free(tmp); free(gain); free(smooth);
    if (st) { json_decref(points); json_decref(jf); return st; }
    json_t *doc = json_pack("{s:i, s:{s:s, s:f, s:I, s:I, s:I, s:s, s:f, s:f, s:f, s:f}, s:{s:s, s:s, s:b, s:I}, s:o}",
                            "version", FORECAST_VERSION, "hero", "model", c.descriptor, "tokens",
                            (double)steps * (double)(batch * seq), "steps", (json_int_t)steps, "batch", (json_int_t)batch, "seq",
                            (json_int_t)seq, "schedule", sched, "warmup", warmup, "flops", C, "flops_ratio", C / C_max, "lr", lr,
                            "method", "ladder", json_string_value(json_object_get(ld, "name")),
                            "rung_schedule", rung_sched, "schedule_change", !same_schedule, "rungs_with_schedule_law",
                            (json_int_t)nr, "points", points);
    json_t *vs = json_object_get(ld, "val_set");
    if (json_is_string(vs)) json_object_set(doc, "val_set", vs);
    json_t *method = json_object_get(doc, "method");
    json_object_set_new(method, "combine", json_string(off_ladder ? "the joint law alone: the hero is off the ladder's allocation"
                                                       : jf ? "mean of the per-fraction laws and the joint law"
                                                            : "the per-fraction laws alone: fit.json has no joint law"));
    if (off_ladder)
        json_object_set_new(method, "tokens_per_param", json_pack("{s:f, s:f}", "hero", hero_tpp, "ladder", ladder_tpp));
    if (jf)
        json_object_set_new(method, "joint_law", json_pack("{s:O, s:O, s:O}", "n_kind", json_object_get(jl, "n_kind"),
                                                           "sigma", json_object_get(jf, "sigma"), "params",
                                                           json_object_get(jl, "params")));
    json_decref(jf);
    forecast_seal(doc);
    *out = doc;
    return SX_OK;
}

bool forecast_is_curve(const json_t *doc) {
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    return kind && !strcmp(kind, FORECAST_KIND_CURVE);
}

// A curve ladder's forecast (sextant import) is checked against a run of that ladder, not a trained run.
static sx_status not_curve_forecast(const json_t *doc, const char *path) {
    if (!forecast_is_curve(doc)) return SX_OK;
    return sx_fail(SX_ERR_ARG, "%s%sa curve ladder's forecast (sextant import), scored against a run of that ladder: "
                   "`sextant forecast --check-run ID --ladder DIR --forecast FILE`", path ? path : "", path ? ": " : "");
}

// The points of doc (already verified) for a run of total_steps steps.
static sx_status points_from_doc(json_t *doc, const char *path, long total_steps, forecast_points *p) {
    memset(p, 0, sizeof *p);
    sx_status st = not_curve_forecast(doc, path);
    if (st) return st;
    json_t *pts = json_object_get(doc, "points");
    long steps = (long)json_integer_value(json_object_get(json_object_get(doc, "hero"), "steps"));
    if (steps != total_steps)
        st = sx_fail(SX_ERR_MISMATCH, "%s: forecast is for a run of %ld steps, this run has %ld", path, steps, total_steps);
    size_t n = json_array_size(pts);
    if (!st && !n) st = sx_fail(SX_ERR_FORMAT, "%s: no forecast points", path);
    if (!st) {
        p->n = n;
        p->step = sx_alloc(n * sizeof *p->step, "forecast p.step");
        p->frac = sx_alloc(n * sizeof *p->frac, "forecast p.frac");
        p->loss = sx_alloc(n * sizeof *p->loss, "forecast p.loss");
        p->lo = sx_alloc(n * sizeof *p->lo, "forecast p.lo");
        p->hi = sx_alloc(n * sizeof *p->hi, "forecast p.hi");
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(pts, i);
            p->step[i] = (long)json_integer_value(json_object_get(e, "step"));
            p->frac[i] = json_number_value(json_object_get(e, "frac"));
            p->loss[i] = json_number_value(json_object_get(e, "loss"));
            p->lo[i] = json_number_value(json_object_get(e, "lo"));
            p->hi[i] = json_number_value(json_object_get(e, "hi"));
            if (!(p->loss[i] > 0) || p->step[i] < 1) st = sx_fail(SX_ERR_FORMAT, "%s: point %zu is malformed", path, i);
        }
        const char *vs = json_string_value(json_object_get(doc, "val_set"));
        snprintf(p->val_set, sizeof p->val_set, "%s", vs ? vs : "");
    }
    if (st) forecast_points_free(p);
    return st;
}

sx_status forecast_points_load(const char *path, long total_steps, forecast_points *p) {
    memset(p, 0, sizeof *p);
    json_t *doc;
    sx_status st = fs_load_json(path, &doc);
    if (st) return st;
    st = forecast_verify_hash(doc, path);
    if (!st) st = points_from_doc(doc, path, total_steps, p);
    json_decref(doc);
    return st;
}

void forecast_points_free(forecast_points *p) {
    free(p->step); free(p->frac); free(p->loss); free(p->lo); free(p->hi);
    memset(p, 0, sizeof *p);
}

long forecast_points_find(const forecast_points *p, long step) {
    for (size_t i = 0; i < p->n; i++)
        if (p->step[i] == step) return (long)i;
    return -1;
}

sx_status forecast_check_run(json_t *forecast, const char *run_dir, json_t **report) {
    *report = NULL;
    if (not_curve_forecast(forecast, NULL)) return SX_ERR_ARG;
    rundir_run run;
    sx_status st = rundir_read_set(run_dir, json_string_value(json_object_get(forecast, "val_set")), &run);
    if (st) { rundir_free(&run); return st; }
    json_t *pts = json_object_get(forecast, "points"), *rows = json_array();
    size_t n = 0, inside = 0, n_late = 0;
    double sum_late = 0, max_late = 0, halfwidth = 0, final_err = NAN;
    for (size_t i = 0; i < json_array_size(pts); i++) {
        json_t *e = json_array_get(pts, i);
        size_t step = (size_t)json_integer_value(json_object_get(e, "step"));
        double pred = json_number_value(json_object_get(e, "loss")), lo = json_number_value(json_object_get(e, "lo"));
        double hi = json_number_value(json_object_get(e, "hi")), frac = json_number_value(json_object_get(e, "frac")), obs = NAN;
        for (size_t k = 0; k < run.n_evals; k++)
            if (run.evals[k].step == step) obs = run.evals[k].val_loss;
        if (!isfinite(obs)) continue;
        double err = (pred - obs) / obs;
        bool in = obs >= lo && obs <= hi;
        n++;
        inside += in;
        halfwidth += (hi - lo) / (2 * pred);
        if (frac > 0.1 + 1e-9) {
            n_late++;
            sum_late += fabs(err);
            max_late = fmax(max_late, fabs(err));
        }
        if (fabs(frac - 1) < 1e-9) final_err = err;
        json_array_append_new(rows, json_pack("{s:f, s:I, s:f, s:f, s:f, s:f, s:f, s:b}", "frac", frac, "step", (json_int_t)step,
                                              "observed", obs, "forecast", pred, "lo", lo, "hi", hi, "rel_err", err, "inside", in));
    }
    if (!n) {   // another run than the forecast's hero: say what each one is
        json_t *hero = json_object_get(forecast, "hero");
        char want[160], have[160];
        size_t np = json_array_size(pts);
        snprintf(want, sizeof want, "%zu points, steps %lld..%lld", np,
                 np ? (long long)json_integer_value(json_object_get(json_array_get(pts, 0), "step")) : 0,
                 np ? (long long)json_integer_value(json_object_get(json_array_get(pts, np - 1), "step")) : 0);
        snprintf(have, sizeof have, "%zu evaluations%s", run.n_evals, run.n_evals ? ", steps " : "");
        if (run.n_evals)
            snprintf(have + strlen(have), sizeof have - strlen(have), "%zu..%zu", run.evals[0].step,
                     run.evals[run.n_evals - 1].step);
        st = sx_fail(SX_ERR_MISMATCH, "%s is not the forecast's hero: the run is %s for %lld steps (%s); the forecast "
                     "is for %s for %lld steps (%s). Check the hero trained with --forecast against this forecast",
                     run_dir, run.model, (long long)run.total_steps, have,
                     json_string_value(json_object_get(hero, "model")) ? json_string_value(json_object_get(hero, "model")) : "?",
                     (long long)json_integer_value(json_object_get(hero, "steps")), want);
        rundir_free(&run);
        json_decref(rows);
        return st;
    }
    rundir_free(&run);
    // A run still in progress has no final point yet (and maybe none after 10%): those figures are null.
    *report = json_pack("{s:i, s:s, s:s, s:I, s:o, s:o, s:o, s:f, s:f, s:o}", "version", FORECAST_VERSION, "run", run_dir, "forecast_sha256",
                        json_string_value(json_object_get(forecast, "sha256")), "points", (json_int_t)n,
                        "mean_abs_rel_err_after_10pct", n_late ? json_real(sum_late / (double)n_late) : json_null(),
                        "max_abs_rel_err_after_10pct", n_late ? json_real(max_late) : json_null(), "final_rel_err",
                        isfinite(final_err) ? json_real(final_err) : json_null(), "inside_band_frac",
                        (double)inside / (double)n, "mean_band_halfwidth_rel", halfwidth / (double)n, "rows", rows);
    return SX_OK;
}

void forecast_print_report(FILE *out, json_t *r) {
    json_t *rows = json_object_get(r, "rows");
    // "band±" is the band's half-width relative to the forecast, as mean_band_halfwidth_rel.
    fprintf(out, "%6s %7s %9s %9s %9s %8s  %s\n", "frac", "step", "observed", "forecast", "band±", "error", "in band");
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i);
        double f = json_number_value(json_object_get(e, "forecast"));
        fprintf(out, "%6.3f %7lld %9.4f %9.4f %8.2f%% %+7.2f%%  %s\n", json_number_value(json_object_get(e, "frac")),
                (long long)json_integer_value(json_object_get(e, "step")), json_number_value(json_object_get(e, "observed")), f,
                50 * (json_number_value(json_object_get(e, "hi")) - json_number_value(json_object_get(e, "lo"))) / f,
                100 * json_number_value(json_object_get(e, "rel_err")), json_is_true(json_object_get(e, "inside")) ? "yes" : "NO");
    }
    json_t *final = json_object_get(r, "final_rel_err");
    char final_text[32] = "not reached yet";
    if (json_is_number(final)) snprintf(final_text, sizeof final_text, "%+.2f%%", 100 * json_number_value(final));
    fprintf(out, "points %lld | mean |error| after 10%%: %.2f%% | worst: %.2f%% | final loss error: %s | inside band: %.0f%% | mean band half-width: ±%.2f%%\n",
            (long long)json_integer_value(json_object_get(r, "points")),
            100 * json_number_value(json_object_get(r, "mean_abs_rel_err_after_10pct")),
            100 * json_number_value(json_object_get(r, "max_abs_rel_err_after_10pct")), final_text,
            100 * json_number_value(json_object_get(r, "inside_band_frac")), 100 * json_number_value(json_object_get(r, "mean_band_halfwidth_rel")));
}

// ---- a forecast verified while its run trains ----

// The hook's start: the points for this run's length.
static sx_status watch_start(void *ctx, long total_steps) {
    forecast_watch *w = ctx;
    forecast_points_free(&w->points);
    return points_from_doc(w->doc, w->path, total_steps, &w->points);
}

static const char *watch_val_set(void *ctx) { return ((forecast_watch *)ctx)->points.val_set; }

static bool watch_wants(void *ctx, long step) { return forecast_points_find(&((forecast_watch *)ctx)->points, step) >= 0; }

// Compares an evaluation with the forecast point at this step (if any): into the metrics line, and a short
// note for the progress line; an evaluation outside the band is an alarm.
static bool watch_on_eval(void *ctx, long step, double val, json_t *line, char *note, size_t size) {
    const forecast_points *p = &((forecast_watch *)ctx)->points;
    long i = forecast_points_find(p, step);
    note[0] = 0;
    if (i < 0) return false;
    double pred = p->loss[i], err = (pred - val) / val;
    bool in = val >= p->lo[i] && val <= p->hi[i];
    json_object_set_new(line, "forecast", json_real(pred));
    json_object_set_new(line, "forecast_rel_err", json_real(err));
    json_object_set_new(line, "forecast_in_band", json_boolean(in));
    snprintf(note, size, " | forecast %.4f (%+.2f%%%s)", pred, 100 * err, in ? "" : ", OUTSIDE band");
    return !in;
}

// After the run: the verification report, printed and written next to the metrics.
static sx_status watch_finish(void *ctx, const char *run_dir) {
    forecast_watch *w = ctx;
    json_t *report = NULL;
    sx_status st = forecast_check_run(w->doc, run_dir, &report);
    if (!st) {
        printf("forecast check (%s):\n", w->path);
        forecast_print_report(stdout, report);
        st = taskcast_check_into(w->doc, run_dir, report, stdout);
        if (!st) st = runlog_write_json(run_dir, "forecast_report.json", report);
    }
    json_decref(report);
    return st;
}

sx_status forecast_watch_open(forecast_watch *w, const char *path) {
    memset(w, 0, sizeof *w);
    w->path = path;
    sx_status st = fs_load_json(path, &w->doc);
    if (!st) st = forecast_verify_hash(w->doc, path);
    if (st) { forecast_watch_close(w); return st; }
    w->hook = (train_eval_hook){.ctx = w, .start = watch_start, .wants = watch_wants, .on_eval = watch_on_eval, .val_set = watch_val_set,
                                .finish = watch_finish};
    return SX_OK;
}

long forecast_watch_steps(const forecast_watch *w) {
    return (long)json_integer_value(json_object_get(json_object_get(w->doc, "hero"), "steps"));
}

void forecast_watch_close(forecast_watch *w) {
    json_decref(w->doc);
    forecast_points_free(&w->points);
    memset(w, 0, sizeof *w);
}
