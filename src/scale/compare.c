#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "model/config.h"
#include "scale/compare.h"
#include "scale/fit.h"
#include "model/flops.h"
#include "scale/ladder_data.h"
#include "scale/laws.h"
#include "scale/svgplot.h"

#define N_BOOT 200

typedef struct {
    size_t R;
    double x[LADDER_MAX_RUNGS], y[LADDER_MAX_RUNGS];
    double p[LAW_POW_NPARAM];
    double *boot;            // (N_BOOT, LAW_POW_NPARAM)
    double kv_bytes, params;
    char largest[128];
} variant;

// Final-loss fit of one ladder and its seed bootstrap (pin: NaN-free array to pin Linf, or NULL).
static sx_status fit_variant(const ladder_spec *spec, const char *dir, const double *pin, uint64_t seed, variant *v) {
    ladder_data d;
    sx_status st = ladder_data_read(spec, dir, &d);
    if (st) { ladder_data_free(&d); return st; }
    size_t R = spec->n_rungs, S = spec->n_seeds, F = spec->n_eval;
    if (R < 3 || fabs(spec->eval_at[F - 1] - 1) > 1e-9) {
        ladder_data_free(&d);
        return sx_fail(SX_ERR_ARG, "%s: comparison needs >= 3 rungs evaluated at the end of the run", spec->spec_path);
    }
    double *mean = malloc(R * F * sizeof *mean);
    size_t *pick = malloc(R * S * sizeof *pick);
    v->R = R;
    v->boot = malloc(N_BOOT * LAW_POW_NPARAM * sizeof *v->boot);
    ladder_rung_curves(&d, NULL, mean, NULL);
    for (size_t r = 0; r < R; r++) { v->x[r] = d.plan[r * S].flops; v->y[r] = mean[r * F + F - 1]; }
    model_config c;
    size_t vocab = (size_t)json_integer_value(json_object_get(json_object_get(d.runs[0].config, "model_config"), "vocab"));
    snprintf(v->largest, sizeof v->largest, "%s", d.plan[0].descriptor);
    if (model_config_parse(d.plan[0].descriptor, vocab, &c) == SX_OK) {
        model_flops mf = model_flops_count(&c, spec->seq);
        v->kv_bytes = mf.kv_cache_bytes_per_token;
        v->params = mf.params_active;
    }
    fit_options fo;
    fit_options_default(&fo);
    fo.pin = pin;
    fit_law law;
    fit_result res;
    st = law_power_bind(v->x, R, &law);
    if (!st) st = fit_law_run(&law, v->y, NULL, &fo, &res);
    if (!st) {
        memcpy(v->p, res.params, sizeof v->p);
        fit_result_free(&res);
        rng_state rng;
        rng_seed(&rng, seed);
        double y[LADDER_MAX_RUNGS], obj;
        for (int b = 0; b < N_BOOT; b++) {
            for (size_t i = 0; i < R * S; i++) pick[i] = S > 1 ? rng_below(&rng, S) : 0;
            ladder_rung_curves(&d, pick, mean, NULL);
            for (size_t r = 0; r < R; r++) y[r] = mean[r * F + F - 1];
            if (fit_refine(&law, y, NULL, &fo, v->p, v->boot + b * LAW_POW_NPARAM, &obj))
                memcpy(v->boot + b * LAW_POW_NPARAM, v->p, sizeof v->p);
        }
        fit_law_free(&law);
    }
    free(mean);
    free(pick);
    ladder_data_free(&d);
    return st;
}

// Compute multiplier of a variant at loss l_var over the baseline law p at target compute C.
static double multiplier(const double *p, double C, double l_var) {
    double l_base = law_power_eval(p, C);
    if (!(l_var > p[LAW_POW_LINF])) return INFINITY;
    return pow((l_base - p[LAW_POW_LINF]) / (l_var - p[LAW_POW_LINF]), 1 / p[LAW_POW_ALPHA]);
}

static json_t *doubles(const double *x, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, isfinite(x[i]) ? json_real(x[i]) : json_null());
    return a;
}

sx_status compare_ladders(const ladder_spec *specs, const char *const *dirs, size_t n, double C, bool shared_linf,
                          json_t **report) {
    variant *v = calloc(n, sizeof *v);
    double pin[LAW_POW_NPARAM] = {NAN, NAN, NAN};
    sx_status st = SX_OK;
    for (size_t i = 0; i < n && !st; i++) {
        st = fit_variant(&specs[i], dirs[i], i && shared_linf ? pin : NULL, 1000 + i, &v[i]);
        if (!st && i == 0) pin[LAW_POW_LINF] = v[0].p[LAW_POW_LINF];
    }
    json_t *rows = json_array();
    double *lb = malloc(N_BOOT * sizeof *lb), *mb = malloc(N_BOOT * sizeof *mb);
    for (size_t i = 0; i < n && !st; i++) {
        for (int b = 0; b < N_BOOT; b++) {
            lb[b] = law_power_eval(v[i].boot + b * LAW_POW_NPARAM, C);
            mb[b] = multiplier(v[0].boot + b * LAW_POW_NPARAM, C, lb[b]);
        }
        double loss = law_power_eval(v[i].p, C), mult = multiplier(v[0].p, C, loss);
        double llo = fit_quantile(lb, N_BOOT, 0.025), lhi = fit_quantile(lb, N_BOOT, 0.975);
        double mlo = fit_quantile(mb, N_BOOT, 0.025), mhi = fit_quantile(mb, N_BOOT, 0.975);
        const char *verdict = i == 0 ? "baseline" : mlo > 1 ? "better than the baseline" : mhi < 1 ? "worse than the baseline"
                                                                                              : "no significant difference";
        json_t *row = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "name", specs[i].name, "largest_rung", v[i].largest,
                                "verdict", verdict, "params", doubles(v[i].p, LAW_POW_NPARAM), "rung_flops",
                                doubles(v[i].x, v[i].R), "rung_loss", doubles(v[i].y, v[i].R));
        const char *keys[] = {"loss", "loss_lo", "loss_hi", "multiplier", "multiplier_lo", "multiplier_hi",
                              "kv_bytes_per_token", "active_params_largest"};
        const double vals[] = {loss, llo, lhi, mult, mlo, mhi, v[i].kv_bytes, v[i].params};
        for (size_t k = 0; k < sizeof vals / sizeof *vals; k++)   // an unbounded multiplier is written as null
            json_object_set_new(row, keys[k], isfinite(vals[k]) ? json_real(vals[k]) : json_null());
        json_array_append_new(rows, row);
    }
    if (!st) *report = json_pack("{s:f, s:b, s:i, s:o}", "target_flops", C, "shared_linf", shared_linf, "bootstrap", N_BOOT, "variants", rows);
    else json_decref(rows);
    for (size_t i = 0; i < n; i++) free(v[i].boot);
    free(v);
    free(lb);
    free(mb);
    return st;
}

void compare_print(FILE *out, json_t *r) {
    json_t *rows = json_object_get(r, "variants");
    fprintf(out, "at %.3g training FLOPs (95%% seed-bootstrap intervals%s):\n", json_number_value(json_object_get(r, "target_flops")),
            json_is_true(json_object_get(r, "shared_linf")) ? ", Linf shared" : "");
    fprintf(out, "%-18s %-24s %22s %24s %10s  %s\n", "variant", "largest rung", "projected loss", "compute multiplier", "KV B/tok", "verdict");
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i);
#define N(k) (json_is_null(json_object_get(e, k)) ? INFINITY : json_number_value(json_object_get(e, k)))
        fprintf(out, "%-18s %-24s %7.4f [%6.4f, %6.4f] %7.3fx [%5.3f, %6.3f] %10.0f  %s\n", json_string_value(json_object_get(e, "name")),
                json_string_value(json_object_get(e, "largest_rung")), N("loss"), N("loss_lo"), N("loss_hi"), N("multiplier"),
                N("multiplier_lo"), N("multiplier_hi"), N("kv_bytes_per_token"), json_string_value(json_object_get(e, "verdict")));
#undef N
    }
}

sx_status compare_plot(const char *path, json_t *r) {
    static const char *colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
    json_t *rows = json_object_get(r, "variants");
    size_t n = json_array_size(rows) < 3 ? json_array_size(rows) : 3, k = 0;
    double C = json_number_value(json_object_get(r, "target_flops"));
    svg_series s[6];
    double buf[6][2][LADDER_MAX_RUNGS + 16];
    for (size_t i = 0; i < json_array_size(rows) && k + 1 < 6; i++) {
        json_t *e = json_array_get(rows, i), *xf = json_object_get(e, "rung_flops"), *yl = json_object_get(e, "rung_loss");
        size_t R = json_array_size(xf);
        double p[LAW_POW_NPARAM], lo = INFINITY;
        for (size_t j = 0; j < LAW_POW_NPARAM; j++) p[j] = json_number_value(json_array_get(json_object_get(e, "params"), j));
        for (size_t j = 0; j < R; j++) {
            buf[k][0][j] = json_number_value(json_array_get(xf, j));
            buf[k][1][j] = json_number_value(json_array_get(yl, j));
            lo = fmin(lo, buf[k][0][j]);
        }
        s[k] = (svg_series){.label = json_string_value(json_object_get(e, "name")), .x = buf[k][0], .y = buf[k][1], .n = R,
                            .color = colors[i % 6], .markers = true};
        k++;
        for (size_t j = 0; j < 16; j++) {
            buf[k][0][j] = lo * pow(C / lo, (double)j / 15);
            buf[k][1][j] = law_power_eval(p, buf[k][0][j]);
        }
        s[k++] = (svg_series){.label = "fit", .x = buf[k - 1][0], .y = buf[k - 1][1], .n = 16, .color = colors[i % 6], .dashed = true};
    }
    (void)n;
    char title[512] = "Final loss vs compute, ladders";   // named, as every chart is
    for (size_t i = 0; i < json_array_size(rows); i++)
        snprintf(title + strlen(title), sizeof title - strlen(title), "%s %s", i ? "," : "",
                 json_string_value(json_object_get(json_array_get(rows, i), "name")));
    return svgplot_write(path, title, "training FLOPs", "final validation loss", s, k);
}
