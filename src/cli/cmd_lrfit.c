// sextant lr-fit RUN...: the best peak LR among finished runs that differ only in it, by the fit the ladder's
// LR sweep uses (laws/lrfit.h): the vertex of a parabola in ln LR through the lowest final validation loss and
// its two neighbours.
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "core/flags.h"
#include "laws/lrfit.h"
#include "runs/rundir.h"
#include "train/progress.h"

// What every run shares with the first: the model, the training length and every training flag but the
// peak LR and the seed (where config.json records its flags).
typedef struct {
    char model[64];
    int64_t total_tokens;
    json_t *flags;
} run_shape;

// The peak LR (config.json's optimizer.lr) and final validation loss of a finished run whose shape is the
// first run's (is_first: this is the first run, and fills in *first).
static sx_status run_point(const char *dir, run_shape *first, bool is_first, double *lr, double *loss) {
    rundir_run r;
    sx_status st = rundir_read(dir, &r);
    json_t *opt = st ? NULL : json_object_get(r.config, "optimizer");
    if (!st && is_first) {
        snprintf(first->model, sizeof first->model, "%s", r.model);
        first->total_tokens = r.total_tokens;
        first->flags = json_incref(json_object_get(r.config, "flags"));
    }
    if (!st && (strcmp(r.model, first->model) || r.total_tokens != first->total_tokens))
        st = sx_fail(SX_ERR_ARG, "%s: %s on %lld tokens, but the first run is %s on %lld tokens: give runs that differ only "
                     "in their peak LR", dir, r.model, (long long)r.total_tokens, first->model, (long long)first->total_tokens);
    json_t *flags = st ? NULL : json_object_get(r.config, "flags");
    char diff[1024];
    if (json_is_object(flags) && json_is_object(first->flags) &&
        train_flags_differ(first->flags, NULL, flags, "lr,seed", "the first run:", diff, sizeof diff))
        st = sx_fail(SX_ERR_ARG, "%s: trained with other settings than the first run: %s; give runs that differ only in "
                     "their peak LR (and seed)", dir, diff);
    if (!st && !r.done) st = sx_fail(SX_ERR_ARG, "%s: the run has not finished (no DONE)", dir);
    if (!st && !(r.n_evals && r.evals[r.n_evals - 1].step == r.n_steps))
        st = sx_fail(SX_ERR_ARG, "%s: no validation loss at the last step", dir);
    if (!st && !json_is_number(json_object_get(opt, "lr")))
        st = sx_fail(SX_ERR_FORMAT, "%s: config.json has no optimizer.lr (not a sextant run?)", dir);
    if (!st) {
        *lr = json_number_value(json_object_get(opt, "lr"));
        *loss = r.evals[r.n_evals - 1].val_loss;
    }
    rundir_free(&r);
    return st;
}

int cmd_lrfit(int argc, char **argv) {
    static const flags_command cmd = {
        "lr-fit RUN_DIR RUN_DIR RUN_DIR... [--ref LR] [--noise REL]",
        "The best peak LR among finished runs that differ only in their peak LR (same model, data, schedule and\n"
        "steps): the vertex of a parabola in ln LR through the lowest final validation loss and its two\n"
        "neighbours, with the standard error of its ln, as a ladder's LR sweep fits each width.",
        3, LRFIT_MAX_POINTS, "give at least three finished runs at different peak LRs: sextant lr-fit RUN RUN RUN"};
    double ref, noise;
    const flag_def flags[] = {
        {"ref", FLAG_DOUBLE, &ref, "0", "also give the best LR as a multiple of this LR (e.g. the LR rule's)"},
        {"noise", FLAG_DOUBLE, &noise, "0.001",
         "relative noise of a final loss assumed at least (the standard error's floor; with 3 runs, all of it)"},
    };
    flags_args a;
    if (flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a)) return 0;
    sx_status st = a.st;
    if (!st && !(ref >= 0 && isfinite(ref))) st = sx_fail(SX_ERR_ARG, "--ref: give a positive LR");
    if (!st && !(noise >= 0 && noise < 1)) st = sx_fail(SX_ERR_ARG, "--noise: give a relative noise in [0, 1)");
    double lr[LRFIT_MAX_POINTS], loss[LRFIT_MAX_POINTS];
    run_shape first = {0};
    for (int i = 0; i < a.npos && !st; i++)
        if (!(st = run_point(a.pos[i], &first, i == 0, &lr[i], &loss[i]))) printf("%-40s peak LR %-10.4g final validation loss %.4f\n", a.pos[i], lr[i], loss[i]);
    json_decref(first.flags);
    lrfit_optimum o;
    if (!st) st = lrfit_vertex(lr, loss, (size_t)a.npos, noise, &o);
    if (st) return cli_report("lr-fit", st);
    printf("best LR %.4g (standard error of its ln %.3f; curvature %.4g per (ln LR)^2)", o.lr, o.se_log, o.curvature);
    if (ref > 0) printf("; %.2fx %.4g", o.lr / ref, ref);
    printf("\n");
    return 0;
}
