// sextant forecast: a hero run's whole validation-loss curve from fit.json (with a band and a hash), or,
// with --check, the comparison of a run with a frozen forecast. Both can draw an SVG.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/commands.h"
#include "cli/flags.h"
#include "data/mixture.h"
#include "model/config.h"
#include "data/shard.h"
#include "scale/datafit.h"
#include "scale/forecast.h"
#include "scale/lrsweep.h"
#include "scale/rundir.h"
#include "scale/plots.h"

static json_t *load(const char *path, sx_status *st) {
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) *st = sx_fail(SX_ERR_FORMAT, "%s:%d: %s", path, err.line, err.text);
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
    forecast_rehash(fc);
    json_t *dl = json_object_get(json_object_get(fc, "method"), "data_law");
    double passes = json_number_value(json_object_get(dl, "passes"));
    if (passes > 1 && dc)
        printf("the hero repeats data (%.2f passes over %s): forecast from the data-constrained law "
               "(Rstar %.3g), final loss +%.4f over the fresh-data forecast\n", passes, what,
               json_number_value(json_object_get(dl, "Rstar")), json_number_value(json_object_get(dl, "final_penalty")));
    else if (passes > 1)
        fprintf(stderr, "sextant forecast: warning: the hero's tokens are %.2f passes over %s; the ladder's laws "
                "assume fresh data, so the forecast is optimistic where the data repeats (fit with --with a "
                "data-limited ladder to model it)\n", passes, what);
    return SX_OK;
}

int cmd_forecast(int argc, char **argv) {
    const char *fit_path, *model, *schedule, *out, *check, *svg, *fc_path;
    double tokens, warmup, flops_ratio, unique;
    long batch, seq;
    const flag_def flags[] = {
        {"fit", FLAG_STR, &fit_path, "", "fit.json from `sextant fit`"},
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
        {"plot", FLAG_STR, &svg, "", "also draw an SVG here"},
        {"unique-tokens", FLAG_DOUBLE, &unique, "0", "the hero's unique tokens (default: the ladder's training data)"},
    };
    size_t n = sizeof flags / sizeof *flags;
    int npos;
    sx_status st;
    if (flags_help_or_parse(flags, n, argc, argv, NULL, 0, &npos,
                            "forecast --fit fit.json --model D --tokens N [--schedule S] [--out forecast.json]\n"
                            "       sextant forecast --check RUN_DIR --forecast forecast.json [--fit fit.json --plot f.svg]",
                            "Forecasts the validation loss at every evaluation point of a hero run, with a band and a SHA-256\n"
                            "so it can be preregistered; --check compares a run (finished or not) with it.", &st))
        return 0;
    if (st) return cli_report("forecast", st);
    json_t *fit = NULL, *fc = NULL, *report = NULL;
    if (*fit_path) fit = load(fit_path, &st);
    if (fit && !st) st = forecast_verify_hash(fit, fit_path);
    if (!st && *check) {
        fc = load(fc_path, &st);
        if (!st) st = forecast_verify_hash(fc, fc_path);
        if (!st) st = forecast_check_run(fc, check, &report);
        if (!st) {
            forecast_print_report(stdout, report);
            char path[4200];
            snprintf(path, sizeof path, "%s/forecast_report.json", check);
            if (json_dump_file(report, path, JSON_INDENT(1))) st = sx_fail(SX_ERR_IO, "%s: cannot write", path);
        }
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
        if (!st && json_dump_file(fc, out, JSON_INDENT(1) | JSON_REAL_PRECISION(17))) st = sx_fail(SX_ERR_IO, "%s: cannot write", out);
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
            printf("forecast final loss %.4f [%.4f, %.4f]; %zu points; sha256 %s\nwrote %s\n",
                   json_number_value(json_object_get(last, "loss")), json_number_value(json_object_get(last, "lo")),
                   json_number_value(json_object_get(last, "hi")), json_array_size(pts),
                   json_string_value(json_object_get(fc, "sha256")), out);
        }
    }
    if (!st && *svg && fc) st = plots_forecast_write(svg, fit, fc, report);
    json_decref(fit);
    json_decref(fc);
    json_decref(report);
    return cli_report("forecast", st);
}
