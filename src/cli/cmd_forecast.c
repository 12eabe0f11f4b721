// sextant forecast: a hero run's whole validation-loss curve from fit.json (with a band and a hash), or,
// with --check, the comparison of a run with a frozen forecast. Both can draw an SVG.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/status.h"
#include "cli/commands.h"
#include "core/flags.h"
#include "core/fsutil.h"
#include "data/mixture.h"
#include "data/shard.h"
#include "model/config.h"
#include "scale/curvecast.h"
#include "scale/datafit.h"
#include "scale/forecast.h"
#include "runs/import.h"
#include "scale/lrsweep.h"
#include "runs/rundir.h"
#include "report/plots.h"
#include "scale/taskcast.h"

static json_t *load(const char *path, sx_status *st) {
    json_t *j = NULL;
    *st = fs_load_json(path, &j);
    return j;
}

// The hero's unique tokens: --unique-tokens, else the ladder's training shard (or mixture) size, from the
// shards' headers; 0 when unknown. what[] says where the number comes from.
static double hero_unique_tokens(const json_t *fit, double given, char *what, size_t size) {
    const char *train = json_string_value(json_object_get(json_object_get(fit, "ladder"), "train"));
    double n = 0;
    shard_header h;
    if (given > 0) n = given, train = "--unique-tokens";
    else if (!train || strncmp(train, "synthetic:", 10) == 0) return 0;
    else if (mixture_is_spec(train)) {
        mixture_spec m;
        if (mixture_spec_load(train, &m) != SX_OK) return 0;
        for (size_t k = 0; k < m.n; k++) {
            if (shard_read_header(m.src[k].train, &h) != SX_OK) return 0;
            n += (double)h.n_tokens;
        }
    } else if (shard_read_header(train, &h) == SX_OK) n = (double)h.n_tokens;
    snprintf(what, size, "%s (%.0f tokens)", train, n);
    return n;
}

// A hero that needs more tokens than it has unique ones repeats data, which the fresh-data laws do not
// model: the data-constrained law (fit --with) corrects the forecast, else a warning says it is optimistic.
// Either way forecast.json's method says which law was used.
static sx_status apply_data_law(json_t *fit, json_t *fc, double unique, const char *what) {
    json_t *dc = json_object_get(fit, "data_constrained");
    sx_status st = datafit_apply(fc, dc, unique);
    if (st) return st;
    forecast_seal(fc);
    json_t *dl = json_object_get(json_object_get(fc, "method"), "data_law");
    double passes = json_number_value(json_object_get(dl, "passes"));
    if (passes > 1 && dc)
        printf("the hero repeats data (%.2f passes over %s): forecast from the data-constrained law "
               "(Rstar %.3g), final loss +%.4f over the fresh-data forecast\n", passes, what,
               json_number_value(json_object_get(dl, "Rstar")), json_number_value(json_object_get(dl, "final_penalty")));
    json_t *overfit = json_object_get(dc, "overfits_from_passes");
    if (passes > 1 && json_is_number(overfit) && passes > json_number_value(overfit))
        fprintf(stderr, "sextant forecast: warning: the hero's %.2f passes go past %.2f, where the data-limited twins "
                "stopped improving (their loss rose as they trained on): the law models diminishing returns, not "
                "that, so the forecast is optimistic there\n", passes, json_number_value(overfit));
    if (passes > 1 && !dc)
        fprintf(stderr, "sextant forecast: warning: the hero's tokens are %.2f passes over %s; the ladder's laws "
                "assume fresh data, so the forecast is optimistic where the data repeats (fit with --with a "
                "data-limited ladder to model it)\n", passes, what);
    return SX_OK;
}

// ---- curve ladders (sextant import) --------------------------------------------------------------------

typedef struct {
    const char *ladder, *run, *check_run, *steps, *schedule, *fc_path, *out, *loss, *plot;
    double n_params, n_nonembed, tokens_per_step, peak_lr, tokens, warmup;
    long total_steps, warmup_steps, every;
} curve_args;

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

// steps "a,b,c" (any order, repeats dropped); else every --every steps and the last; else the target's logged
// steps; else every ladder_every steps (the ladder's runs' cadence, 0: none) and the last; else every 1%.
static sx_status curve_steps(const curve_args *a, const import_run *t, long ladder_every, long **steps, size_t *n) {
    size_t cap = 128;
    *n = 0;
    *steps = sx_alloc(cap * sizeof **steps, "cmd_forecast steps");
    if (!*steps) return sx_fail(SX_ERR_NOMEM, "forecast: out of memory");
    for (const char *p = a->steps; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',')) return sx_fail(SX_ERR_ARG, "--steps: '%s' is not a list of step numbers", a->steps);
        if (*n == cap) {
            long *s = sx_realloc(*steps, (cap *= 2) * sizeof *s, "cmd_forecast s");
            if (!s) return sx_fail(SX_ERR_NOMEM, "forecast: out of memory");
            *steps = s;
        }
        (*steps)[(*n)++] = v;
        p = *end ? end + 1 : end;
    }
    if (*n) {   // in any order, repeats once: the forecast is a curve over increasing steps
        qsort(*steps, *n, sizeof **steps, cmp_long);
        size_t k = 0;
        for (size_t i = 0; i < *n; i++)
            if (!k || (*steps)[i] != (*steps)[k - 1]) (*steps)[k++] = (*steps)[i];
        *n = k;
        return SX_OK;
    }
    long every = a->every > 0 ? a->every : t->n_points ? 0 : ladder_every;
    size_t want = every ? (size_t)(t->total_steps / every) + 1 : t->n_points ? t->n_points : 101;
    long *s = sx_realloc(*steps, want * sizeof *s, "cmd_forecast s");
    if (!s) return sx_fail(SX_ERR_NOMEM, "forecast: out of memory");
    *steps = s;
    if (every) {
        for (long v = every; v <= t->total_steps; v += every) s[(*n)++] = v;
        if (!*n || s[*n - 1] != t->total_steps) s[(*n)++] = t->total_steps;
    } else if (t->n_points) memcpy(s, t->step, t->n_points * sizeof *s), *n = t->n_points;
    else
        for (long k = 1; k <= 100; k++) {
            long v = lround((double)k * (double)t->total_steps / 100.0);
            if (v >= 1 && (!*n || v > s[*n - 1])) s[(*n)++] = v;
        }
    return SX_OK;
}

static sx_status find_run(const import_ladder *l, const char *dir, const char *id, const import_run **r) {
    for (size_t i = 0; i < l->n_runs; i++)
        if (!strcmp(l->runs[i].id, id)) { *r = &l->runs[i]; return SX_OK; }
    for (size_t i = 0; i < l->n_planned; i++)   // a planned run: a target without evaluations yet
        if (!strcmp(l->planned[i].id, id)) { *r = &l->planned[i]; return SX_OK; }
    return sx_fail(SX_ERR_ARG, "%s has no run '%s'", dir, id);
}

// forecast --fit (a curve ladder's fit.json): the target from --ladder/--run or from the flags.
static sx_status curve_forecast(json_t *fit, const curve_args *a) {
    import_ladder l = {0};
    import_run t = {0};
    const import_run *row = NULL;
    sx_status st = SX_OK;
    if (*a->run && !*a->ladder) return sx_fail(SX_ERR_ARG, "--run needs --ladder (the imported ladder whose runs table holds it)");
    if (*a->ladder) st = import_read_dir(a->ladder, &l);
    if (!st && *a->run) {
        if (!(st = find_run(&l, a->ladder, a->run, &row))) t = *row;
    } else if (!st) {
        const struct { const char *flag; double v; } given[] = {
            {"n-params", a->n_params}, {"n-params-nonembed", a->n_nonembed}, {"tokens-per-step", a->tokens_per_step},
            {"total-steps", (double)a->total_steps}, {"tokens", a->tokens}, {"peak-lr", a->peak_lr}};
        for (size_t i = 0; i < sizeof given / sizeof *given && !st; i++)   // 0 is the flags' "not given"
            if (!(given[i].v >= 0)) st = sx_fail(SX_ERR_ARG, "--%s must be positive, not %g", given[i].flag, given[i].v);
        snprintf(t.id, sizeof t.id, "target");
        t.n_params = a->n_params > 0 ? a->n_params : a->n_nonembed;
        t.n_nonembed = a->n_nonembed > 0 ? a->n_nonembed : a->n_params;
        t.n_given = (a->n_params > 0 ? IMPORT_N_WITH : 0) | (a->n_nonembed > 0 ? IMPORT_N_WITHOUT : 0);
        t.tokens_per_step = a->tokens_per_step;
        t.total_steps = a->total_steps > 0 ? a->total_steps : a->tokens_per_step > 0 ? lround(a->tokens / a->tokens_per_step) : 0;
        t.peak_lr = a->peak_lr > 0 ? a->peak_lr : 1;
        t.warmup_steps = a->warmup_steps >= 0 ? a->warmup_steps : a->warmup > 0 ? lround(a->warmup * (double)t.total_steps) : 0;
        t.flops_per_token = NAN;
        snprintf(t.schedule, sizeof t.schedule, "%s", a->schedule);
        if (!st && (!(t.n_params > 0) || !(t.tokens_per_step > 0) || t.total_steps < 1 || !*t.schedule))
            st = sx_fail(SX_ERR_ARG, "describe the target: --n-params (or --n-params-nonembed), --tokens-per-step, --total-steps "
                         "(or --tokens), --schedule [--warmup-steps] -- or give --ladder DIR --run ID");
    }
    // The count the fit's law reads must be given: the other one in its place would forecast another size.
    const char *nk = json_string_value(json_object_get(fit, "n_kind"));
    int without = curvecast_nonembed(fit);
    if (!st && nk && !(t.n_given & (without ? IMPORT_N_WITHOUT : IMPORT_N_WITH)))
        st = *a->run  ? sx_fail(SX_ERR_ARG, "the fit's law reads N %s, which %s's runs table does not give for run '%s'",
                                without ? "without embeddings" : "with embeddings", a->ladder, t.id)
             : without ? sx_fail(SX_ERR_ARG, "the fit's law reads N without embeddings: give --n-params-nonembed (the "
                                 "target's parameters without embeddings), not only --n-params")
                       : sx_fail(SX_ERR_ARG, "the fit's law reads N with embeddings (%s): give --n-params, not only "
                                 "--n-params-nonembed", nk);
    const char *law = json_string_value(json_object_get(fit, "law"));
    int sched_law = law && strcmp(law, "nds");   // a schedule law of one size (mpl, tissue) sums the absolute LR
    if (!st && !*a->run && !(a->peak_lr > 0) && sched_law)
        st = sx_fail(SX_ERR_ARG, "the fit's law is the %s law, which needs the target's LR: give --peak-lr", law);
    long *steps = NULL;
    size_t n = 0;
    json_t *fc = NULL;
    long ladder_every = 0;
    if (!st && !*a->steps && a->every <= 0 && !t.n_points) st = import_eval_interval(&l, &ladder_every);
    if (!st) st = curve_steps(a, &t, ladder_every, &steps, &n);
    if (!st) st = curvecast_forecast(fit, &t, steps, n, &fc);
    if (!st) st = fs_write_json(a->out, fc, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    if (!st && *a->plot) st = plots_curve_write(a->plot, fc, NULL);
    if (!st) {
        json_t *pts = json_object_get(fc, "points"), *last = json_array_get(pts, json_array_size(pts) - 1);
        json_t *sg = json_object_get(fc, "sigma");
        const char *used = json_string_value(json_object_get(fc, "law"));
        char counts[96];
        if (t.n_given == IMPORT_N_BOTH) snprintf(counts, sizeof counts, "%.4g (%.4g without embeddings)", t.n_params, t.n_nonembed);
        else if (t.n_given & IMPORT_N_WITH) snprintf(counts, sizeof counts, "%.4g with embeddings", t.n_params);
        else snprintf(counts, sizeof counts, "%.4g without embeddings", t.n_nonembed);
        printf("target%s%s: N %s, %ld steps x %.0f tokens, schedule %s, warmup %ld steps; FLOPs %s; "
               "law %s%s\n", *a->run ? " " : "", *a->run ? t.id : "", counts, t.total_steps, t.tokens_per_step,
               t.schedule[0] ? t.schedule : "(LR column)", t.warmup_steps, json_string_value(json_object_get(fc, "flops_rule")),
               used, sched_law ? " (one size, chosen leaving one curve out)"
                     : !strcmp(used, "perfrac") ? " (the per-fraction law, the joint law's shape outside its fractions: the "
                                                  "target is above the training sizes, where it erred less one size back)"
                                                : " (the joint law)");
        if (ladder_every && !st)
            printf("forecast every %ld steps, as the ladder's runs were evaluated (--every K or --steps to choose)\n", ladder_every);
        char where[160];   // a schedule law of one size: distance in length only
        int n_where = sched_law ? 0 : snprintf(where, sizeof where, "%.2f size steps, ", json_number_value(json_object_get(sg, "log_distance")));
        snprintf(where + n_where, sizeof where - (size_t)n_where, "%.2f doublings past the %s", json_number_value(json_object_get(sg, "length_doublings")),
                 sched_law ? "longest training run" : "most tokens per parameter of a training run");
        printf("forecast final loss %.4f [%.4f, %.4f]; %zu point%s; sigma %.3f%% (noise %.3f%%, extrapolation %.3f%% at %s); "
               "sha256 %s\nwrote %s\n", json_number_value(json_object_get(last, "loss")),
               json_number_value(json_object_get(last, "lo")), json_number_value(json_object_get(last, "hi")),
               json_array_size(pts), json_array_size(pts) == 1 ? "" : "s", 100 * json_number_value(json_object_get(sg, "total")),
               100 * json_number_value(json_object_get(sg, "noise")), 100 * json_number_value(json_object_get(sg, "extrapolation")),
               where, json_string_value(json_object_get(fc, "sha256")), a->out);
        const char *by_run = json_string_value(json_object_get(json_object_get(fit, "sigma"), "inner_by_run"));
        if (by_run && json_number_value(json_object_get(sg, "log_distance")) > 0) cli_note_by_run(by_run);
    }
    free(steps);
    json_decref(fc);
    import_ladder_free(&l);
    return st;
}

// forecast --check-run ID --ladder DIR --forecast F: every logged point of the run after 10%.
static sx_status curve_check(const curve_args *a) {
    if (!*a->ladder) return sx_fail(SX_ERR_ARG, "--check-run needs --ladder (the imported ladder holding the run)");
    json_error_t err;
    json_t *fc = json_load_file(a->fc_path, 0, &err), *rep = NULL;
    if (!fc) return sx_fail(SX_ERR_FORMAT, "%s:%d: %s", a->fc_path, err.line, err.text);
    import_ladder l = {0};
    const import_run *r = NULL;
    sx_status st = forecast_verify_hash(fc, a->fc_path);
    if (!st) st = import_read_dir(a->ladder, &l);
    int k = st ? 0 : import_loss_index(&l, a->loss);
    if (!st && k < 0) st = sx_fail(SX_ERR_ARG, "--loss: %s has no loss column '%s'", a->ladder, a->loss);
    if (!st) st = find_run(&l, a->ladder, a->check_run, &r);
    if (!st && r->n_points == 0)
        st = sx_fail(SX_ERR_ARG, "run '%s' of %s is planned (no evaluations yet): import the ladder again once it has logged "
                     "some, then check", r->id, a->ladder);
    if (!st) st = curvecast_check(fc, &l, r, (size_t)k, &rep);
    if (!st)
        printf("%s: %lld logged points after 10%%: mean |error| %.3f%%, max %.3f%%, final %.3f%%, inside band %.1f%%\n",
               r->id, (long long)json_integer_value(json_object_get(rep, "n_points")),
               100 * json_number_value(json_object_get(rep, "mean_abs_rel_err")), 100 * json_number_value(json_object_get(rep, "max_abs_rel_err")),
               100 * json_number_value(json_object_get(rep, "final_abs_rel_err")), 100 * json_number_value(json_object_get(rep, "band_coverage")));
    if (!st && *a->plot) st = plots_curve_write(a->plot, fc, rep);
    json_decref(fc);
    json_decref(rep);
    import_ladder_free(&l);
    return st;
}

// Where `--check RUN` writes its report: RUN/forecast_report.json, unless that file holds the check against
// another forecast (normally the frozen one the run trained with, which `train --forecast` wrote there): then
// RUN/forecast_report-STEM.json for the forecast file STEM.json, so that no check replaces another.
static void report_path(const char *run_dir, const char *fc_path, const char *sha, char *path, size_t size) {
    snprintf(path, size, "%s/forecast_report.json", run_dir);
    json_t *old = NULL;
    if (access(path, F_OK)) return;
    const char *had = fs_load_json(path, &old) ? NULL : json_string_value(json_object_get(old, "forecast_sha256"));
    bool same = had && sha && !strcmp(had, sha);
    json_decref(old);
    if (same) return;
    const char *base = strrchr(fc_path, '/') ? strrchr(fc_path, '/') + 1 : fc_path;
    size_t stem = strlen(base) > 5 && !strcmp(base + strlen(base) - 5, ".json") ? strlen(base) - 5 : strlen(base);
    snprintf(path, size, "%s/forecast_report-%.*s.json", run_dir, (int)stem, base);
}

int cmd_forecast(int argc, char **argv) {
    static const flags_command cmd = {
        "forecast --fit fit.json --model D --tokens N [--schedule S] [--out forecast.json]\n"
        "       sextant forecast --check RUN_DIR --forecast forecast.json [--fit fit.json --plot f.svg]\n"
        "       sextant forecast --ladder DIR (--run ID | --n-params N --tokens-per-step T --total-steps S --schedule S)\n"
        "       sextant forecast --ladder DIR --check-run ID --forecast forecast.json",
        "Forecasts the validation loss at every evaluation point of a hero run, with a band and a SHA-256\n"
        "so it can be preregistered; --check compares a run (finished or not) with it.",
        0, 0, NULL};
    const char *fit_path, *model, *schedule, *out, *check, *svg, *fc_path, *report_out;
    double tokens, warmup, flops_ratio, unique;
    long batch, seq;
    curve_args ca;
    const flag_def flags[] = {
        {"ladder", FLAG_STR, &ca.ladder, "", "curve ladders: the imported ladder holding --run or --check-run"},
        {"run", FLAG_STR, &ca.run, "", "curve ladders: the target is this run (runs-table row) of --ladder"},
        {"n-params", FLAG_DOUBLE, &ca.n_params, "0", "curve ladders: the target's parameters (with embeddings)"},
        {"n-params-nonembed", FLAG_DOUBLE, &ca.n_nonembed, "0", "curve ladders: ... without embeddings"},
        {"tokens-per-step", FLAG_DOUBLE, &ca.tokens_per_step, "0", "curve ladders: the target's tokens per step"},
        {"total-steps", FLAG_INT, &ca.total_steps, "0", "curve ladders: the target's steps (or --tokens)"},
        {"peak-lr", FLAG_DOUBLE, &ca.peak_lr, "0", "curve ladders: the target's peak LR (recorded; the law uses the LR shape)"},
        {"warmup-steps", FLAG_INT, &ca.warmup_steps, "-1", "curve ladders: warmup steps (default: --warmup as a fraction)"},
        {"steps", FLAG_STR, &ca.steps, "", "curve ladders: forecast at these steps, comma-separated, any order (default: the target's logged steps, else every K steps where most of --ladder's runs' evaluations are K apart, else every 1%)"},
        {"every", FLAG_INT, &ca.every, "0", "curve ladders: forecast every K steps and at the last (the trainer's evaluation interval)"},
        {"check-run", FLAG_STR, &ca.check_run, "", "curve ladders: score this run of --ladder against --forecast at every logged point"},
        {"loss", FLAG_STR, &ca.loss, "", "curve ladders: the loss column --check-run scores (default: the first)"},
        {"fit", FLAG_STR, &fit_path, "", "fit.json from `sextant fit` (default with --ladder: DIR/fit.json)"},
        {"model", FLAG_STR, &model, "", "the hero's model descriptor"},
        {"tokens", FLAG_DOUBLE, &tokens, "0", "the hero's training tokens"},
        {"flops-ratio", FLAG_DOUBLE, &flops_ratio, "0", "instead of --tokens: train the hero on R x the largest rung's compute"},
        {"schedule", FLAG_STR, &schedule, "", "the hero's LR schedule (default: the ladder's)"},
        {"warmup", FLAG_DOUBLE, &warmup, "-1", "the hero's warmup fraction (default: the ladder's)"},
        {"batch", FLAG_INT, &batch, "0", "the hero's batch (default: the ladder's)"},
        {"seq", FLAG_INT, &seq, "0", "the hero's context (default: the ladder's)"},
        {"out", FLAG_STR, &out, "forecast.json", "where to write the forecast"},
        {"check", FLAG_STR, &check, "", "instead: compare this run directory with --forecast"},
        {"forecast", FLAG_STR, &fc_path, "forecast.json", "the frozen forecast to check against"},
        {"report-out", FLAG_STR, &report_out, "", "with --check: where to write the check's JSON (default RUN/forecast_report.json, "
         "or RUN/forecast_report-STEM.json when that holds the check against another forecast)"},
        {"plot", FLAG_STR, &svg, "", "also draw an SVG here: the forecast with its band (and the run, with --check or --check-run; one per task beside it, PATH-task-NAME.svg)"},
        {"unique-tokens", FLAG_DOUBLE, &unique, "0", "the hero's unique tokens (default: the ladder's training data)"},
    };
    flags_args a;
    if (flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a)) return 0;
    sx_status st = a.st;
    if (!st && (tokens < 0 || flops_ratio < 0 || unique < 0 || batch < 0 || seq < 0))
        st = sx_fail(SX_ERR_ARG, "--tokens, --flops-ratio, --unique-tokens, --batch and --seq must not be negative");
    if (!st && tokens > 0 && flops_ratio > 0)
        st = sx_fail(SX_ERR_ARG, "--tokens and --flops-ratio both say how long the hero trains: give one");
    if (!st && ca.every < 0) st = sx_fail(SX_ERR_ARG, "--every: give the steps between evaluations, not %ld", ca.every);
    if (!st && ca.every > 0 && *ca.steps) st = sx_fail(SX_ERR_ARG, "--every and --steps both say where to forecast: give one");
    if (!st && ca.warmup_steps < -1) st = sx_fail(SX_ERR_ARG, "--warmup-steps: give a number of steps, not %ld", ca.warmup_steps);
    if (!st && warmup != -1 && !(warmup >= 0 && warmup < 1))   // -1: the ladder's
        st = sx_fail(SX_ERR_ARG, "--warmup: give the hero's warmup as a fraction of its run in [0, 1), not %g", warmup);
    if (st) return cli_report("forecast", st);
    json_t *fit = NULL, *fc = NULL, *report = NULL;
    ca.schedule = schedule;
    ca.fc_path = fc_path;
    ca.tokens = tokens;
    ca.warmup = warmup;
    ca.out = out;
    ca.plot = svg;
    // Each kind of forecast and check takes its own flags: one of another kind would be ignored, so say so.
    if (!st && *ca.check_run) st = flags_only(&a, "ladder,check-run,loss,forecast,plot", "--check-run (a run of --ladder against --forecast)");
    if (st) return cli_report("forecast", st);
    if (*ca.check_run) return cli_report("forecast", curve_check(&ca));
    char ladder_fit[4200];
    if (!*fit_path && *ca.ladder) {   // where `sextant fit DIR` writes it
        snprintf(ladder_fit, sizeof ladder_fit, "%s/fit.json", ca.ladder);
        if (access(ladder_fit, F_OK))
            return cli_report("forecast", sx_fail(SX_ERR_ARG, "%s has no fit.json: run `sextant fit %s` first, or give "
                                                  "--fit", ca.ladder, ca.ladder));
        fit_path = ladder_fit;
    }
    if (*fit_path) fit = load(fit_path, &st);
    if (fit && !st) st = forecast_verify_hash(fit, fit_path);
    const char *kind = json_string_value(json_object_get(fit, "kind"));
    bool curves = kind && !strcmp(kind, "curve-ladder");
    char what[4400];
    if (!st && *check && curves)
        st = sx_fail(SX_ERR_ARG, "%s is a curve ladder's fit: check a run of it with --ladder DIR --check-run ID", fit_path);
    else if (!st && *check)
        st = flags_only(&a, "check,forecast,report-out,fit,plot", "--check RUN (a run directory against --forecast)");
    else if (!st && fit && curves) {
        snprintf(what, sizeof what, "%s, a curve ladder's fit, with %s", fit_path, *ca.run ? "--run" : "the target described by flags");
        st = flags_only(&a, *ca.run ? "ladder,run,steps,every,fit,out,plot"
                                    : "ladder,n-params,n-params-nonembed,tokens-per-step,total-steps,tokens,peak-lr,"
                                      "warmup-steps,warmup,schedule,steps,every,fit,out,plot", what);
    } else if (!st && fit) {
        snprintf(what, sizeof what, "%s, the fit of a ladder spec (the hero: --model and --tokens or --flops-ratio)", fit_path);
        st = flags_only(&a, "fit,model,tokens,flops-ratio,schedule,warmup,batch,seq,unique-tokens,out,plot", what);
    }
    if (!st && fit && curves) {
        st = curve_forecast(fit, &ca);
        json_decref(fit);
        return cli_report("forecast", st);
    }
    if (!st && *check) {
        fc = load(fc_path, &st);
        if (!st) st = forecast_verify_hash(fc, fc_path);
        if (!st) st = forecast_check_run(fc, check, &report);
        if (!st) {
            forecast_print_report(stdout, report);
            st = taskcast_check_into(fc, check, report, stdout);
        }
        char path[4200];
        if (!st) snprintf(path, sizeof path, "%s", report_out);
        if (!st && !*report_out) report_path(check, fc_path, json_string_value(json_object_get(fc, "sha256")), path, sizeof path);
        if (!st) st = fs_write_json(path, report, JSON_INDENT(1));
        if (!st) fprintf(stderr, "wrote %s\n", path);   // stdout is the report
    } else if (!st) {
        if (!fit) st = sx_fail(SX_ERR_ARG, "--fit is required");
        else if (!*model || !(tokens > 0 || flops_ratio > 0)) st = sx_fail(SX_ERR_ARG, "--model and --tokens (or --flops-ratio) are required");
        hero_spec h = {.model = model, .tokens = tokens, .flops_ratio = flops_ratio, .batch = batch, .seq = seq,
                       .schedule = schedule, .warmup = warmup};
        if (!st) st = forecast_make(fit, &h, &fc);
        model_config mc;
        if (!st) st = model_config_parse(model, (size_t)json_integer_value(json_object_get(json_object_get(fit, "ladder"), "vocab")), &mc);
        if (!st) st = lrsweep_apply(json_object_get(fit, "lr_rule"), fc, mc.width);
        char what[1200] = "";
        double have = st ? 0 : hero_unique_tokens(fit, unique, what, sizeof what);
        if (!st) st = apply_data_law(fit, fc, have, what);
        json_t *tasks = NULL;
        if (!st && json_object_size(json_object_get(fit, "tasks")) && !(st = taskcast_forecast(json_object_get(fit, "tasks"), &h, &tasks))) {
            json_object_set_new(fc, "tasks", tasks);
            forecast_seal(fc);
        }
        if (!st) st = fs_write_json(out, fc, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
        if (!st) {
            json_t *hero = json_object_get(fc, "hero");
            printf("hero %s: %lld steps, %.0f tokens, %.3g FLOPs (%.1fx the largest rung), peak LR %.3g, schedule %s%s\n",
                   json_string_value(json_object_get(hero, "model")), (long long)json_integer_value(json_object_get(hero, "steps")),
                   json_number_value(json_object_get(hero, "tokens")), json_number_value(json_object_get(hero, "flops")),
                   json_number_value(json_object_get(hero, "flops_ratio")), json_number_value(json_object_get(hero, "lr")),
                   json_string_value(json_object_get(hero, "schedule")),
                   json_is_true(json_object_get(json_object_get(fc, "method"), "schedule_change")) ? " (differs from the rungs')" : "");
            if (json_object_get(hero, "lr_rule"))
                printf("hero LR %.3g from the LR rule fitted to the sweep (x/÷ %.2f at one standard error; the ladder's "
                       "assumed rule gave %.3g); expected loss cost of that uncertainty +%.4f\n",
                       json_number_value(json_object_get(hero, "lr")), exp(json_number_value(json_object_get(hero, "lr_se_log"))),
                       json_number_value(json_object_get(hero, "lr_assumed")), json_number_value(json_object_get(hero, "lr_loss_cost")));
            json_t *pts = json_object_get(fc, "points"), *last = json_array_get(pts, json_array_size(pts) - 1);
            const char *name;
            json_t *t;
            json_object_foreach(json_object_get(fc, "tasks"), name, t) {
                json_t *tp = json_object_get(t, "points"), *e = json_array_get(tp, json_array_size(tp) - 1);
                const char *status = json_string_value(json_object_get(t, "status"));
                printf("task %s: accuracy at the end %.2f%% [%.2f, %.2f] (%s %s; task loss %.4f)\n", name,
                       100 * json_number_value(json_object_get(e, "acc")), 100 * json_number_value(json_object_get(e, "lo")),
                       100 * json_number_value(json_object_get(e, "hi")),
                       strcmp(status, "informative") ? "no law:" : json_string_value(json_object_get(t, "form")),
                       strcmp(status, "informative") ? status : "law", json_number_value(json_object_get(e, "loss")));
            }
            printf("forecast final loss %.4f [%.4f, %.4f]", json_number_value(json_object_get(last, "loss")),
                   json_number_value(json_object_get(last, "lo")), json_number_value(json_object_get(last, "hi")));
            json_t *tpp = json_object_get(json_object_get(fc, "method"), "tokens_per_param");
            if (tpp)
                printf(" (the joint law alone: the hero trains %.3g tokens per non-embedding parameter, the ladder's rungs %g; "
                       "the per-fraction laws' would be %.4f)", json_number_value(json_object_get(tpp, "hero")),
                       json_number_value(json_object_get(tpp, "ladder")), json_number_value(json_object_get(last, "loss_per_fraction")));
            else if (json_object_get(last, "loss_joint"))
                printf(" (mean of the per-fraction laws' %.4f and the joint law's %.4f)",
                       json_number_value(json_object_get(last, "loss_per_fraction")), json_number_value(json_object_get(last, "loss_joint")));
            else
                printf(" (%s)", json_string_value(json_object_get(json_object_get(fc, "method"), "combine")));
            printf("; %zu points; sha256 %s\nwrote %s\n", json_array_size(pts), json_string_value(json_object_get(fc, "sha256")), out);
        }
    }
    if (!st && *svg && fc) st = plots_forecast_write(svg, fit, fc, report);
    if (!st && *svg && fc) st = plots_tasks_write(svg, fc, report);
    json_decref(fit);
    json_decref(fc);
    json_decref(report);
    return cli_report("forecast", st);
}
