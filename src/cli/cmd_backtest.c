// sextant backtest LADDER_DIR: forecast a curve ladder's largest sizes from the rest and score the forecasts.
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "core/flags.h"
#include "core/fsutil.h"
#include "laws/backtest.h"
#include "report/plots.h"

int cmd_backtest(int argc, char **argv) {
    static const flags_command cmd = {
        "backtest LADDER_DIR [--holdout K] [--out report.json] [--plot report.svg]",
        "Forecasts every run of the largest K sizes of an imported ladder from the smaller sizes alone and\n"
        "scores the forecasts at every logged point after the first 10% of each run: mean, max and final\n"
        "|relative error| and the fraction inside the band, beside the simple per-fraction baseline.",
        1, 1, "give the ladder directory: sextant backtest DIR"};
    const char *out, *loss, *svg;
    long holdout;
    double from, min_frac;
    int protocol, nkind, weight;
    bool baseline;
    const flag_def flags[] = {
        {"protocol", FLAG_CHOICE, &(flag_choice){&protocol, "size|role"}, "size",
         "size: forecast the largest sizes; role: forecast the runs with role heldout"},
        {"holdout", FLAG_INT, &holdout, "1", "forecast the largest K sizes (groups) from the others"},
        {"loss", FLAG_STR, &loss, "", "the loss column (default: the first)"},
        {"n", FLAG_CHOICE, &(flag_choice){&nkind, "auto|embed|nonembed|embed-raw"}, "auto",
         "N with embeddings less an offset chosen one size back (embed), as given (embed-raw), without (nonembed), "
         "or auto: the candidate with the lower error one size back"},
        {"score-from", FLAG_DOUBLE, &from, "0.1", "score points after this fraction of each run"},
        {"fit-from", FLAG_DOUBLE, &min_frac, "0.1", "fit points from this fraction of each run"},
        {"weight", FLAG_CHOICE, &(flag_choice){&weight, "point|sqrt|run"}, "sqrt",
         "weight of a run's points: point (1 each), sqrt (1/sqrt(n)), run (1/n)"},
        {"baseline", FLAG_BOOL, &baseline, "true", "also score the per-fraction baseline"},
        {"out", FLAG_STR, &out, "", "also write the report as JSON here"},
        {"plot", FLAG_STR, &svg, "", "also draw the held-out runs, forecasts and bands as an SVG here"},
    };
    flags_args a;
    if (flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a)) return 0;
    sx_status st = a.st;
    if (!st && holdout < 1) st = sx_fail(SX_ERR_ARG, "--holdout: give the number of largest sizes to forecast (1 or more)");
    if (!st && *out && *svg && !strcmp(out, svg)) st = sx_fail(SX_ERR_ARG, "--out and --plot name the same file, %s", out);
    if (!st && !(from >= 0 && from < 1)) st = sx_fail(SX_ERR_ARG, "--score-from: give a fraction of each run in [0, 1)");
    if (!st && !(min_frac >= 0 && min_frac < 1)) st = sx_fail(SX_ERR_ARG, "--fit-from: give a fraction of each run in [0, 1)");
    backtest_options o;
    backtest_options_default(&o);
    o.holdout = (size_t)holdout;
    o.score_from = from;
    o.protocol = (backtest_protocol[]){BACKTEST_SIZE, BACKTEST_ROLE}[protocol];
    if (!st && o.protocol == BACKTEST_ROLE && flags_given(&a, "holdout"))
        st = sx_fail(SX_ERR_ARG, "--holdout is for --protocol size; with --protocol role the runs table's heldout runs are forecast");
    o.baseline = baseline;
    o.fit.nonembed = (int[]){-1, 0, 1, 0}[nkind];
    o.fit.n_offset = nkind == 3 ? 0 : NAN;   // NAN: chosen one size back
    o.fit.min_frac = min_frac;
    o.fit.weight = (curvefit_weight[]){CURVEFIT_W_POINT, CURVEFIT_W_SQRT, CURVEFIT_W_RUN}[weight];
    if (st) return cli_report("backtest", st);
    import_ladder l;
    json_t *rep = NULL;
    st = import_read_dir(a.pos[0], &l);
    if (!st) {
        int k = import_loss_index(&l, loss);
        if (k < 0) st = sx_fail(SX_ERR_ARG, "--loss: %s has no loss column '%s'", a.pos[0], loss);
        else o.fit.loss = (size_t)k;
    }
    if (!st && o.fit.nonembed >= 0) st = import_check_n_kind(&l, o.fit.nonembed);   // before the work starts
    size_t marked = 0;
    for (size_t i = 0; !st && i < l.n_runs; i++) marked += l.runs[i].heldout;
    if (marked && o.protocol == BACKTEST_SIZE)
        printf("note: %zu runs are marked heldout; this backtest forecasts the largest %zu size(s) from the others, whatever "
               "their role (--protocol role forecasts the marked runs)\n", marked, o.holdout);
    if (!st) cli_say_fitting("backtest", &l);
    if (!st) st = backtest_run(&l, &o, &rep);
    if (!st) {
        backtest_print(stdout, rep);
        const char *by_run = json_string_value(json_object_get(rep, "inner_by_run"));
        if (by_run) cli_note_by_run(by_run);
        if (*out) st = fs_write_json(out, rep, JSON_INDENT(1));
        if (!st && *svg) st = plots_backtest_write(svg, rep);
    }
    json_decref(rep);
    import_ladder_free(&l);
    return cli_report("backtest", st);
}
