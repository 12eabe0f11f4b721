// sextant backtest LADDER_DIR: forecast a curve ladder's largest sizes from the rest and score the forecasts.
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "core/flags.h"
#include "laws/backtest.h"
#include "report/plots.h"

int cmd_backtest(int argc, char **argv) {
    const char *out, *loss, *weight, *protocol, *svg;
    long holdout;
    double from, min_frac;
    const char *nkind;
    bool baseline;
    const flag_def flags[] = {
        {"protocol", FLAG_STR, &protocol, "size", "size: forecast the largest sizes; role: forecast the runs with role heldout"},
        {"holdout", FLAG_INT, &holdout, "1", "forecast the largest K sizes (groups) from the others"},
        {"loss", FLAG_STR, &loss, "", "the loss column (default: the first)"},
        {"n", FLAG_STR, &nkind, "auto", "N with embeddings (embed), without (nonembed), or auto: the one with the lower error one size back"},
        {"score-from", FLAG_DOUBLE, &from, "0.1", "score points after this fraction of each run"},
        {"fit-from", FLAG_DOUBLE, &min_frac, "0.1", "fit points from this fraction of each run"},
        {"weight", FLAG_STR, &weight, "sqrt", "weight of a run's points: point (1 each), sqrt (1/sqrt(n)), run (1/n)"},
        {"baseline", FLAG_BOOL, &baseline, "true", "also score the per-fraction baseline"},
        {"out", FLAG_STR, &out, "", "also write the report as JSON here"},
        {"plot", FLAG_STR, &svg, "", "also draw the held-out runs, forecasts and bands as an SVG here"},
    };
    size_t n = sizeof flags / sizeof *flags;
    const char *pos[1];
    int npos;
    sx_status st;
    if (flags_help_or_parse(flags, n, argc, argv, pos, 1, &npos, "backtest LADDER_DIR [--holdout K] [--out report.json] [--plot report.svg]",
                            "Forecasts every run of the largest K sizes of an imported ladder from the smaller sizes alone and\n"
                            "scores the forecasts at every logged point after the first 10% of each run: mean, max and final\n"
                            "|relative error| and the fraction inside the band, beside the simple per-fraction baseline.", &st))
        return 0;
    if (!st && npos != 1) st = sx_fail(SX_ERR_ARG, "give the ladder directory: sextant backtest DIR");
    backtest_options o;
    backtest_options_default(&o);
    o.holdout = holdout > 0 ? (size_t)holdout : 0;
    o.score_from = from;
    if (!strcmp(protocol, "role")) o.protocol = BACKTEST_ROLE;
    else if (strcmp(protocol, "size")) st = sx_fail(SX_ERR_ARG, "--protocol: '%s' is not size or role", protocol);
    o.baseline = baseline;
    if (!strcmp(nkind, "auto")) o.fit.nonembed = -1;
    else if (!strcmp(nkind, "embed")) o.fit.nonembed = 0;
    else if (!strcmp(nkind, "nonembed")) o.fit.nonembed = 1;
    else if (!st) st = sx_fail(SX_ERR_ARG, "--n: '%s' is not auto, embed or nonembed", nkind);
    o.fit.min_frac = min_frac;
    if (!st) {
        if (!strcmp(weight, "point")) o.fit.weight = CURVEFIT_W_POINT;
        else if (!strcmp(weight, "sqrt")) o.fit.weight = CURVEFIT_W_SQRT;
        else if (!strcmp(weight, "run")) o.fit.weight = CURVEFIT_W_RUN;
        else st = sx_fail(SX_ERR_ARG, "--weight: '%s' is not point, sqrt or run", weight);
    }
    if (st) return cli_report("backtest", st);
    import_ladder l;
    json_t *rep = NULL;
    st = import_read_dir(pos[0], &l);
    if (!st) {
        int k = import_loss_index(&l, loss);
        if (k < 0) st = sx_fail(SX_ERR_ARG, "--loss: %s has no loss column '%s'", pos[0], loss);
        else o.fit.loss = (size_t)k;
    }
    if (!st) st = backtest_run(&l, &o, &rep);
    if (!st) {
        backtest_print(stdout, rep);
        if (*out && json_dump_file(rep, out, JSON_INDENT(1))) st = sx_fail(SX_ERR_IO, "%s: cannot write", out);
        if (!st && *svg) st = plots_backtest_write(svg, rep);
    }
    json_decref(rep);
    import_ladder_free(&l);
    return cli_report("backtest", st);
}
