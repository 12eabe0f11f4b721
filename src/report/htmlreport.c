// htmlreport: see htmlreport.h.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/lines.h"
#include "core/status.h"
#include "laws/fit.h"
#include "scale/forecast.h"
#include "report/htmlreport.h"
#include "report/plots.h"
#include "scale/taskcast.h"
#include "runs/rundir.h"
#include "report/svgplot.h"

static const char *style =
    "body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222;line-height:1.4}"
    "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;font-size:0.9em}td,th{padding:2px 10px;text-align:right;border-bottom:1px solid #eee}"
    "th{background:#f4f4f4}td.l,th.l{text-align:left}tr.outside td{background:#fdd;font-weight:bold}"
    "pre{background:#f7f7f7;padding:0.8em;overflow-x:auto;font-size:0.85em}figure{margin:1em 0}"
    ".note{color:#666;font-size:0.9em}";

static void head(FILE *f, const char *kind, const char *name) {
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>sextant %s report: ", kind);
    svgplot_escape(f, name);
    fprintf(f, "</title><style>%s</style></head>\n<body>\n<h1>sextant %s report: ", style, kind);
    svgplot_escape(f, name);
    fprintf(f, "</h1>\n");
}

static sx_status tail(FILE *f) {
    fprintf(f, "<p class=\"note\">Written by <code>sextant report</code>. File formats: docs/FORMATS.md; the method: "
               "docs/FORECAST.md.</p>\n</body></html>\n");
    return ferror(f) ? sx_fail(SX_ERR_IO, "report: write failed (disk full?)") : SX_OK;
}

static double num(json_t *o, const char *key) { return json_number_value(json_object_get(o, key)); }

// JSON pretty-printed inside <pre>, escaped.
static void pre_json(FILE *f, json_t *j) {
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    fprintf(f, "<pre>");
    svgplot_escape(f, text ? text : "(unprintable)");
    fprintf(f, "</pre>\n");
    free(text);
}

static void pre_file(FILE *f, const char *path) {
    FILE *in = fopen(path, "r");
    fprintf(f, "<pre>");
    if (!in) {
        fprintf(f, "(cannot read ");
        svgplot_escape(f, path);
        fprintf(f, ")");
    }
    line_reader r;
    line_reader_init(&r, in);
    while (line_reader_next(&r)) svgplot_escape(f, r.line);
    line_reader_close(&r);
    fprintf(f, "</pre>\n");
}

// A value with its 95% bootstrap percentile interval over column j of the boot rows ([[p0, p1, ...], ...]).
static void cell_with_interval(FILE *f, double value, json_t *boot, size_t j) {
    size_t B = json_array_size(boot);
    fprintf(f, "<td>%.4g", value);
    double *x = B ? sx_alloc(B * sizeof *x, "htmlreport") : NULL;
    if (x) {
        for (size_t b = 0; b < B; b++) x[b] = json_number_value(json_array_get(json_array_get(boot, b), j));
        fprintf(f, " [%.4g, %.4g]", fit_quantile(x, B, 0.025), fit_quantile(x, B, 0.975));
    }
    free(x);
    fprintf(f, "</td>");
}

static void laws(FILE *f, json_t *fit) {
    json_t *pf = json_object_get(fit, "per_fraction"), *fl = json_object_get(fit, "final_loss_vs_compute");
    fprintf(f, "<section id=\"laws\"><h2>Fitted laws</h2>\n");
    if (fl) {
        json_t *p = json_object_get(fl, "params"), *bt = json_object_get(fl, "backtest");
        fprintf(f, "<p>Final loss vs compute: <b>L(C) = %.4f + %.4g&middot;C<sup>&minus;%.4f</sup></b> (in-sample mean |error| "
                   "%.2f%%; leave-one-rung-out mean %.2f%%, worst %.2f%%).</p>\n", num(p, "Linf"), num(p, "A"), num(p, "alpha"),
                100 * num(fl, "mean_abs_rel_err"), 100 * num(bt, "mean_abs_rel_err"), 100 * num(bt, "max_abs_rel_err"));
    } else
        fprintf(f, "<p>Final loss vs compute: not fitted (it needs at least 4 rungs).</p>\n");
    fprintf(f, "<p>Per training fraction f: L<sub>f</sub>(C) = L&infin; + A&middot;C<sup>&minus;&alpha;</sup> across rungs, "
               "with 95%% seed-bootstrap intervals.</p>\n<table><tr><th>f</th><th>L&infin;</th><th>A</th><th>&alpha;</th>"
               "<th>mean |error|</th><th>worst</th></tr>\n");
    static const char *names[] = {"Linf", "A", "alpha"};
    for (size_t i = 0; i < json_array_size(pf); i++) {
        json_t *e = json_array_get(pf, i), *fitd = json_object_get(e, "fit"), *p = json_object_get(fitd, "params");
        fprintf(f, "<tr class=\"law\"><td>%.3f</td>", num(e, "frac"));
        for (size_t j = 0; j < 3; j++) cell_with_interval(f, num(p, names[j]), json_object_get(e, "boot"), j);
        fprintf(f, "<td>%.2f%%</td><td>%.2f%%</td></tr>\n", 100 * num(fitd, "mean_abs_rel_err"), 100 * num(fitd, "max_abs_rel_err"));
    }
    fprintf(f, "</table>\n");
    json_t *jl = json_object_get(fit, "joint_law"), *jp = json_object_get(jl, "params");
    if (jl)
        fprintf(f, "<p>Joint law over size, LR-shape-weighted tokens S and annealing LD, fitted to every run (the forecast "
                   "is the mean of its forecast and the per-fraction laws'): <b>L = %.4g + %.4g&middot;N<sup>&minus;%.4g</sup> + "
                   "%.4g&middot;N<sup>%.3g</sup>&middot;S<sup>&minus;%.4g</sup> &minus; %.4g&middot;LD(C = %.3g, g = %.3g)</b> "
                   "(N %s; in-sample mean |error| %.2f%%; one size back %.2f%%).</p>\n", num(jp, "E"), num(jp, "A"),
                num(jp, "alpha"), num(jp, "B"), num(jp, "eps"), num(jp, "beta"), num(jp, "D"), num(jp, "C"), num(jp, "g"),
                json_string_value(json_object_get(jl, "n_kind")), 100 * num(jl, "in_sample_mean"),
                100 * num(json_object_get(jl, "sigma"), "one_size_back"));
    json_t *sl = json_object_get(json_object_get(fit, "schedule_law"), "per_rung");
    if (json_array_size(sl)) {
        fprintf(f, "<p>Schedule law per rung (multi-power law, L(t) = L0 + A&middot;S1(t)<sup>&minus;&alpha;</sup> &minus; "
                   "B&middot;LD(t)):</p>\n<table><tr><th>width</th><th>curves</th><th>L0</th><th>A</th><th>B</th><th>&alpha;</th>"
                   "<th>C</th><th>&beta;</th><th>&gamma;</th><th>mean |error|</th><th>worst</th></tr>\n");
        for (size_t i = 0; i < json_array_size(sl); i++) {
            json_t *e = json_array_get(sl, i), *p = json_object_get(e, "params");
            fprintf(f, "<tr><td>%lld</td><td>%lld</td>", (long long)json_integer_value(json_object_get(e, "width")),
                    (long long)json_integer_value(json_object_get(e, "curves")));
            for (size_t j = 0; j < json_array_size(p); j++) fprintf(f, "<td>%.4g</td>", json_number_value(json_array_get(p, j)));
            fprintf(f, "<td>%.2f%%</td><td>%.2f%%</td></tr>\n", 100 * num(e, "mean_abs_rel_err"), 100 * num(e, "max_abs_rel_err"));
        }
        fprintf(f, "</table>\n");
    }
    fprintf(f, "</section>\n");
}

sx_status htmlreport_ladder(FILE *f, const ladder_spec *spec, const char *runs_dir, json_t *fit) {
    ladder_run *runs;
    ladder_run_state *state;
    size_t n, done = 0;
    sx_status st = ladder_status(spec, runs_dir, &runs, &state, &n, &done);
    if (st) return st;
    head(f, "ladder", spec->name);
    fprintf(f, "<section id=\"summary\"><p>Spec <code>");
    svgplot_escape(f, spec->spec_path);
    fprintf(f, "</code>, runs in <code>");
    svgplot_escape(f, runs_dir);
    fprintf(f, "</code>: model <code>");
    svgplot_escape(f, spec->model);
    size_t most = spec->n_seeds;   // a rung compare --until-decided gave more seeds (seeds.json) holds more
    for (size_t r = 0; r < spec->n_rungs; r++) most = ladder_rung_seeds(spec, r) > most ? ladder_rung_seeds(spec, r) : most;
    fprintf(f, "</code>, %zu rungs &times; %zu seeds", spec->n_rungs, spec->n_seeds);
    if (most > spec->n_seeds) fprintf(f, " (up to %zu on some rungs)", most);
    fprintf(f, ", schedule <code>");
    svgplot_escape(f, spec->schedule);
    fprintf(f, "</code>; <b>%zu of %zu runs done</b>.</p></section>\n", done, n);
    fprintf(f, "<section id=\"plots\"><h2>Curves</h2>\n");
    if (fit) {
        fprintf(f, "<figure>");
        st = plots_ladder(f, fit);
        fprintf(f, "</figure>\n");
    } else
        fprintf(f, "<p>Not fitted yet: run <code>sextant fit %s</code> when the ladder is done.</p>\n", spec->spec_path);
    fprintf(f, "</section>\n<section id=\"status\"><h2>Runs</h2>\n<table><tr><th class=\"l\">run</th><th class=\"l\">model</th>"
               "<th>steps</th><th>batch</th><th>peak LR</th><th>FLOPs</th><th>val loss</th><th class=\"l\">state</th></tr>\n");
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "<tr><td class=\"l\">%s</td><td class=\"l\">%s</td><td>%ld/%ld</td><td>%zu</td><td>%.3g</td><td>%.3g</td>"
                   "<td>%s</td><td class=\"l\">%s</td></tr>\n", runs[i].dir, runs[i].descriptor, state[i].steps_done, runs[i].steps,
                runs[i].batch, runs[i].lr, runs[i].flops, state[i].val_text, state[i].name);
    }
    fprintf(f, "</table></section>\n");
    free(runs);
    free(state);
    if (fit) laws(f, fit);
    fprintf(f, "<section id=\"config\"><h2>Configuration (the ladder spec)</h2>\n");
    pre_file(f, spec->spec_path);
    fprintf(f, "</section>\n");
    sx_status t = tail(f);
    return st ? st : t;
}

static void verification(FILE *f, json_t *r) {
    json_t *rows = json_object_get(r, "rows"), *final = json_object_get(r, "final_rel_err");
    char final_text[32] = "not reached yet";
    if (json_is_number(final)) snprintf(final_text, sizeof final_text, "%+.2f%%", 100 * json_number_value(final));
    size_t outside = 0;
    for (size_t i = 0; i < json_array_size(rows); i++) outside += !json_is_true(json_object_get(json_array_get(rows, i), "inside"));
    fprintf(f, "<section id=\"verification\"><h2>Check against the forecast</h2>\n<p>%lld points; mean |error| after 10%%: "
               "%.2f%%; worst: %.2f%%; final loss error: %s; <b>inside the band: %.0f%%</b> (%zu outside); mean band half-width: "
               "&plusmn;%.2f%%. The band is &plusmn;2&sigma; around the forecast; &plusmn; below is its half-width relative to "
               "the forecast.</p>\n", (long long)json_integer_value(json_object_get(r, "points")),
            100 * num(r, "mean_abs_rel_err_after_10pct"), 100 * num(r, "max_abs_rel_err_after_10pct"), final_text,
            100 * num(r, "inside_band_frac"), outside, 100 * num(r, "mean_band_halfwidth_rel"));
    fprintf(f, "<table><tr><th>fraction</th><th>step</th><th>observed</th><th>forecast</th><th>band &plusmn;</th><th>error</th>"
               "<th class=\"l\">in band</th></tr>\n");
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i);
        bool in = json_is_true(json_object_get(e, "inside"));
        double fc = num(e, "forecast");
        fprintf(f, "<tr class=\"%s\"><td>%.3f</td><td>%lld</td><td>%.4f</td><td>%.4f</td><td>%.2f%%</td><td>%+.2f%%</td>"
                   "<td class=\"l\">%s</td></tr>\n", in ? "inside" : "outside", num(e, "frac"),
                (long long)json_integer_value(json_object_get(e, "step")), num(e, "observed"), fc,
                50 * (num(e, "hi") - num(e, "lo")) / fc, 100 * num(e, "rel_err"), in ? "yes" : "NO");
    }
    fprintf(f, "</table></section>\n");
}

sx_status htmlreport_run(FILE *f, const char *run_dir, json_t *fc, json_t *fit) {
    rundir_run run;
    sx_status st = rundir_read(run_dir, &run);
    if (st) { rundir_free(&run); return st; }
    json_t *report = NULL;
    if (fc && ((st = forecast_check_run(fc, run_dir, &report)) || (st = taskcast_check_into(fc, run_dir, report, NULL)))) {
        json_decref(report);
        rundir_free(&run);
        return st;
    }
    head(f, "run", run_dir);
    const char *sched = json_string_value(json_object_get(json_object_get(run.config, "schedule"), "spec"));
    double last_val = run.n_evals ? run.evals[run.n_evals - 1].val_loss : NAN;
    fprintf(f, "<section id=\"summary\"><p>Model <code>%s</code> (%lld parameters, %lld non-embedding), schedule <code>",
            run.model, (long long)run.n_params, (long long)run.n_params_nonembed);
    svgplot_escape(f, sched ? sched : "?");
    fprintf(f, "</code>, %lld tokens in %lld steps: <b>%zu of %lld steps logged%s</b>", (long long)run.total_tokens,
            (long long)run.total_steps, run.n_steps, (long long)run.total_steps, run.done ? ", finished" : ", not finished");
    if (isfinite(last_val)) fprintf(f, "; last validation loss %.4f at step %zu", last_val, run.evals[run.n_evals - 1].step);
    fprintf(f, ".</p></section>\n<section id=\"plots\"><h2>Curves</h2>\n<figure>");
    st = plots_run(f, run_dir, &run);
    fprintf(f, "</figure>\n");
    if (!st && fc) {
        fprintf(f, "<figure>");
        st = plots_forecast(f, fit, fc, report);
        fprintf(f, "</figure>\n");
    }
    const char *task;
    json_t *forecast_task;
    json_object_foreach(fc ? json_object_get(fc, "tasks") : NULL, task, forecast_task) {   // each task the hero was forecast on
        if (st) break;
        fprintf(f, "<figure>");
        st = plots_task(f, fc, report, task);
        fprintf(f, "</figure>\n");
    }
    fprintf(f, "</section>\n");
    if (report) verification(f, report);
    else fprintf(f, "<section id=\"verification\"><h2>Check against a forecast</h2><p>This run was not trained against a "
                    "forecast (<code>train --forecast</code>), and none was given (<code>report --forecast</code>).</p></section>\n");
    fprintf(f, "<section id=\"config\"><h2>Configuration (config.json)</h2>\n");
    pre_json(f, run.config);
    fprintf(f, "</section>\n");
    json_decref(report);
    rundir_free(&run);
    sx_status t = tail(f);
    return st ? st : t;
}
