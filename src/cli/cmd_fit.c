// sextant fit SPEC: fits the scaling laws of a finished ladder and writes fit.json.
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "core/flags.h"
#include "core/fsutil.h"
#include "laws/backtest.h"
#include "scale/curvecast.h"
#include "scale/datafit.h"
#include "laws/finallaw.h"
#include "scale/forecast.h"
#include "scale/ladder_seeds.h"
#include "runs/import.h"
#include "scale/lrsweep.h"
#include "scale/taskcast.h"

// The joint law of a curve-ladder fit (laws/law_nds.h), one line.
static void print_joint_law(json_t *fit) {
    json_t *p = json_object_get(fit, "params");
#define P(name) json_number_value(json_object_get(p, name))
    // C -> 0 with g -> inf at a fixed product is one law, 1 - exp(-C*g*x): the fit may wander along that line.
    char limit[64] = "";
    if (P("g") > 1e3) snprintf(limit, sizeof limit, "; C*g = %.3g, the exponential limit", P("C") * P("g"));
    printf("joint law: L = %.4g + %.4g*N^-%.4g + %.4g*N^%.3g*S^-%.4g - %.4g*LD(C=%.3g, g=%.3g%s)  (N %s; %lld runs, "
           "%lld points; in-sample mean |err| %.3f%%)\n", P("E"), P("A"), P("alpha"), P("B"), P("eps"), P("beta"), P("D"),
           P("C"), P("g"), limit, json_string_value(json_object_get(fit, "n_kind")),
           (long long)json_integer_value(json_object_get(json_object_get(fit, "ladder"), "runs")),
           (long long)json_integer_value(json_object_get(json_object_get(fit, "ladder"), "points")),
           100 * json_number_value(json_object_get(fit, "in_sample_mean")));
#undef P
}

// sextant fit DIR --law final: Chinchilla's approach 3 on every run's final loss, with 95% bootstrap intervals.
static sx_status fit_final_law(const import_ladder *l, size_t loss, json_t **fit) {
    unsigned char *all = sx_alloc(l->n_runs ? l->n_runs : 1, "fit all");
    if (!all) return sx_fail(SX_ERR_NOMEM, "fit: out of memory");
    memset(all, 1, l->n_runs);
    finallaw f;
    int nonembed = !import_gives_n(l, 0);   // N with embeddings, where the ladder gives it
    sx_status st = finallaw_fit(l, all, loss, nonembed, 400, &f);
    free(all);
    if (st) return st;
    static const char *names[LAW_ND_NPARAM] = {"E", "A", "B", "alpha", "beta"};
    json_t *p = json_object(), *ci = json_object();
    const char *n_kind = nonembed ? "without embeddings" : "with embeddings";
    printf("final-loss law L = E + A*N^-alpha + B*D^-beta on %zu runs' final losses (N %s; Huber 1e-3 on log; "
           "in-sample mean |err| %.3f%%, max %.3f%%):\n", f.n_runs, n_kind, 100 * f.in_mean, 100 * f.in_max);
    for (int j = 0; j < LAW_ND_NPARAM; j++) {
        printf("  %-5s %10.5g   95%% [%.5g, %.5g] (%zu point-bootstrap resamples)\n", names[j], f.p[j], f.lo[j], f.hi[j], f.n_boot);
        json_object_set_new(p, names[j], json_real(f.p[j]));
        json_object_set_new(ci, names[j], json_pack("[f, f]", f.lo[j], f.hi[j]));
    }
    *fit = json_pack("{s:s, s:i, s:s, s:s, s:s, s:I, s:o, s:o, s:f, s:f}", "kind", "curve-ladder-final-law", "version", 1, "law",
                     "chinchilla approach 3", "n_kind", n_kind, "loss", l->loss_names[loss], "runs", (json_int_t)f.n_runs, "params", p, "ci95", ci,
                     "in_sample_mean", f.in_mean, "in_sample_max", f.in_max);
    if (!*fit) return sx_fail(SX_ERR_NOMEM, "fit: cannot build fit.json");
    forecast_seal(*fit);
    return SX_OK;
}

// sextant fit DIR on a curve ladder (sextant import): the joint law, N chosen one size back, the band's parts
// (law "nds"), or the final-loss law alone (law "final").
enum { LAW_NDS, LAW_FINAL };   // --law's choices, in order

static int fit_curve_ladder(const char *dir, const char *out, const char *loss, int law) {
    import_ladder l;
    json_t *fit = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s", *out ? out : "");
    if (!*out) snprintf(path, sizeof path, "%s/fit.json", dir);
    sx_status st = import_read_dir(dir, &l);
    int k = st ? 0 : import_loss_index(&l, loss);
    if (!st && k < 0) st = sx_fail(SX_ERR_ARG, "--loss: %s has no loss column '%s'", dir, loss);
    // Runs marked heldout are the ladder's test: fitted, a check of their forecast would be in-sample
    size_t all_runs = l.n_runs, heldout = st ? 0 : import_drop_heldout(&l);
    if (!st && heldout == all_runs)
        st = sx_fail(SX_ERR_ARG, "every run of %s has role heldout: there is nothing to fit", dir);
    if (!st && l.n_runs < 2)
        st = sx_fail(SX_ERR_ARG, "%s has one run to fit%s: a law needs several (and one size back, 3 sizes)", dir,
                     heldout ? " (the others have role heldout)" : "");
    if (!st && heldout)
        printf("fitting the %zu runs with role fit; the %zu with role heldout are left out (forecast one with forecast "
               "--ladder %s --run ID, check it with --check-run ID)\n", l.n_runs, heldout, dir);
    if (!st && law == LAW_FINAL) {
        st = fit_final_law(&l, (size_t)k, &fit);
        if (!st) st = fs_write_json(path, fit, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
        if (!st) printf("wrote %s\n", path);
        json_decref(fit);
        import_ladder_free(&l);
        return cli_report("fit", st);
    }
    if (!st) cli_say_fitting("fit", &l);
    if (!st) st = curvecast_fit(&l, (size_t)k, true, &fit);
    if (!st) st = fs_write_json(path, fit, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    if (!st) {
        json_t *sg = json_object_get(fit, "sigma");
        print_joint_law(fit);
        double noise = json_number_value(json_object_get(sg, "noise")), back = json_number_value(json_object_get(sg, "one_size_back"));
        json_t *sl = json_object_get(fit, "schedule_law"), *slp = json_object_get(sl, "params"), *ch = json_object_get(sl, "schedule_law_choice");
        json_t *tp = json_object_get(json_object_get(sl, "tissue"), "params");
#define V(a, k) json_number_value(json_array_get(a, k))
        if (sl)
            printf("schedule laws (one size): multi-power L0 %.4g A %.4g B %.4g alpha %.4g C %.4g beta %.4g gamma %.4g (shape "
                   "prior weight %g); Tissue L0 %.4g A %.4g C %.4g alpha %.4g lambda %.4g; leaving one curve out: nds %.3f%%, "
                   "mpl %.3f%%, tissue %.3f%% -> %s is the forecast's law\n", V(slp, 0), V(slp, 1), V(slp, 2), V(slp, 3),
                   V(slp, 4), V(slp, 5), V(slp, 6), json_number_value(json_object_get(sl, "prior_weight")), V(tp, 0), V(tp, 1),
                   V(tp, 2), V(tp, 3), V(tp, 4), 100 * json_number_value(json_object_get(ch, "nds")),
                   100 * json_number_value(json_object_get(ch, "mpl")), 100 * json_number_value(json_object_get(ch, "tissue")),
                   json_string_value(json_object_get(fit, "law")));
#undef V
        const char *by_run = json_string_value(json_object_get(sg, "inner_by_run")), *inner = by_run ? "leaving one run out" : "one size back";
        const char *law = json_string_value(json_object_get(fit, "law"));
        json_t *lb = json_object_get(json_object_get(sl, "length_back"), law);
        if (sl && strcmp(law, "nds")) {   // a schedule law's band (curvecast.c, backtest_extrapolation)
            double loo = json_number_value(json_object_get(ch, law)), len = lb ? json_number_value(lb) : NAN;
            back = backtest_sched_size_term(loo, len);
            char parts[300];
            if (lb)
                snprintf(parts, sizeof parts, "the larger of the %s law's errors leaving one curve out, %.3f%%, and one length "
                         "back, %.3f%%), or %.3f%% per doubling of a run's steps past the longest trained (%lld steps) where "
                         "more", law, 100 * loo, 100 * len, 100 * len, (long long)json_integer_value(json_object_get(sl, "max_steps")));
            else   // the halves could not be fitted, or no run has points past its half to score them on
                snprintf(parts, sizeof parts, "the %s law's error leaving one curve out; one length back not measured: too "
                         "few points before or after half of the runs)", law);
            printf("band sigma: point noise %.3f%% (the residuals' high-frequency part), extrapolation %.3f%% (%s; %s "
                   "dominates\n", 100 * noise, 100 * back, parts, noise > back ? "the point noise" : "the extrapolation");
        } else {
            json_t *nlb = json_object_get(sg, "length_back");
            char length[200] = "";
            if (nlb)
                snprintf(length, sizeof length, ", or %.3f%% per doubling of a run's tokens per parameter past the most any "
                         "run had (%.3g) where more (error one length back)", 100 * json_number_value(nlb),
                         json_number_value(json_object_get(sg, "max_tokens_per_param")));
            int one_size = by_run && !strcmp(by_run, "one size");   // no size step to scale by
            printf("band sigma: point noise %.3f%% (the residuals' high-frequency part), extrapolation %.3f%%%s "
                   "(error %s)%s; %s dominates\n", 100 * noise, 100 * back, one_size ? "" : " per size step", inner, length,
                   noise > back ? "the point noise" : "the extrapolation");
        }
        const char *above = json_string_value(json_object_get(fit, "forecaster_above"));
        if (above)
            printf("above the training sizes, forecast by the %s law (error %s: joint %.3f%%, per-fraction %.3f%%)\n",
                   strcmp(above, "nds") ? "per-fraction" : "joint", inner, 100 * back,
                   100 * json_number_value(json_object_get(json_object_get(fit, "perfrac"), "one_size_back")));
        if (by_run) cli_note_by_run(by_run);
        printf("wrote %s\n", path);
    }
    json_decref(fit);
    import_ladder_free(&l);
    return cli_report("fit", st);
}

// One line per task: the accuracy law chosen (or why none), its held-out error, and the task loss's final law.
static void print_tasks(json_t *tasks) {
    const char *name;
    json_t *t;
    json_object_foreach(tasks, name, t) {
        json_t *law = json_object_get(t, "acc_law"), *forms = json_object_get(law, "forms");
        const char *form = json_string_value(json_object_get(law, "form")), *status = json_string_value(json_object_get(law, "status"));
        json_t *p = json_object_get(json_object_get(json_object_get(t, "loss_fit"), "final_loss_vs_compute"), "params");
        if (!strcmp(status, "informative")) printf("task %s: accuracy law %s", name, form);
        else printf("task %s: no accuracy law (%s: the accuracies are indistinguishable from a constant %.1f%%, so the band "
                    "is wide)", name, status, 100 * json_number_value(json_object_get(law, "level")));
        printf("; leave-one-rung-out rms");
        const char *fname;
        json_t *f;
        json_object_foreach(forms, fname, f) {
            json_t *r = json_object_get(f, "loro_rmse");
            if (json_is_number(r)) printf(" %s %.2f", fname, 100 * json_number_value(r));
            else printf(" %s -", fname);
        }
        printf(" points; %lld points from %lld rungs", (long long)json_integer_value(json_object_get(law, "points")),
               (long long)json_integer_value(json_object_get(law, "groups")));
        if (p) printf("; task loss L(C) = %.4f + %.4g * C^-%.4f", json_number_value(json_object_get(p, "Linf")),
                      json_number_value(json_object_get(p, "A")), json_number_value(json_object_get(p, "alpha")));
        printf("\n");
    }
}

int cmd_fit(int argc, char **argv) {
    static const flags_command cmd = {
        "fit SPEC [--runs DIR] [--out fit.json] [--val-set NAME] [--with DATA_LIMITED_SPEC]\n"
        "       sextant fit LADDER_DIR [--loss NAME] [--law nds|final] [--out fit.json]   (a ladder from `sextant import`)",
        "Reads every run of a finished ladder and fits: the per-fraction laws L_f(C) = Linf + A*C^-alpha\n"
        "across rungs (with a seed bootstrap) and a multi-power schedule law per rung.",
        1, 1, "give the ladder spec (or an imported ladder directory): sextant fit SPEC"};
    const char *runs, *out, *loss, *val_set, *with;
    int law;
    const flag_def flags[] = {
        {"loss", FLAG_STR, &loss, "", "curve ladders: the loss column (default: the first)"},
        {"law", FLAG_CHOICE, &(flag_choice){&law, "nds|final"}, "nds",
         "curve ladders: nds (the joint law of whole curves) or final (Chinchilla's approach 3 on final losses, with "
         "95% bootstrap intervals)"},
        {"with", FLAG_STR, &with, "", "a data-limited ladder (key unique_tokens) whose runs, with this ladder's, fit the "
                                      "data-constrained law that forecast uses when a hero repeats data"},
        {"val-set", FLAG_STR, &val_set, "", "fit one validation set of a mixture (val_loss_NAME) instead of the mix; "
                                            "default: the spec's val_set key, else val_loss"},
        {"runs", FLAG_STR, &runs, "", "the ladder's output directory (default runs/<name>)"},
        {"out", FLAG_STR, &out, "", "where to write fit.json (default <runs>/fit.json)"},
    };
    flags_args a;
    if (flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a)) return 0;
    sx_status st = a.st;
    bool curves = !st && import_is_ladder_dir(a.pos[0]);
    if (!st) st = flags_only(&a, curves ? "loss,law,out" : "with,val-set,runs,out",
                             curves ? "a curve ladder (sextant import)" : "a ladder spec (a curve ladder is a directory from sextant import)");
    if (!st && curves) return fit_curve_ladder(a.pos[0], out, loss, law);
    ladder_spec spec;
    char dir[1100], path[1200];
    if (!st) st = ladder_open(a.pos[0], runs, &spec, dir, sizeof dir);
    if (!st && *val_set && strlen(val_set) >= sizeof spec.val_set) st = sx_fail(SX_ERR_ARG, "--val-set: name too long");
    if (st) return cli_report("fit", st);
    if (*val_set) strcpy(spec.val_set, val_set);
    if (*spec.val_set) printf("fitting validation set %s (val_loss_%s)\n", spec.val_set, spec.val_set);
    snprintf(path, sizeof path, "%s", *out ? out : "");
    if (!*out) snprintf(path, sizeof path, "%s/fit.json", dir);
    json_t *fit;
    if ((st = forecast_fit_ladder(&spec, dir, &fit))) return cli_report("fit", st);
    if (spec.n_lr_sweep) {
        ladder_data d;
        json_t *rule = NULL;
        if (!(st = ladder_data_read(&spec, dir, &d))) st = lrsweep_fit(&d, &rule);
        ladder_data_free(&d);
        if (st) {   // the rest of the fit stands; forecast then keeps the ladder's assumed rule
            fprintf(stderr, "sextant fit: warning: no LR rule from the sweep: %s\n", sx_last_error());
            st = SX_OK;
        } else {
        printf("LR rule from the sweep: lr*(w) = %.4g x (%.0f/w)^%.3f (se of ln coef %.3f, of the power %.3f; the ladder "
               "assumed %.4g x (%.0f/w)^%g)\n", json_number_value(json_object_get(rule, "coef")), spec.lr_ref_width,
               json_number_value(json_object_get(rule, "power")), json_number_value(json_object_get(rule, "se_log_coef")),
               json_number_value(json_object_get(rule, "se_power")), spec.lr, spec.lr_ref_width, spec.lr_width_power);
        json_object_set_new(fit, "lr_rule", rule);
        }
    }
    if (*with) {
        ladder_spec lim;
        char with_dir[1100];
        if (!(st = ladder_open(with, NULL, &lim, with_dir, sizeof with_dir))) {
            snprintf(lim.val_set, sizeof lim.val_set, "%s", spec.val_set);
            json_t *dc = NULL;
            if (!(st = datafit_ladders(&spec, dir, &lim, with_dir, &dc))) {
                json_t *pp = json_object_get(dc, "params"), *ci = json_object_get(dc, "ci");
                printf("data-constrained law from %lld run pairs (%lld points, %lld repeating, up to %.1f passes): repeat "
                       "penalty %.4g x (D'^-%.3f - D^-%.3f), Rstar %.3g [%.3g, %.3g] (90%%), rmse %.4f\n",
                       (long long)json_integer_value(json_object_get(dc, "run_pairs")),
                       (long long)json_integer_value(json_object_get(dc, "n_points")),
                       (long long)json_integer_value(json_object_get(dc, "repeating_points")),
                       json_number_value(json_object_get(dc, "max_passes")), json_number_value(json_object_get(pp, "B")),
                       json_number_value(json_object_get(pp, "beta")), json_number_value(json_object_get(pp, "beta")),
                       json_number_value(json_object_get(pp, "Rstar")),
                       json_number_value(json_array_get(json_object_get(ci, "Rstar"), 0)),
                       json_number_value(json_array_get(json_object_get(ci, "Rstar"), 1)),
                       json_number_value(json_object_get(dc, "rmse")));
                json_object_set_new(fit, "data_constrained", dc);
            }
        }
        if (st == SX_ERR_NUMERIC) {   // the rest of the fit stands; forecast then says the data law is missing
            fprintf(stderr, "sextant fit: warning: no data-constrained law: %s\n", sx_last_error());
            st = SX_OK;
        }
        if (st) { json_decref(fit); return cli_report("fit", st); }
    }
    json_t *tasks = NULL;   // the downstream forecast's laws, for every task the runs logged
    if ((st = taskcast_fit(&spec, dir, &tasks))) { json_decref(fit); return cli_report("fit", st); }
    size_t n_tasks = json_object_size(tasks);
    if (n_tasks) json_object_set_new(fit, "tasks", tasks);
    else json_decref(tasks);
    if (spec.n_lr_sweep || *with || n_tasks) forecast_seal(fit);   // the additions are covered by the hash too
    st = fs_write_json(path, fit, JSON_INDENT(1) | JSON_REAL_PRECISION(17));   // full precision: the hash covers it
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
    json_t *joint = json_object_get(fit, "joint_law");
    if (joint) {
        print_joint_law(joint);
        printf("(the forecast is the mean of the per-fraction laws' and the joint law's)\n");
    }
    print_tasks(json_object_get(fit, "tasks"));
    printf("wrote %s\n", path);
    json_decref(fit);
    return cli_report("fit", st);
}
