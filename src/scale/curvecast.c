// curvecast: fit, forecast and check for curve ladders. See curvecast.h.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "laws/backtest.h"
#include "scale/curvecast.h"
#include "laws/curvefit.h"
#include "laws/perfrac.h"
#include "scale/forecast.h"

sx_status curvecast_fit(const import_ladder *l, size_t loss, bool per_fraction, json_t **fit) {
    *fit = NULL;
    curvefit_options o;
    curvefit_options_default(&o);
    o.loss = loss;
    o.nonembed = -1;
    o.n_offset = NAN;
    unsigned char *all = sx_alloc(l->n_runs ? l->n_runs : 1, "curvecast all");
    if (!all) return sx_fail(SX_ERR_NOMEM, "fit: out of memory");
    memset(all, 1, l->n_runs);
    backtest_choice ch;
    sx_status st = backtest_one_size_back(l, all, &o, &ch);
    if (st)
        st = sx_fail(st, "choosing N one size back (the largest size forecast from those below it; with fewer than 3 "
                     "sizes, each run from the others): %s", sx_last_error());
    curvefit_model m;
    backtest_schedlaw sl = {0};
    if (!st) st = curvefit_fit(l, all, &o, &m);
    if (!st) st = backtest_schedule_law(l, all, &o, &sl);   // one size: the schedule law, chosen by leaving one curve out
    // The per-fraction law, the forecaster above the training sizes where its error one size back is lower
    perfrac_model pf;
    double pf_back = NAN;
    sx_status pst = st ? st : per_fraction ? perfrac_fit(l, all, loss, o.nonembed, &pf) : SX_ERR_ARG;
    if (pst == SX_ERR_NOMEM) st = pst;
    backtest_options bo;
    backtest_options_default(&bo);
    if (!pst) st = perfrac_one_size_back(l, all, loss, o.nonembed, bo.score_from, &pf_back);
    double length_back = NAN, max_tpp = 0;
    if (!st) st = backtest_length_back(l, all, &o, bo.score_from, &length_back, &max_tpp);
    free(all);
    if (st) return st;
    json_t *params = json_object(), *choice = backtest_choice_json(&ch);
    for (size_t j = 0; j < LAW_NDS_NPARAM; j++) json_object_set_new(params, law_nds_param_name(j), json_real(m.p[j]));
    char n_kind[96];
    curvefit_n_name(o.nonembed, o.n_offset, n_kind, sizeof n_kind);
    int given = 1;
    for (size_t i = 0; i < l->n_runs; i++) given &= !isnan(l->runs[i].flops_per_token);
    *fit = json_pack("{s:s, s:i, s:{s:I, s:I, s:s, s:s}, s:s, s:o, s:s, s:o, s:{s:f, s:f, s:f, s:f, s:f}, s:f, s:f}",
                     "kind", "curve-ladder", "version", CURVECAST_VERSION, "ladder", "runs", (json_int_t)m.n_runs, "points",
                     (json_int_t)m.n_points, "loss", l->loss_names[loss], "flops", given ? "given" : "6ND", "law",
                     backtest_law_names[sl.chosen],
                     "params", params, "n_kind", n_kind, "n_choice_inner_rms",
                     choice, "sigma", "noise", m.sigma_noise, "one_size_back", ch.inner_rms, "top_n", ch.top_n, "log_step",
                     ch.log_step, "fit_rms", m.sigma_fit, "in_sample_mean", m.in_mean, "in_sample_max", m.in_max);
    if (*fit && o.n_offset > 0) json_object_set_new(*fit, "n_offset", json_real(o.n_offset));
    if (*fit) json_object_set_new(json_object_get(*fit, "sigma"), "bottom_n", json_real(ch.bottom_n));
    if (*fit && isfinite(length_back)) json_object_set_new(json_object_get(*fit, "sigma"), "length_back", json_real(length_back));
    if (*fit) json_object_set_new(json_object_get(*fit, "sigma"), "max_tokens_per_param", json_real(max_tpp));
    if (*fit && *ch.by_run) json_object_set_new(json_object_get(*fit, "sigma"), "inner_by_run", json_string(ch.by_run));
    if (*fit && sl.fitted) {
        json_t *sj = backtest_schedlaw_json(&sl);
        json_object_set_new(sj, "n_params", json_real(l->runs[0].n_params));
        json_object_set_new(*fit, "schedule_law", sj);
    }
    backtest_schedlaw_free(&sl);
    if (*fit && isfinite(pf_back)) {
        json_t *pj = perfrac_json(&pf);
        json_object_set_new(pj, "one_size_back", json_real(pf_back));
        json_object_set_new(*fit, "perfrac", pj);
        json_object_set_new(*fit, "forecaster_above", json_string(pf_back < PERFRAC_CHOICE_MARGIN * ch.inner_rms ? "perfrac" : "nds"));
    }
    if (!*fit) return sx_fail(SX_ERR_NOMEM, "fit: cannot build fit.json");
    forecast_seal(*fit);
    return SX_OK;
}

static double num(const json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

int curvecast_nonembed(const json_t *fit) {
    const char *nk = json_string_value(json_object_get(fit, "n_kind"));   // as curvefit_n_name writes it
    return nk && !strncmp(nk, "without embeddings", strlen("without embeddings"));
}

sx_status curvecast_params(json_t *fit, double p[LAW_NDS_NPARAM]) {
    json_t *params = json_object_get(fit, "params");
    for (size_t j = 0; j < LAW_NDS_NPARAM; j++) {
        p[j] = num(params, law_nds_param_name(j));
        if (!(p[j] > 0 && isfinite(p[j])) && !(j == LAW_NDS_D && p[j] == 0))
            return sx_fail(SX_ERR_FORMAT, "fit.json: joint-law parameter %s is missing, not positive or not finite (%g)",
                           law_nds_param_name(j), p[j]);
    }
    return SX_OK;
}

sx_status curvecast_forecast(json_t *fit, const import_run *t, const long *steps, size_t n, json_t **fc) {
    *fc = NULL;
    const char *kind = json_string_value(json_object_get(fit, "kind"));
    if (!kind || strcmp(kind, "curve-ladder")) return sx_fail(SX_ERR_FORMAT, "fit.json: not the fit of a curve ladder");
    curvefit_model m = {0};
    json_t *sg = json_object_get(fit, "sigma");
    sx_status pst = curvecast_params(fit, m.p);
    if (pst) return pst;
    m.nonembed = curvecast_nonembed(fit);
    m.n_offset = num(fit, "n_offset");   // absent: 0
    if (!(m.n_offset >= 0)) return sx_fail(SX_ERR_FORMAT, "fit.json: n_offset is negative");
    for (size_t q = 0; q < n; q++)
        if (steps[q] < 1 || steps[q] > t->total_steps || (q && steps[q] <= steps[q - 1]))
            return sx_fail(SX_ERR_ARG, "forecast: steps must increase within [1, %ld] (got %ld)", t->total_steps, steps[q]);
    // the law: the joint law, or on a one-size ladder a schedule law (its parameters in "schedule_law")
    const char *law_name = json_string_value(json_object_get(fit, "law"));
    backtest_law law = BACKTEST_LAW_NDS;
    for (int k = 1; k < 3; k++)
        if (law_name && !strcmp(law_name, backtest_law_names[k])) law = (backtest_law)k;
    json_t *sl = json_object_get(fit, "schedule_law");
    json_t *sp = law == BACKTEST_LAW_TISSUE ? json_object_get(json_object_get(sl, "tissue"), "params") : json_object_get(sl, "params");
    size_t n_sp = law == BACKTEST_LAW_TISSUE ? LAW_TIS_NPARAM : LAW_MPL_NPARAM;
    double sched_p[LAW_MPL_NPARAM];
    for (size_t j = 0; law != BACKTEST_LAW_NDS && j < n_sp; j++) {
        sched_p[j] = json_number_value(json_array_get(sp, j));
        if (!(sched_p[j] > 0) || json_array_size(sp) != n_sp)
            return sx_fail(SX_ERR_FORMAT, "fit.json: schedule_law %s parameter %zu missing or not positive", law_name, j);
    }
    if (law != BACKTEST_LAW_NDS && t->n_params != num(sl, "n_params"))
        return sx_fail(SX_ERR_ARG, "forecast: the fit's law is the %s law of one size (N %.6g), which forecasts other "
                       "schedules of that size only; the target has N %.6g", law_name, num(sl, "n_params"), t->n_params);
    double N = curvefit_n(t, m.nonembed, m.n_offset), top = num(sg, "top_n"), ls = num(sg, "log_step");
    // above the training sizes: the per-fraction law where fit chose it one size back
    const char *above = json_string_value(json_object_get(fit, "forecaster_above"));
    const int by_pf = law == BACKTEST_LAW_NDS && above && !strcmp(above, "perfrac") && N > top;
    perfrac_model pf;
    if (by_pf && (pst = perfrac_read(json_object_get(fit, "perfrac"), &pf))) return pst;
    double *pred = sx_alloc((n ? n : 1) * sizeof *pred, "curvecast pred");
    if (!pred) return sx_fail(SX_ERR_NOMEM, "forecast: out of memory");
    sx_status st = SX_OK;
    if (by_pf) st = perfrac_predict_shaped(&pf, &m, t, steps, n, pred);
    else st = law == BACKTEST_LAW_NDS ? curvefit_predict(&m, t, steps, n, pred) : backtest_sched_predict(law, sched_p, t, steps, n, pred);
    // size steps beyond the training sizes, above or below (a fit.json before bottom_n: above only)
    double dist = top > 0 ? backtest_size_steps(N, top, num(sg, "bottom_n"), ls) : 1, noise = num(sg, "noise");
    // extrapolation (backtest_extrapolation): the size term or the length term, the larger; a fit.json before
    // length_back: the size term alone
    double size_term, length, max_length;
    json_t *lb = law != BACKTEST_LAW_NDS ? json_object_get(json_object_get(sl, "length_back"), law_name)
                                         : json_object_get(sg, "length_back");
    double length_back = lb ? json_number_value(lb) : NAN;
    if (law != BACKTEST_LAW_NDS) {   // one size: its errors leaving one curve out and one length back; length in steps
        size_term = backtest_sched_size_term(num(json_object_get(sl, "schedule_law_choice"), law_name), length_back);
        length = (double)t->total_steps;
        max_length = (double)json_integer_value(json_object_get(sl, "max_steps"));
        dist = 0;
    } else {   // one size back times the size steps; length in tokens per parameter
        size_term = num(by_pf ? json_object_get(fit, "perfrac") : sg, "one_size_back") * fmax(1, dist);
        length = backtest_tokens_per_param(t, N);
        max_length = num(sg, "max_tokens_per_param");
    }
    double ext = backtest_extrapolation(size_term, length_back, length, max_length);
    double sigma = sqrt(noise * noise + ext * ext), doublings = backtest_length_doublings(length, max_length);
    json_t *pts = json_array();
    for (size_t q = 0; q < n && !st; q++) {
        double tok = (double)steps[q] * t->tokens_per_step;
        json_array_append_new(pts, json_pack("{s:I, s:f, s:f, s:f, s:f, s:f}", "step", (json_int_t)steps[q], "tokens", tok,
                                             "flops", import_run_flops(t, tok), "loss", pred[q], "lo", pred[q] * (1 - 2 * sigma),
                                             "hi", pred[q] * (1 + 2 * sigma)));
    }
    free(pred);
    if (st) { json_decref(pts); return st; }
    const char *flops_rule = !isnan(t->flops_per_token)  ? "given per token"
                             : t->n_given & IMPORT_N_WITH ? "6ND (N with embeddings)"
                                                          : "6ND (N without embeddings: no count with them given)";
    *fc = json_pack("{s:s, s:i, s:s, s:{s:s, s:f, s:f, s:f, s:I, s:f, s:I, s:s}, s:s, s:{s:f, s:f, s:f, s:f}, s:o}", "kind",
                    FORECAST_KIND_CURVE, "version", CURVECAST_VERSION, "law", by_pf ? "perfrac" : backtest_law_names[law], "target", "run", t->id, "n_params", t->n_params,
                    "n_params_nonembed", t->n_nonembed, "tokens_per_step", t->tokens_per_step, "total_steps",
                    (json_int_t)t->total_steps, "peak_lr", t->peak_lr, "warmup_steps", (json_int_t)t->warmup_steps,
                    "schedule", t->schedule, "flops_rule", flops_rule,
                    "sigma", "noise", noise, "extrapolation", ext, "log_distance", dist, "total", sigma, "points", pts);
    if (!*fc) return sx_fail(SX_ERR_NOMEM, "forecast: cannot build the document");
    json_object_set_new(json_object_get(*fc, "sigma"), "length_doublings", json_real(doublings));
    forecast_seal(*fc);
    return SX_OK;
}

sx_status curvecast_check(json_t *fc, const import_ladder *l, const import_run *r, size_t loss, json_t **report) {
    *report = NULL;
    if (!forecast_is_curve(fc))
        return sx_fail(SX_ERR_ARG, "the forecast is not a curve ladder's (it is for a hero trained with sextant: "
                       "`sextant forecast --check RUN_DIR --forecast FILE`)");
    // The run must be the target the forecast describes: its size, batch and length.
    json_t *tg = json_object_get(fc, "target");
    double fn = num(tg, "n_params"), ftps = num(tg, "tokens_per_step");
    long fsteps = (long)json_integer_value(json_object_get(tg, "total_steps"));
    if (fabs(fn / r->n_params - 1) > 1e-9 || fabs(ftps / r->tokens_per_step - 1) > 1e-9 || fsteps != r->total_steps)
        return sx_fail(SX_ERR_MISMATCH, "run '%s' is not the forecast's target: the run has N %.6g, %.6g tokens per step, "
                       "%ld steps; the forecast is for N %.6g, %.6g tokens per step, %ld steps", r->id, r->n_params,
                       r->tokens_per_step, r->total_steps, fn, ftps, fsteps);
    json_t *pts = json_object_get(fc, "points");
    size_t n = json_array_size(pts);
    if (n == 0) return sx_fail(SX_ERR_FORMAT, "forecast: no points");
    json_t *rows = json_array();
    double sum = 0, mx = 0, fin = NAN, in = 0;
    size_t cnt = 0;
    for (size_t q = 0; q < r->n_points; q++) {
        double s = (double)r->step[q];
        if (!(s > 0.1 * (double)r->total_steps)) continue;
        // the forecast at s: log-step interpolation between the points around it (exact at a point)
        size_t k = 0;
        while (k < n && num(json_array_get(pts, k), "step") < s) k++;
        if (k == n) break;
        json_t *b = json_array_get(pts, k);
        double f = num(b, "loss"), lo = num(b, "lo"), hi = num(b, "hi"), sb = num(b, "step");
        if (sb > s) {
            if (k == 0) continue;
            json_t *a = json_array_get(pts, k - 1);
            double sa = num(a, "step"), w = log(s / sa) / log(sb / sa);
            f = num(a, "loss") + w * (f - num(a, "loss"));
            lo = num(a, "lo") + w * (lo - num(a, "lo"));
            hi = num(a, "hi") + w * (hi - num(a, "hi"));
        }
        double y = r->loss[q * l->n_loss + loss], e = fabs(f / y - 1);
        sum += e;
        mx = fmax(mx, e);
        in += y >= lo && y <= hi;
        fin = e;
        cnt++;
        json_array_append_new(rows, json_pack("[I, f, f, f, f]", (json_int_t)r->step[q], y, f, lo, hi));
    }
    if (!cnt) {
        json_decref(rows);
        return sx_fail(SX_ERR_ARG, "forecast --check: run '%s' has no logged point after 10%% within the forecast's steps", r->id);
    }
    *report = json_pack("{s:s, s:I, s:f, s:f, s:f, s:f, s:o}", "run", r->id, "n_points", (json_int_t)cnt, "mean_abs_rel_err",
                        sum / (double)cnt, "max_abs_rel_err", mx, "final_abs_rel_err", fin, "band_coverage", in / (double)cnt,
                        "points", rows);
    return *report ? SX_OK : sx_fail(SX_ERR_NOMEM, "forecast --check: out of memory");
}
