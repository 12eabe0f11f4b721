// sextant fit SPEC: fits the scaling laws of a finished ladder and writes fit.json.
#include <stdio.h>
#include "cli/commands.h"
#include "cli/flags.h"
#include "scale/curvecast.h"
#include "scale/forecast.h"
#include "scale/import.h"

// sextant fit DIR on a curve ladder (sextant import): the joint law, N chosen one size back, the band's parts.
static int fit_curve_ladder(const char *dir, const char *out, const char *loss) {
    import_ladder l;
    json_t *fit = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s", *out ? out : "");
    if (!*out) snprintf(path, sizeof path, "%s/fit.json", dir);
    sx_status st = import_read_dir(dir, &l);
    int k = st ? 0 : import_loss_index(&l, loss);
    if (!st && k < 0) st = sx_fail(SX_ERR_ARG, "--loss: %s has no loss column '%s'", dir, loss);
    if (!st) st = curvecast_fit(&l, (size_t)k, &fit);
    if (!st && json_dump_file(fit, path, JSON_INDENT(1) | JSON_REAL_PRECISION(17))) st = sx_fail(SX_ERR_IO, "%s: cannot write", path);
    if (!st) {
        json_t *p = json_object_get(fit, "params"), *sg = json_object_get(fit, "sigma");
#define P(name) json_number_value(json_object_get(p, name))
        printf("joint law: L = %.4g + %.4g*N^-%.4g + %.4g*N^%.3g*S^-%.4g - %.4g*LD(C=%.3g, g=%.3g)  (N %s; %lld runs, "
               "%lld points; in-sample mean |err| %.3f%%)\n", P("E"), P("A"), P("alpha"), P("B"), P("eps"), P("beta"), P("D"),
               P("C"), P("g"), json_string_value(json_object_get(fit, "n_kind")),
               (long long)json_integer_value(json_object_get(json_object_get(fit, "ladder"), "runs")),
               (long long)json_integer_value(json_object_get(json_object_get(fit, "ladder"), "points")),
               100 * json_number_value(json_object_get(fit, "in_sample_mean")));
#undef P
        double noise = json_number_value(json_object_get(sg, "noise")), back = json_number_value(json_object_get(sg, "one_size_back"));
        printf("band sigma: point noise %.3f%% (the residuals' high-frequency part), extrapolation %.3f%% per size step "
               "(error one size back); %s dominates\n", 100 * noise, 100 * back,
               noise > back ? "the point noise" : "the extrapolation");
        printf("wrote %s\n", path);
    }
    json_decref(fit);
    import_ladder_free(&l);
    return cli_report("fit", st);
}

int cmd_fit(int argc, char **argv) {
    const char *runs, *out, *loss;
    const flag_def flags[] = {
        {"loss", FLAG_STR, &loss, "", "curve ladders: the loss column (default: the first)"},
        {"runs", FLAG_STR, &runs, "", "the ladder's output directory (default runs/<name>)"},
        {"out", FLAG_STR, &out, "", "where to write fit.json (default <runs>/fit.json)"},
    };
    size_t n = sizeof flags / sizeof *flags;
    const char *pos[1];
    int npos;
    sx_status st;
    if (flags_help_or_parse(flags, n, argc, argv, pos, 1, &npos,
                            "fit SPEC [--runs DIR] [--out fit.json]\n       sextant fit LADDER_DIR [--loss NAME] [--out fit.json]   (a ladder from `sextant import`)",
                            "Reads every run of a finished ladder and fits: the per-fraction laws L_f(C) = Linf + A*C^-alpha\n"
                            "across rungs (with a seed bootstrap) and a multi-power schedule law per rung.", &st))
        return 0;
    if (!st && npos != 1) st = sx_fail(SX_ERR_ARG, "give the ladder spec (or an imported ladder directory): sextant fit SPEC");
    if (!st && import_is_ladder_dir(pos[0])) return fit_curve_ladder(pos[0], out, loss);
    ladder_spec spec;
    if (!st) st = ladder_spec_read(pos[0], &spec);
    if (st) return cli_report("fit", st);
    char dir[1100], path[1200];
    snprintf(dir, sizeof dir, "%s", *runs ? runs : "");
    if (!*runs) snprintf(dir, sizeof dir, "runs/%s", spec.name);
    snprintf(path, sizeof path, "%s", *out ? out : "");
    if (!*out) snprintf(path, sizeof path, "%s/fit.json", dir);
    json_t *fit;
    if ((st = forecast_fit_ladder(&spec, dir, &fit))) return cli_report("fit", st);
    if (json_dump_file(fit, path, JSON_INDENT(1) | JSON_REAL_PRECISION(17)))   // full precision: the hash covers it
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
    if (fl && json_number_value(json_object_get(p, "Linf")) < 1e-3)   // at (or next to) its bound
        fprintf(stderr, "sextant fit: warning: the irreducible loss Linf = %.4f sits at its lower bound 0: the rungs do not "
                "bend enough to pin it down, and a pure power law falls without limit, so forecasts far beyond the "
                "ladder will be too low; add rungs (a wider range of compute) before trusting the extrapolation\n",
                json_number_value(json_object_get(p, "Linf")));
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
