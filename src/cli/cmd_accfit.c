// sextant acc-fit --gadre DIR: the accuracy-vs-loss law's public check on Gadre et al. 2024's over-training
// runs: fit average top-1 error against C4 eval loss on the smaller runs, predict the larger and over-trained
// ones from their measured loss and, chained, from their size and tokens alone through a loss law L(N, D)
// (as the paper does), and score both predictions (relative error, as the paper reports it).
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "core/flags.h"
#include "core/fsutil.h"
#include "laws/accchain.h"
#include "laws/acclaw.h"
#include "laws/pubdata.h"

#define ACCFIT_BOOT 200

// Which runs the laws are fitted on: the paper's six (its five loss-fit points and the 1.4B run at M = 20,
// scaling/shared.py fit_ds) or every run under 1B parameters (small, chain). The held-out runs: the paper's
// extrapolation targets, or every run of 1B parameters and more.
static int fitted(const pub_gadre_run *r, int paper) {
    if (!paper) return r->params < 1e9;
    return r->fit_point || (r->params > 1e9 && r->params < 2e9 && r->tokens_per_param == 20);
}
static int heldout(const pub_gadre_run *r, int paper) { return paper ? r->target : r->params >= 1e9; }
static double tokens_of(const pub_gadre_run *r) { return r->params * r->tokens_per_param; }   // D = M N, as the paper

typedef enum { PROTO_PAPER, PROTO_SMALL, PROTO_CHAIN } protocol;

// The runs of one training set that a protocol fits: N, D, loss, accuracy and size index of each.
typedef struct {
    size_t n, n_sizes;
    double params[256], tokens[256], loss[256], acc[256], sizes[256];
    size_t group[256];
} fit_runs;

static void collect(const pub_gadre *g, const char *dataset, long tasks, int (*keep)(const pub_gadre_run *, int), int paper,
                    fit_runs *f) {
    f->n = f->n_sizes = 0;
    for (size_t i = 0; i < g->n && f->n < 256; i++) {
        const pub_gadre_run *r = &g->runs[i];
        if (strcmp(r->dataset, dataset) || !keep(r, paper)) continue;
        size_t s = 0;
        while (s < f->n_sizes && f->sizes[s] != r->params) s++;
        if (s == f->n_sizes) f->sizes[f->n_sizes++] = r->params;
        f->params[f->n] = r->params;
        f->tokens[f->n] = tokens_of(r);
        f->loss[f->n] = r->loss_c4;
        f->acc[f->n] = 1 - (tasks == 17 ? r->err17 : r->err46);
        f->group[f->n++] = s;
    }
}
static int loss_fit_point(const pub_gadre_run *r, int paper) { (void)paper; return r->fit_point; }

int cmd_accfit(int argc, char **argv) {
    static const flags_command cmd = {
        "acc-fit --gadre DIR [--dataset rpj] [--tasks 17|46] [--protocol paper|small|chain] [--form exp|sigmoid|auto]",
        "Fits the downstream-error-vs-loss law on the smaller runs of Gadre et al. 2024's over-training study\n"
        "and predicts the larger and over-trained runs' average top-1 error, from their measured C4 eval loss\n"
        "and chained from their size and tokens alone (a loss law L(N, D) fitted on the same runs).",
        0, 0, NULL};
    const char *dir, *dataset, *form, *out;
    int proto;
    long tasks;
    const flag_def flags[] = {
        {"gadre", FLAG_STR, &dir, "", "the directory holding gadre_overtraining_runs.csv and _downstream.csv"},
        {"dataset", FLAG_STR, &dataset, "rpj", "training set: c4_original, rpj or rw_original"},
        {"tasks", FLAG_INT, &tasks, "17", "average top-1 error over the paper's 17-task subset (17) or all 46 tasks"},
        {"protocol", FLAG_CHOICE, &(flag_choice){&proto, "paper|small|chain"}, "paper",
         "paper: fit the paper's 6 runs, predict its targets; small: fit every run under 1B parameters, predict every "
         "larger one; chain: as small, both laws' forms chosen by leave-one-size-out of the chained error"},
        {"form", FLAG_STR, &form, "", "exp (Gadre's err = e - k exp(-g L); the default), sigmoid, or auto "
                                      "(leave-one-size-out); chain: auto only"},
        {"out", FLAG_STR, &out, "", "also write the report as JSON here"},
    };
    flags_args a;
    if (flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a)) return 0;
    sx_status st = a.st;
    int paper = proto == PROTO_PAPER;   // --protocol's words are in protocol's order
    if (!*form) form = proto == PROTO_CHAIN ? "auto" : "exp";
    int only = !strcmp(form, "exp") ? ACCLAW_EXP : !strcmp(form, "sigmoid") ? ACCLAW_SIGMOID : -1;
    if (!st && !*dir) st = sx_fail(SX_ERR_ARG, "--gadre DIR is required");
    if (!st && only < 0 && strcmp(form, "auto")) st = sx_fail(SX_ERR_ARG, "--form: '%s' is not exp, sigmoid or auto", form);
    if (!st && proto == PROTO_CHAIN && only >= 0)
        st = sx_fail(SX_ERR_ARG, "--form %s: the chain protocol chooses both forms by leave-one-size-out (--form auto)", form);
    if (!st && tasks != 17 && tasks != 46) st = sx_fail(SX_ERR_ARG, "--tasks: %ld is not 17 or 46", tasks);
    if (!st && strcmp(dataset, "c4_original") && strcmp(dataset, "rpj") && strcmp(dataset, "rw_original"))
        st = sx_fail(SX_ERR_ARG, "--dataset: '%s' is not c4_original, rpj or rw_original", dataset);
    if (st) return cli_report("acc-fit", st);
    pub_gadre g;
    if ((st = pub_gadre_load(dir, &g))) return cli_report("acc-fit", st);
    static fit_runs fr, lr;
    collect(&g, dataset, tasks, fitted, paper, &fr);
    // The error-vs-loss law (from a run's measured loss) and the loss law L(N, D) the chained column uses:
    // paper: Gadre's one-exponent law on the paper's five loss-fit points by least squares, as its code does;
    // small: the same form on the fitted runs by the engine's objective; chain: both chosen by accchain.
    acclaw_data d = {.n = fr.n, .loss = fr.loss, .acc = fr.acc, .items = NULL, .group = fr.group};
    acclaw_model m = {0};
    accchain_model cm = {0};
    accchain_loss_form lf = ACCCHAIN_LOSS_ND1;
    double loss_p[LAW_ND_NPARAM];
    if (proto == PROTO_CHAIN) {
        accchain_data cd = {.n = fr.n, .params = fr.params, .tokens = fr.tokens, .loss = fr.loss, .acc = fr.acc, .group = fr.group};
        if (!(st = accchain_fit(&cd, &cm))) {
            lf = cm.loss_form;
            memcpy(loss_p, cm.loss_p, sizeof loss_p);
        }
    } else {
        st = only < 0 ? acclaw_model_fit(&d, ACCFIT_BOOT, 1, &m) : acclaw_model_fit_form(&d, (acclaw_form)only, ACCFIT_BOOT, 1, &m);
        if (paper) collect(&g, dataset, tasks, loss_fit_point, 1, &lr);
        const fit_runs *l = paper ? &lr : &fr;
        if (!st) st = accchain_fit_loss(lf, l->params, l->tokens, l->loss, l->n, paper, loss_p);
    }
    if (st) { acclaw_model_free(&m); pub_gadre_free(&g); return cli_report("acc-fit", st); }
    acclaw_form af = proto == PROTO_CHAIN ? cm.acc_form : m.chosen;
    const double *acc_p = proto == PROTO_CHAIN ? cm.acc_p : m.forms[m.chosen].p;
    printf("Gadre et al. 2024 over-training runs (%s), train set %s: %ld-task average top-1 error vs C4 eval loss\n", dir,
           dataset, tasks);
    printf("fitted on %zu runs (%zu sizes; %s), error law %s (%s):", fr.n, fr.n_sizes,
           paper ? "the paper's 5 loss-fit points and 1.4B at M = 20" : "every run under 1B parameters",
           acclaw_form_name(af), af == ACCLAW_EXP ? "err = e - k*exp(-g*L)" : "acc = floor + (ceil-floor)/(1+exp(k(L-L0)))");
    for (size_t j = 0; j < acclaw_n_params(af); j++) printf(" %s %.4g", acclaw_param_name(af, j), acc_p[j]);
    if (proto != PROTO_CHAIN) {
        const acclaw_fit *b = &m.forms[m.chosen];
        printf("; in-sample rms %.2f points", 100 * sqrt(b->chi2 / (double)fr.n));
        if (isfinite(b->loro_rmse)) printf(", leave-one-size-out rms %.2f points", 100 * b->loro_rmse);
        printf("; %s", m.status == ACCLAW_INFORMATIVE ? "the error falls with loss beyond the points' scatter"
                                                      : "the errors do not depend on loss beyond their scatter: no law");
    }
    printf("\nloss law %s (L = E + A/N^alpha + B/D^%s), fitted on %s:", accchain_loss_name(lf),
           lf == ACCCHAIN_LOSS_ND ? "beta" : "alpha", paper ? "the paper's 5 loss-fit points by least squares, as its code"
                                                            : "the same runs");
    for (size_t j = 0; j < (lf == ACCCHAIN_LOSS_ND ? LAW_ND_NPARAM : LAW_ND1_NPARAM); j++) printf(" %.4g", loss_p[j]);
    printf("\n");
    if (proto == PROTO_CHAIN) {
        printf("forms chosen by leave-one-size-out over the %zu fitted sizes (RMS relative error of the chained error; "
               "of the loss alone):\n", cm.n_groups);
        for (int a = 0; a < ACCCHAIN_N_LOSS; a++)
            for (int b = 0; b < ACCLAW_N_FORMS; b++)
                printf("  loss %-3s error %-7s %6.2f%%  (loss %5.2f%%)%s\n", accchain_loss_name((accchain_loss_form)a),
                       acclaw_form_name((acclaw_form)b), 100 * cm.cv_err[a][b], 100 * cm.cv_loss[a],
                       a == (int)cm.loss_form && b == (int)cm.acc_form ? "  <- chosen" : "");
    }
    printf("%-28s %7s %7s %8s | %-9s %-17s %8s | %-9s %8s\n", "held-out run", "loss", "L(N,D)", "observed", "from loss",
           "95% band", "rel err", "chained", "rel err");
    json_t *rows = json_array();
    double sum[2] = {0, 0}, worst[2] = {0, 0};
    size_t n_held = 0;
    for (size_t i = 0; i < g.n; i++) {
        const pub_gadre_run *r = &g.runs[i];
        if (strcmp(r->dataset, dataset) || !heldout(r, paper) || fitted(r, paper)) continue;
        double obs = tasks == 17 ? r->err17 : r->err46, a, lo = NAN, hi = NAN;
        if (proto == PROTO_CHAIN) a = acclaw_eval(af, acc_p, r->loss_c4);
        else acclaw_predict(&m, r->loss_c4, 0, 0, 2, &a, &lo, &hi);
        double lp = accchain_loss_eval(lf, loss_p, r->params, tokens_of(r)), chained = 1 - acclaw_eval(af, acc_p, lp);
        double pred = 1 - a, rel[2] = {(pred - obs) / obs, (chained - obs) / obs};
        char band[32] = "";
        if (isfinite(lo)) snprintf(band, sizeof band, "[%.4f, %.4f]", 1 - hi, 1 - lo);
        printf("%-28s %7.4f %7.4f %8.4f | %9.4f %-17s %+7.2f%% | %9.4f %+7.2f%%\n", r->run_id, r->loss_c4, lp, obs, pred, band,
               100 * rel[0], chained, 100 * rel[1]);
        json_t *row = json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "run", r->run_id, "params", r->params,
                                "tokens_per_param", r->tokens_per_param, "loss", r->loss_c4, "observed", obs, "predicted",
                                pred, "rel_err", rel[0], "predicted_loss", lp, "chained", chained);
        json_object_set_new(row, "rel_err_chained", json_real(rel[1]));
        if (isfinite(lo)) {
            json_object_set_new(row, "lo", json_real(1 - hi));
            json_object_set_new(row, "hi", json_real(1 - lo));
        }
        json_array_append_new(rows, row);
        for (int k = 0; k < 2; k++) {
            sum[k] += fabs(rel[k]);
            worst[k] = fmax(worst[k], fabs(rel[k]));
        }
        n_held++;
    }
    if (n_held)
        printf("mean |relative error| over %zu held-out runs: from the measured loss %.2f%% (worst %.2f%%), chained %.2f%% "
               "(worst %.2f%%)\n", n_held, 100 * sum[0] / (double)n_held, 100 * worst[0], 100 * sum[1] / (double)n_held,
               100 * worst[1]);
    if (!strcmp(dataset, "rpj") && tasks == 17)
        printf("the paper (scaling_explorer.ipynb, RPJ laws, chained from its loss law): 3.6365%% for 1.4B at M = 640, "
               "0.0464%% for 6.9B at M = 20\n");
    if (*out) {
        json_t *rep = json_pack("{s:s, s:s, s:I, s:s, s:o, s:s, s:o, s:f, s:f, s:f, s:f}", "source", "gadre", "dataset", dataset,
                                "tasks", (json_int_t)tasks, "protocol", (const char *[]){"paper", "small", "chain"}[proto], "law",
                                proto == PROTO_CHAIN ? accchain_model_to_json(&cm) : acclaw_model_to_json(&m), "loss_form",
                                accchain_loss_name(lf), "heldout", rows, "mean_abs_rel_err", n_held ? sum[0] / (double)n_held : 0.0,
                                "max_abs_rel_err", worst[0], "mean_abs_rel_err_chained", n_held ? sum[1] / (double)n_held : 0.0,
                                "max_abs_rel_err_chained", worst[1]);
        st = fs_write_json(out, rep, JSON_INDENT(1));
        json_decref(rep);
    } else
        json_decref(rows);
    acclaw_model_free(&m);
    pub_gadre_free(&g);
    return cli_report("acc-fit", st);
}
