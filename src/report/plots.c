// plots: see plots.h.
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/fsutil.h"
#include "core/status.h"
#include "report/plots.h"
#include "laws/laws.h"
#include "report/svgplot.h"
#include "scale/ladder.h"

#define MAX_SERIES 16
#define MAX_RUNGS 12
static const char *colors[] = {"#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// One chart under construction: the series and the numbers they point at (freed together).
typedef struct {
    svg_series s[MAX_SERIES];
    char labels[MAX_SERIES][80];
    size_t n;
    void *blocks[MAX_SERIES * 2];
    size_t n_blocks;
} chart;

static double *take(chart *c, size_t count) {
    double *p = sx_calloc_n(count ? count : 1, sizeof *p, "plots p");
    if (p) c->blocks[c->n_blocks++] = p;
    return p;
}

static void chart_free(chart *c) {
    for (size_t i = 0; i < c->n_blocks; i++) free(c->blocks[i]);
}

static double num(json_t *o, const char *key) { return json_number_value(json_object_get(o, key)); }
static const char *str(json_t *o, const char *key) {
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "?";
}

// Every rung's seed-mean curve from fit.json against training FLOPs (C x fraction).
static bool add_rungs(chart *c, json_t *fit) {
    json_t *rungs = json_object_get(fit, "rungs"), *fr = json_object_get(json_object_get(fit, "ladder"), "fracs");
    size_t F = json_array_size(fr);
    for (size_t r = 0; r < json_array_size(rungs) && r < MAX_RUNGS; r++) {
        json_t *rung = json_array_get(rungs, r), *loss = json_object_get(rung, "loss");
        double *x = take(c, F), *y = take(c, F);
        if (!x || !y) return false;
        for (size_t f = 0; f < F; f++) {
            x[f] = num(rung, "flops") * json_number_value(json_array_get(fr, f));
            y[f] = json_number_value(json_array_get(loss, f));
        }
        snprintf(c->labels[c->n], sizeof c->labels[0], "rung w%lld", (long long)json_integer_value(json_object_get(rung, "width")));
        c->s[c->n] = (svg_series){.label = c->labels[c->n], .x = x, .y = y, .n = F, .color = colors[c->n % 8]};
        c->n++;
    }
    return true;
}

// x = C * frac and y = scale * KEY at each point of pts, in the chart's memory.
static bool take_curve(chart *c, json_t *pts, double C, const char *key, double scale, double **x, double **y) {
    size_t P = json_array_size(pts);
    if (!(*x = take(c, P)) || !(*y = take(c, P))) return false;
    for (size_t i = 0; i < P; i++) {
        json_t *e = json_array_get(pts, i);
        (*x)[i] = C * num(e, "frac");
        (*y)[i] = scale * num(e, key);
    }
    return true;
}

// The hero's forecast at each point of pts (fields frac, KEY, lo, hi; times scale) as a dashed band series.
static bool add_band(chart *c, json_t *pts, double C, const char *key, double scale, const char *label) {
    size_t P = json_array_size(pts);
    double *x, *y, *lo = take(c, P), *hi = take(c, P);
    if (!lo || !hi || !take_curve(c, pts, C, key, scale, &x, &y)) return false;
    for (size_t i = 0; i < P; i++) {
        lo[i] = scale * num(json_array_get(pts, i), "lo");
        hi[i] = scale * num(json_array_get(pts, i), "hi");
    }
    snprintf(c->labels[c->n], sizeof c->labels[0], "%s", label);
    c->s[c->n] = (svg_series){.label = c->labels[c->n], .x = x, .y = y, .lo = lo, .hi = hi, .n = P, .color = "#d62728",
                              .dashed = true};
    c->n++;
    return true;
}

// One of the forecasters the forecast averages (points' KEY, e.g. loss_joint) as a thin dashed line; nothing
// when the points lack it (a forecast from the per-fraction laws alone).
static bool add_part(chart *c, json_t *pts, double C, const char *key, const char *label, const char *color) {
    size_t P = json_array_size(pts);
    if (!P || !json_is_number(json_object_get(json_array_get(pts, 0), key))) return true;
    double *x, *y;
    if (!take_curve(c, pts, C, key, 1, &x, &y)) return false;
    c->s[c->n++] = (svg_series){.label = label, .x = x, .y = y, .n = P, .color = color, .dashed = true};
    return true;
}

// A check's measured points (rows: frac, observed times scale, inside) as markers, those outside the band
// ringed; nothing when there are none.
static bool add_observed(chart *c, json_t *rows, double C, double scale, const char *label) {
    size_t O = json_array_size(rows);
    if (!O) return true;
    double *ox = take(c, O), *oy = take(c, O);
    bool *out = sx_calloc_n(O, sizeof *out, "plots out");
    if (out) c->blocks[c->n_blocks++] = out;
    if (!ox || !oy || !out) return false;
    for (size_t i = 0; i < O; i++) {
        json_t *e = json_array_get(rows, i);
        ox[i] = C * num(e, "frac");
        oy[i] = scale * num(e, "observed");
        out[i] = !json_is_true(json_object_get(e, "inside"));
    }
    snprintf(c->labels[c->n], sizeof c->labels[0], "%s", label);
    c->s[c->n] = (svg_series){.label = c->labels[c->n], .x = ox, .y = oy, .flagged = out, .n = O, .color = "#000",
                              .markers = true};
    c->n++;
    return true;
}

static sx_status finish(FILE *f, chart *c, const char *title, const char *x_label, const char *y_label, bool ok) {
    if (ok) ok = svgplot_print(f, title, x_label, y_label, c->s, c->n);
    chart_free(c);
    return ok ? SX_OK : sx_fail(SX_ERR_IO, "plot: write failed (disk full?)");
}

sx_status plots_forecast(FILE *f, json_t *fit, json_t *fc, json_t *report) {
    chart c = {0};
    bool ok = !fit || add_rungs(&c, fit);
    json_t *hero = json_object_get(fc, "hero"), *method = json_object_get(fc, "method");
    json_t *rows = report ? json_object_get(report, "rows") : NULL;
    double C = num(hero, "flops");
    json_t *pts = json_object_get(fc, "points");
    ok = ok && add_band(&c, pts, C, "loss", 1, "hero forecast (±2σ band)");
    ok = ok && add_part(&c, pts, C, "loss_per_fraction", "its per-fraction laws", "#ff7f0e");
    ok = ok && add_part(&c, pts, C, "loss_joint", "its joint law", "#17becf");
    ok = ok && add_observed(&c, rows, C, 1, "hero observed");
    char title[512];
    if (report)
        snprintf(title, sizeof title, "Forecast vs observed: run %s (%s, %s) from ladder %s (%s)", str(report, "run"),
                 str(hero, "model"), str(hero, "schedule"), str(method, "ladder"), str(method, "rung_schedule"));
    else
        snprintf(title, sizeof title, "Forecast: hero %s on %s, from ladder %s (%s)", str(hero, "model"), str(hero, "schedule"),
                 str(method, "ladder"), str(method, "rung_schedule"));
    return finish(f, &c, title, "training FLOPs", "validation loss (nats/token)", ok);
}

// Each plot is drawn into memory and written atomically: a failed draw leaves the old file, never half a plot.
sx_status plots_forecast_write(const char *path, json_t *fit, json_t *fc, json_t *report) {
    fs_buffer b;
    sx_status st = fs_buffer_open(&b);
    return st ? st : fs_buffer_commit(&b, path, plots_forecast(b.f, fit, fc, report));
}

sx_status plots_curve(FILE *f, json_t *fc, json_t *report) {
    chart c = {0};
    json_t *pts = json_object_get(fc, "points"), *rows = json_object_get(report, "points"), *t = json_object_get(fc, "target");
    size_t P = json_array_size(pts), O = json_array_size(rows);
    double *x = take(&c, P), *y = take(&c, P), *lo = take(&c, P), *hi = take(&c, P);
    double *ox = take(&c, O), *oy = take(&c, O);
    bool *out = sx_calloc_n(O ? O : 1, sizeof *out, "plots out");
    if (out) c.blocks[c.n_blocks++] = out;
    bool ok = x && y && lo && hi && ox && oy && out;
    for (size_t i = 0; ok && i < P; i++) {
        json_t *e = json_array_get(pts, i);
        x[i] = num(e, "step"), y[i] = num(e, "loss"), lo[i] = num(e, "lo"), hi[i] = num(e, "hi");
    }
    for (size_t i = 0; ok && i < O; i++) {   // [step, observed, forecast, lo, hi]
        json_t *e = json_array_get(rows, i);
        ox[i] = json_number_value(json_array_get(e, 0));
        oy[i] = json_number_value(json_array_get(e, 1));
        out[i] = oy[i] < json_number_value(json_array_get(e, 3)) || oy[i] > json_number_value(json_array_get(e, 4));
    }
    if (ok) {
        c.s[c.n++] = (svg_series){.label = "forecast (±2σ band)", .x = x, .y = y, .lo = lo, .hi = hi, .n = P, .color = "#d62728",
                                  .dashed = true};
        if (O) c.s[c.n++] = (svg_series){.label = "observed", .x = ox, .y = oy, .flagged = out, .n = O, .color = "#000", .markers = true};
    }
    char title[512];
    snprintf(title, sizeof title, "%s %.60s: N %.3g, %lld steps x %.0f tokens, %.60s (law %s)",
             report ? "Forecast vs observed: run" : "Forecast: target", report ? str(report, "run") : str(t, "run"),
             num(t, "n_params"), (long long)json_integer_value(json_object_get(t, "total_steps")), num(t, "tokens_per_step"),
             *str(t, "schedule") ? str(t, "schedule") : "LR column", str(fc, "law"));
    return finish(f, &c, title, "step", "loss", ok);
}

sx_status plots_curve_write(const char *path, json_t *fc, json_t *report) {
    fs_buffer b;
    sx_status st = fs_buffer_open(&b);
    return st ? st : fs_buffer_commit(&b, path, plots_curve(b.f, fc, report));
}

sx_status plots_task(FILE *f, json_t *fc, json_t *report, const char *task) {
    json_t *t = json_object_get(json_object_get(fc, "tasks"), task), *pts = json_object_get(t, "points");
    if (!t) return sx_fail(SX_ERR_ARG, "the forecast has no task %s", task);
    json_t *rows = json_object_get(json_object_get(json_object_get(report, "tasks"), task), "rows");
    json_t *hero = json_object_get(fc, "hero");
    double C = num(hero, "flops");
    size_t O = json_array_size(rows);
    chart c = {0};
    bool law = !strcmp(str(t, "status"), "informative");
    char label[256];
    snprintf(label, sizeof label, "hero forecast (%s%s, 95%% band)", law ? "accuracy law " : "no law: ",
             law ? str(t, "form") : str(t, "status"));
    // in percent, as the check prints them
    bool ok = add_band(&c, pts, C, "acc", 100, label) && add_observed(&c, rows, C, 100, "hero measured");
    char title[512], y_label[160];
    snprintf(title, sizeof title, "Task %s: hero %s%s chained forecast (ladder -> task loss -> accuracy)", task,
             str(hero, "model"), O ? " measured vs its" : "");
    snprintf(y_label, sizeof y_label, "%s accuracy (%%, %.0f items)", task, num(t, "items"));
    return finish(f, &c, title, "training FLOPs", y_label, ok);
}

sx_status plots_tasks_write(const char *path, json_t *fc, json_t *report) {
    const char *name, *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - path) : strlen(path);
    json_t *t;
    sx_status st = SX_OK;
    json_object_foreach(json_object_get(fc, "tasks"), name, t) {
        char file[4200];
        snprintf(file, sizeof file, "%.*s-task-%s.svg", (int)stem, path, name);
        fs_buffer b;
        st = fs_buffer_open(&b);
        if (!st) st = fs_buffer_commit(&b, file, plots_task(b.f, fc, report, name));
        if (st) break;
    }
    return st;
}

sx_status plots_backtest(FILE *f, json_t *report) {
    chart c = {0};
    bool ok = true;
    json_t *nds = json_array_get(json_object_get(report, "methods"), 0), *runs = json_object_get(nds, "runs");
    size_t R = json_array_size(runs), shown = R < PLOTS_BACKTEST_RUNS ? R : PLOTS_BACKTEST_RUNS;
    for (size_t k = 0; ok && k < shown; k++) {
        json_t *run = json_array_get(runs, shown > 1 ? k * (R - 1) / (shown - 1) : 0), *pts = json_object_get(run, "points");
        size_t P = json_array_size(pts);
        double *x = take(&c, P), *obs = take(&c, P), *fc = take(&c, P), *lo = take(&c, P), *hi = take(&c, P);
        bool *out = sx_calloc_n(P ? P : 1, sizeof *out, "plots out");
        if (out) c.blocks[c.n_blocks++] = out;
        ok = x && obs && fc && lo && hi && out;
        bool band = ok && P && json_array_size(json_array_get(pts, 0)) >= 5;
        for (size_t i = 0; ok && i < P; i++) {   // [step, observed, forecast(, lo, hi)]
            json_t *e = json_array_get(pts, i);
            x[i] = json_number_value(json_array_get(e, 0));
            obs[i] = json_number_value(json_array_get(e, 1));
            fc[i] = json_number_value(json_array_get(e, 2));
            lo[i] = band ? json_number_value(json_array_get(e, 3)) : NAN;
            hi[i] = band ? json_number_value(json_array_get(e, 4)) : NAN;
            out[i] = band && (obs[i] < lo[i] || obs[i] > hi[i]);
        }
        if (!ok) break;
        const char *color = colors[k % 8];
        snprintf(c.labels[c.n], sizeof c.labels[0], "%.60s observed", str(run, "run"));
        c.s[c.n] = (svg_series){.label = c.labels[c.n], .x = x, .y = obs, .flagged = band ? out : NULL, .n = P, .color = color,
                                .markers = true};
        c.n++;
        snprintf(c.labels[c.n], sizeof c.labels[0], "%.50s forecast%s", str(run, "run"), band ? " (±2σ band)" : "");
        c.s[c.n] = (svg_series){.label = c.labels[c.n], .x = x, .y = fc, .lo = band ? lo : NULL, .hi = band ? hi : NULL, .n = P,
                                .color = color, .dashed = true};
        c.n++;
    }
    char title[512], train[256] = "";
    json_t *g;
    size_t i, used = 0;
    json_array_foreach(json_object_get(report, "train"), i, g) {   // the training groups, cut short if many
        if (used >= sizeof train) break;
        used += (size_t)snprintf(train + used, sizeof train - used, "%s%.40s", i ? ", " : "", str(g, "group"));
    }
    snprintf(title, sizeof title, "Backtest: %zu of %zu held-out runs forecast from %s (mean |err| %.3f%%, max %.3f%%)", shown, R,
             train, 100 * num(nds, "mean_abs_rel_err"), 100 * num(nds, "max_abs_rel_err"));
    return finish(f, &c, title, "step", "loss", ok);
}

sx_status plots_backtest_write(const char *path, json_t *report) {
    fs_buffer b;
    sx_status st = fs_buffer_open(&b);
    return st ? st : fs_buffer_commit(&b, path, plots_backtest(b.f, report));
}

sx_status plots_ladder(FILE *f, json_t *fit) {
    chart c = {0};
    bool ok = add_rungs(&c, fit);
    json_t *law = json_object_get(fit, "final_loss_vs_compute"), *p = json_object_get(law, "params");
    json_t *rungs = json_object_get(fit, "rungs"), *ladder = json_object_get(fit, "ladder");
    if (ok && p && json_array_size(rungs)) {
        double c0 = INFINITY, c1 = 0;
        for (size_t r = 0; r < json_array_size(rungs); r++) {
            double C = num(json_array_get(rungs, r), "flops");
            c0 = fmin(c0, C);
            c1 = fmax(c1, C);
        }
        enum { K = 40 };
        double *x = take(&c, K), *y = take(&c, K);
        ok = x && y;
        for (size_t k = 0; ok && k < K; k++) {   // from the smallest rung to 10x the largest
            x[k] = c0 * pow(10 * c1 / c0, (double)k / (K - 1));
            y[k] = num(p, "Linf") + num(p, "A") * pow(x[k], -num(p, "alpha"));
        }
        if (ok) c.s[c.n++] = (svg_series){.label = "final-loss law L(C)", .x = x, .y = y, .n = K, .color = "#d62728", .dashed = true};
    }
    char title[512];
    snprintf(title, sizeof title, "Ladder %s (%s): rung curves and the final-loss law", str(ladder, "name"), str(ladder, "schedule"));
    return finish(f, &c, title, "training FLOPs", "validation loss (nats/token)", ok);
}

sx_status plots_run(FILE *f, const char *name, const rundir_run *run) {
    chart c = {0};
    size_t every = run->n_steps / 500 + 1, n = (run->n_steps + every - 1) / every;
    double *x = take(&c, n), *y = take(&c, n), *ex = take(&c, run->n_evals), *ey = take(&c, run->n_evals);
    bool ok = x && y && ex && ey;
    double per_step = run->total_steps > 0 ? (double)run->total_tokens / (double)run->total_steps : 0;
    for (size_t i = 0; ok && i < n; i++) {
        x[i] = per_step * (double)(i * every + 1);
        y[i] = run->train_loss[i * every];
    }
    for (size_t i = 0; ok && i < run->n_evals; i++) {
        ex[i] = run->evals[i].tokens;
        ey[i] = run->evals[i].val_loss;
    }
    if (ok) c.s[c.n++] = (svg_series){.label = "training loss", .x = x, .y = y, .n = n, .color = "#9ab"};
    if (ok && run->n_evals) c.s[c.n++] = (svg_series){.label = "validation loss", .x = ex, .y = ey, .n = run->n_evals,
                                                      .color = "#000", .markers = true};
    const char *sched = json_string_value(json_object_get(json_object_get(run->config, "schedule"), "spec"));
    char title[512];
    snprintf(title, sizeof title, "Run %s: %s, schedule %s", name, run->model, sched ? sched : "?");
    return finish(f, &c, title, "tokens seen", "loss (nats/token)", ok);
}

sx_status plots_compare(const char *path, json_t *r) {
    static const char *variant_colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
    json_t *rows = json_object_get(r, "variants");
    size_t k = 0;
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
                            .color = variant_colors[i % 6], .markers = true};
        k++;
        for (size_t j = 0; j < 16; j++) {
            buf[k][0][j] = lo * pow(C / lo, (double)j / 15);
            buf[k][1][j] = law_power_eval(p, buf[k][0][j]);
        }
        s[k++] = (svg_series){.label = "fit", .x = buf[k - 1][0], .y = buf[k - 1][1], .n = 16, .color = variant_colors[i % 6], .dashed = true};
    }
    char title[512] = "Final loss vs compute, ladders";   // named, as every chart is
    for (size_t i = 0; i < json_array_size(rows); i++)
        snprintf(title + strlen(title), sizeof title - strlen(title), "%s %s", i ? "," : "",
                 json_string_value(json_object_get(json_array_get(rows, i), "name")));
    return svgplot_write(path, title, "training FLOPs", "final validation loss", s, k);
}
