// ladder_curves: a finished sextant ladder -> a curve ladder. See ladder_curves.h.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "scale/ladder_curves.h"

// One run's rows: its evaluations as points, every logged step's LR as the trace. r overwritten.
static sx_status run_curves(const ladder_run *x, const rundir_run *rd, import_run *r) {
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", x->dir);
    snprintf(r->group, sizeof r->group, "w%zu", x->width);
    r->n_params = (double)rd->n_params;
    r->n_nonembed = (double)rd->n_params_nonembed;
    r->n_given = IMPORT_N_BOTH;
    r->tokens_per_step = (double)rd->batch_tokens;
    r->peak_lr = x->lr;
    r->flops_per_token = rd->flops_per_token;
    r->total_steps = (long)rd->total_steps;
    r->warmup_steps = x->warmup_steps;
    r->seed = (long)x->seed;
    if (rd->n_steps != (size_t)rd->total_steps || rd->n_evals == 0)
        return sx_fail(SX_ERR_FORMAT, "%s: %zu of %lld steps logged, %zu evaluations: not a finished run", x->dir, rd->n_steps,
                       (long long)rd->total_steps, rd->n_evals);
    r->n_points = rd->n_evals;
    r->n_trace = rd->n_steps;
    r->step = sx_alloc(r->n_points * sizeof *r->step, "ladder_curves step");
    r->tokens = sx_alloc(r->n_points * sizeof *r->tokens, "ladder_curves tokens");
    r->lr = sx_alloc(r->n_points * sizeof *r->lr, "ladder_curves lr");
    r->loss = sx_alloc(r->n_points * sizeof *r->loss, "ladder_curves loss");
    r->trace_step = sx_alloc(r->n_trace * sizeof *r->trace_step, "ladder_curves trace");
    r->trace_lr = sx_alloc(r->n_trace * sizeof *r->trace_lr, "ladder_curves trace lr");
    if (!r->step || !r->tokens || !r->lr || !r->loss || !r->trace_step || !r->trace_lr) return sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < r->n_points; i++) {
        const rundir_eval *e = &rd->evals[i];
        r->step[i] = (long)e->step;
        r->tokens[i] = e->tokens;
        r->lr[i] = rd->lr[e->step - 1];
        r->loss[i] = e->val_loss;
    }
    for (size_t i = 0; i < r->n_trace; i++) {
        r->trace_step[i] = (long)i + 1;
        r->trace_lr[i] = rd->lr[i];
    }
    return SX_OK;
}

sx_status ladder_curves_from_data(const ladder_data *d, import_ladder *out) {
    memset(out, 0, sizeof *out);
    out->n_loss = 1;
    out->n_given = IMPORT_N_BOTH;
    ladder_loss_key(d->spec, out->loss_names[0], sizeof out->loss_names[0]);
    out->runs = sx_calloc_n(d->n_plan ? d->n_plan : 1, sizeof *out->runs, "ladder_curves runs");
    if (!out->runs) return sx_fail(SX_ERR_NOMEM, "out of memory");
    sx_status st = SX_OK;
    for (size_t i = 0; i < d->n_plan && !st; i++) {
        if (d->plan[i].branch == LADDER_SWEEP) continue;
        st = run_curves(&d->plan[i], &d->runs[i], &out->runs[out->n_runs++]);
    }
    return st;
}
