// finallaw: Chinchilla's approach 3 on a curve ladder's final losses. See finallaw.h.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "laws/finallaw.h"
#include "laws/fit.h"

int finallaw_final(const import_ladder *l, const import_run *r, size_t loss, double *final, double *tokens) {
    size_t q = r->n_points - 1;
    if (r->n_points == 0 || r->step[q] != r->total_steps) return 0;
    *final = r->loss[q * l->n_loss + loss];
    *tokens = r->tokens[q];
    return 1;
}

sx_status finallaw_fit(const import_ladder *l, const unsigned char *use, size_t loss, int nonembed, size_t n_boot,
                       finallaw *out) {
    memset(out, 0, sizeof *out);
    out->nonembed = nonembed;
    for (int j = 0; j < LAW_ND_NPARAM; j++) out->lo[j] = out->hi[j] = NAN;
    size_t cap = l->n_runs ? l->n_runs : 1, n = 0;
    double *N = sx_alloc(cap * sizeof *N, "finallaw N"), *D = sx_alloc(cap * sizeof *D, "finallaw D"),
           *y = sx_alloc(cap * sizeof *y, "finallaw y");
    sx_status st = N && D && y ? SX_OK : sx_fail(SX_ERR_NOMEM, "final-loss law: out of memory");
    for (size_t i = 0; !st && i < l->n_runs; i++) {
        const import_run *r = &l->runs[i];
        if (use[i] && finallaw_final(l, r, loss, &y[n], &D[n])) N[n++] = nonembed ? r->n_nonembed : r->n_params;
    }
    if (!st && n < 2 * LAW_ND_NPARAM)
        st = sx_fail(SX_ERR_ARG, "final-loss law: %zu runs with an evaluation at their last step; it needs at least %d", n,
                     2 * LAW_ND_NPARAM);
    fit_law law;
    fit_result res;
    fit_options o;
    fit_options_default(&o);
    if (!st && !(st = law_nd_bind(N, D, n, &law))) {
        if (!(st = fit_law_run(&law, y, NULL, &o, &res))) {
            if (n_boot) st = fit_bootstrap(&law, y, NULL, 0, &o, n_boot, 0.95, 1, &res);
            memcpy(out->p, res.params, sizeof out->p);
            for (int j = 0; !st && n_boot && j < LAW_ND_NPARAM; j++) {
                out->lo[j] = res.ci_lo[j];
                out->hi[j] = res.ci_hi[j];
            }
            out->n_boot = res.n_boot;
            out->in_mean = res.mean_abs_rel;
            out->in_max = res.max_abs_rel;
            fit_result_free(&res);
        }
        fit_law_free(&law);
    }
    out->n_runs = n;
    free(N);
    free(D);
    free(y);
    return st;
}

double finallaw_predict(const finallaw *f, const import_ladder *l, const import_run *r) {
    double final, tokens;
    if (!finallaw_final(l, r, 0, &final, &tokens)) tokens = (double)r->total_steps * r->tokens_per_step;
    return law_nd_eval(f->p, f->nonembed ? r->n_nonembed : r->n_params, tokens);
}
