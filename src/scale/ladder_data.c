#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/status.h"
#include "scale/ladder_data.h"

void ladder_data_free(ladder_data *d) {
    for (size_t i = 0; d->runs && i < d->n_plan; i++) rundir_free(&d->runs[i]);
    free(d->runs);
    free(d->plan);
}

sx_status ladder_data_read(const ladder_spec *spec, const char *dir, ladder_data *d) {
    memset(d, 0, sizeof *d);
    d->spec = spec;
    sx_status st = ladder_plan(spec, &d->plan, &d->n_plan);
    if (st) return st;
    size_t started = 0;   // runs with a config.json: none means the ladder was never run (here)
    for (size_t i = 0; i < d->n_plan; i++) {
        char config[4200];
        snprintf(config, sizeof config, "%s/%s/config.json", dir, d->plan[i].dir);
        started += access(config, F_OK) == 0;
    }
    if (!started)
        return sx_fail(SX_ERR_ARG, "%s holds none of the ladder's %zu runs: run `sextant ladder run %s` first (or "
                       "`compare --run`), or point `fit --runs` at the ladder's directory", dir, d->n_plan, spec->spec_path);
    d->runs = sx_calloc_n(d->n_plan, sizeof *d->runs, "ladder_data d.runs");
    if (!d->runs) return sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < d->n_plan && !st; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, d->plan[i].dir);
        if (started < d->n_plan && access(path, F_OK))   // a run not started yet: say so, not "cannot open"
            return sx_fail(SX_ERR_ARG, "%s: %zu of the ladder's %zu runs are started, not %s; run `sextant ladder run %s` "
                           "first (`ladder status` shows each)", dir, started, d->n_plan, d->plan[i].dir, spec->spec_path);
        st = *spec->metric ? rundir_read_key(path, spec->metric, &d->runs[i]) : rundir_read_set(path, spec->val_set, &d->runs[i]);
        if (!st) st = ladder_run_check(spec, d->plan, i, dir);   // a run of another spec (an edited LR) is not this one
        if (!st && !d->runs[i].done)
            st = sx_fail(SX_ERR_ARG, "%s has not finished; run `sextant ladder run %s` first", path, spec->spec_path);
    }
    return st;
}

// The validation loss logged at fraction f of a run (its eval at step round(f·total)), or NAN.
double ladder_loss_at_frac(const rundir_run *r, double f) {
    size_t step = (size_t)llround(f * (double)r->total_steps);
    for (size_t i = 0; i < r->n_evals; i++)
        if (r->evals[i].step == step) return r->evals[i].val_loss;
    return NAN;
}

// Seed means (and relative seed spread) of every rung at every fraction; rungs in plan order (largest
// first). With pick != NULL, rung r averages its seeds picked at pick[start .. start+S_r) (start, S_r: the
// rung's first main run and seed count) instead of all of them (bootstrap).
void ladder_rung_curves(const ladder_data *d, const size_t *pick, double *mean, double *sd_rel) {
    const ladder_spec *s = d->spec;
    size_t R = s->n_rungs, F = s->n_eval;
    for (size_t r = 0, start = 0; r < R; start += ladder_rung_seeds(s, r), r++)
        for (size_t f = 0; f < F; f++) {
            size_t S = ladder_rung_seeds(s, r);
            double sum = 0, sq = 0;
            for (size_t k = 0; k < S; k++) {
                double v = ladder_loss_at_frac(&d->runs[start + (pick ? pick[start + k] : k)], s->eval_at[f]);
                sum += v;
                sq += v * v;
            }
            double m = sum / (double)S;
            mean[r * F + f] = m;
            if (sd_rel) sd_rel[r * F + f] = S > 1 ? sqrt(fmax(0, (sq - sum * m) / (double)(S - 1))) / m : 0;
        }
}
