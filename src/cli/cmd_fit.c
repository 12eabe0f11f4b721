// sextant fit SPEC: fits the scaling laws of a finished ladder and writes fit.json.
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "cli/flags.h"
#include "scale/forecast.h"

int cmd_fit(int argc, char **argv) {
    const char *runs, *out, *val_set;
    const flag_def flags[] = {
        {"val-set", FLAG_STR, &val_set, "", "fit one validation set of a mixture (val_loss_NAME) instead of the mix; "
                                            "default: the spec's val_set key, else val_loss"},
        {"runs", FLAG_STR, &runs, "", "the ladder's output directory (default runs/<name>)"},
        {"out", FLAG_STR, &out, "", "where to write fit.json (default <runs>/fit.json)"},
    };
    size_t n = sizeof flags / sizeof *flags;
    const char *pos[1];
    int npos;
    sx_status st;
    if (flags_help_or_parse(flags, n, argc, argv, pos, 1, &npos,
                            "fit SPEC [--runs DIR] [--out fit.json] [--val-set NAME]",
                            "Reads every run of a finished ladder and fits: the per-fraction laws L_f(C) = Linf + A*C^-alpha\n"
                            "across rungs (with a seed bootstrap) and a multi-power schedule law per rung.", &st))
        return 0;
    if (!st && npos != 1) st = sx_fail(SX_ERR_ARG, "give the ladder spec: sextant fit SPEC");
    ladder_spec spec;
    if (!st) st = ladder_spec_read(pos[0], &spec);
    if (!st && *val_set && strlen(val_set) >= sizeof spec.val_set) st = sx_fail(SX_ERR_ARG, "--val-set: name too long");
    if (st) return cli_report("fit", st);
    if (*val_set) strcpy(spec.val_set, val_set);
    if (*spec.val_set) printf("fitting validation set %s (val_loss_%s)\n", spec.val_set, spec.val_set);
    char dir[1100], path[1200];
    snprintf(dir, sizeof dir, "%s", *runs ? runs : "");
    if (!*runs) snprintf(dir, sizeof dir, "runs/%s", spec.name);
    snprintf(path, sizeof path, "%s", *out ? out : "");
    if (!*out) snprintf(path, sizeof path, "%s/fit.json", dir);
    json_t *fit;
    if ((st = forecast_fit_ladder(&spec, dir, &fit))) return cli_report("fit", st);
    if (json_dump_file(fit, path, JSON_INDENT(1) | JSON_REAL_PRECISION(12)))
        st = sx_fail(SX_ERR_IO, "%s: cannot write", path);
    json_t *fl = json_object_get(fit, "final_loss_vs_compute"), *p = json_object_get(fl, "params");
    json_t *bt = json_object_get(fl, "backtest");
    if (!fl)   // the law has 3 parameters: a leave-one-rung-out backtest needs 4 rungs
        printf("final loss vs compute: not fitted (needs at least 4 rungs, the ladder has %zu)\n", spec.n_rungs);
    else
        printf("final loss vs compute: L(C) = %.4f + %.4g * C^-%.4f  (in-sample mean |err| %.3f%%; leave-one-rung-out "
               "mean %.3f%%, worst %.3f%%)\n", json_number_value(json_object_get(p, "Linf")), json_number_value(json_object_get(p, "A")),
               json_number_value(json_object_get(p, "alpha")), 100 * json_number_value(json_object_get(fl, "mean_abs_rel_err")),
               100 * json_number_value(json_object_get(bt, "mean_abs_rel_err")), 100 * json_number_value(json_object_get(bt, "max_abs_rel_err")));
    if (spec.n_rungs < 4)
        fprintf(stderr, "sextant fit: warning: %zu rungs determine the 3-parameter per-fraction laws exactly: no misfit "
                "estimate, no held-out rung, a fragile forecast; use at least 4\n", spec.n_rungs);
    json_t *laws = json_object_get(json_object_get(fit, "schedule_law"), "per_rung");
    for (size_t i = 0; i < json_array_size(laws); i++) {
        json_t *l = json_array_get(laws, i);
        printf("schedule law (multi-power) width %lld: %lld curves, mean |err| %.3f%%, max %.3f%%\n",
               (long long)json_integer_value(json_object_get(l, "width")), (long long)json_integer_value(json_object_get(l, "curves")),
               100 * json_number_value(json_object_get(l, "mean_abs_rel_err")), 100 * json_number_value(json_object_get(l, "max_abs_rel_err")));
    }
    printf("wrote %s\n", path);
    json_decref(fit);
    return cli_report("fit", st);
}
