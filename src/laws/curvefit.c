// curvefit: the joint (N, D, schedule) law on curve-ladder runs. See curvefit.h.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "laws/curvefit.h"

void curvefit_options_default(curvefit_options *o) {
    *o = (curvefit_options){.nonembed = 0, .loss = 0, .min_frac = 0.1, .max_frac = 1, .weight = CURVEFIT_W_SQRT};
}

// The law's view of run r at the given 1-based steps: the LR shape (malloc'd into *mult) and 0-based steps
// (malloc'd into *idx).
double curvefit_n(const import_run *r, int nonembed, double n_offset) {
    return (nonembed ? r->n_nonembed : r->n_params) - n_offset;
}

void curvefit_n_name(int nonembed, double n_offset, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "%s embeddings", nonembed ? "without" : "with");
    if (n_offset > 0 && n >= 0 && (size_t)n < cap) snprintf(buf + n, cap - (size_t)n, " less %.3g", n_offset);
}

static sx_status nds_run_of(const import_run *r, int nonembed, double n_offset, const long *steps, size_t n,
                            law_nds_run *out, double **mult, size_t **idx) {
    *mult = sx_alloc((size_t)r->total_steps * sizeof **mult, "curvefit mult");
    *idx = sx_alloc((n ? n : 1) * sizeof **idx, "curvefit idx");
    if (!*mult || !*idx) return sx_fail(SX_ERR_NOMEM, "curve fit: out of memory");
    sx_status st = import_run_lr(r, *mult);
    if (st) return st;
    for (long i = 0; i < r->total_steps; i++) (*mult)[i] /= r->peak_lr;
    for (size_t q = 0; q < n; q++) (*idx)[q] = (size_t)(steps[q] - 1);
    if (!(curvefit_n(r, nonembed, n_offset) > 0))
        return sx_fail(SX_ERR_ARG, "curve fit: run '%s': N %.6g less the offset %.6g is not positive", r->id, r->n_params, n_offset);
    *out = (law_nds_run){.n_params = curvefit_n(r, nonembed, n_offset), .tokens_per_step = r->tokens_per_step,
                         .mult = *mult, .n_steps = (size_t)r->total_steps, .steps = *idx, .n_points = n};
    return SX_OK;
}

sx_status curvefit_predict(const curvefit_model *m, const import_run *r, const long *steps, size_t n, double *pred) {
    law_nds_run u;
    double *mult = NULL;
    size_t *idx = NULL;
    sx_status st = nds_run_of(r, m->nonembed, m->n_offset, steps, n, &u, &mult, &idx);
    if (!st) st = law_nds_predict(m->p, &u, 1, pred);
    free(mult);
    free(idx);
    return st;
}

size_t curvefit_stride(size_t points) { return points > CURVEFIT_MAX_POINTS ? (points + CURVEFIT_MAX_POINTS - 1) / CURVEFIT_MAX_POINTS : 1; }

size_t curvefit_thin(size_t n_points, size_t first, size_t *stride) {
    size_t given = n_points - first;
    *stride = curvefit_stride(given);
    return given ? first + (given - 1) % *stride : n_points;   // counted back from the last: the final loss is kept
}

size_t curvefit_first(const import_run *r, double min_frac) {
    size_t first = 0;
    while (first < r->n_points && (double)r->step[first] < min_frac * (double)r->total_steps) first++;
    return first;
}

// One past the last of run r's points at or before max_frac of its length.
static size_t end_fitted(const import_run *r, double max_frac) {
    size_t end = r->n_points;
    while (end > 0 && (double)r->step[end - 1] > max_frac * (double)r->total_steps) end--;
    return end;
}

size_t curvefit_points(const import_ladder *l, const unsigned char *use, const curvefit_options *o, size_t *thinned) {
    size_t n = 0;
    if (thinned) *thinned = 0;
    for (size_t i = 0; i < l->n_runs; i++) {
        if (use && !use[i]) continue;
        size_t stride = 1, end = end_fitted(&l->runs[i], o->max_frac), first = curvefit_first(&l->runs[i], o->min_frac);
        size_t q = first < end ? curvefit_thin(end, first, &stride) : end;
        if (q < end) n += (end - q + stride - 1) / stride;
        if (thinned) *thinned += stride > 1;
    }
    return n;
}

sx_status curvefit_fit(const import_ladder *l, const unsigned char *use, const curvefit_options *o, curvefit_model *m) {
    memset(m, 0, sizeof *m);
    m->nonembed = o->nonembed;
    m->n_offset = o->n_offset;
    size_t nr = 0, np = 0;
    law_nds_run *runs = sx_calloc_n(l->n_runs ? l->n_runs : 1, sizeof *runs, "curvefit runs");
    double **mults = sx_calloc_n(l->n_runs ? l->n_runs : 1, sizeof *mults, "curvefit mults");
    size_t **idxs = sx_calloc_n(l->n_runs ? l->n_runs : 1, sizeof *idxs, "curvefit idxs");
    long **steps = sx_calloc_n(l->n_runs ? l->n_runs : 1, sizeof *steps, "curvefit steps");
    size_t total = 0;
    for (size_t i = 0; i < l->n_runs; i++) total += l->runs[i].n_points;
    double *obs = sx_alloc((total ? total : 1) * sizeof *obs, "curvefit obs"),
           *w = sx_alloc((total ? total : 1) * sizeof *w, "curvefit w");
    double *pred = sx_alloc((total ? total : 1) * sizeof *pred, "curvefit pred");
    size_t *run_of = sx_alloc((total ? total : 1) * sizeof *run_of, "curvefit run_of");
    sx_status st = runs && mults && idxs && steps && obs && w && pred && run_of ? SX_OK : sx_fail(SX_ERR_NOMEM, "curve fit: out of memory");
    for (size_t i = 0; i < l->n_runs && !st; i++) {
        if (use && !use[i]) continue;
        const import_run *r = &l->runs[i];
        steps[nr] = sx_alloc((r->n_points ? r->n_points : 1) * sizeof **steps, "curvefit steps");
        if (!steps[nr]) { st = sx_fail(SX_ERR_NOMEM, "curve fit: out of memory"); break; }
        size_t end = end_fitted(r, o->max_frac), first = curvefit_first(r, o->min_frac), stride = 1, k = 0;
        size_t given = first < end ? end - first : 0;
        for (size_t q = given ? curvefit_thin(end, first, &stride) : end; q < end; q += stride) {
            steps[nr][k] = r->step[q];
            obs[np + k] = r->loss[q * l->n_loss + o->loss];
            run_of[np + k] = nr;
            k++;
        }
        if (!k) { free(steps[nr]); steps[nr] = NULL; continue; }
        // the kept points carry the weight of all the run's points, so thinning leaves runs' shares of the fit as they were
        double wk = o->weight == CURVEFIT_W_POINT ? 1 : o->weight == CURVEFIT_W_SQRT ? 1 / sqrt((double)given) : 1 / (double)given;
        if (k < given) wk *= (double)given / (double)k;
        for (size_t q = 0; q < k; q++) w[np + q] = wk;
        st = nds_run_of(r, o->nonembed, o->n_offset, steps[nr], k, &runs[nr], &mults[nr], &idxs[nr]);
        np += k;
        nr++;
    }
    fit_law law = {0};
    fit_result res = {0};
    if (!st && nr < 2) st = sx_fail(SX_ERR_ARG, "curve fit: needs at least 2 runs with points, got %zu", nr);
    if (!st) st = law_nds_bind(runs, nr, &law);
    fit_options fo;
    fit_options_default(&fo);
    size_t n_free = st ? 0 : fit_free_params(&law, &fo);
    if (!st && np < n_free)
        st = sx_fail(SX_ERR_ARG, "curve fit: %zu points at or after %.0f%% of their runs (%zu runs), for a law of %zu "
                     "free parameters: log evaluations more often, or add runs", np, 100 * o->min_frac, nr, n_free);
    if (!st) st = fit_law_run(&law, obs, w, &fo, &res);
    if (!st) {
        memcpy(m->p, res.params, sizeof m->p);
        law.eval(law.ctx, m->p, pred, NULL);
        m->n_runs = nr;
        m->n_points = np;
        double sum = 0, mx = 0, ss = 0, hf = 0;
        size_t n_hf = 0;
        for (size_t i = 0; i < np; i++) {
            double e = pred[i] / obs[i] - 1;
            sum += fabs(e);
            mx = fmax(mx, fabs(e));
            ss += e * e;
            // second difference of the residuals within a run: e_i - (e_{i-1} + e_{i+1})/2 has variance 1.5 sigma^2
            // for independent noise, while a smooth misfit cancels
            if (i > 0 && i + 1 < np && run_of[i - 1] == run_of[i] && run_of[i + 1] == run_of[i]) {
                double d = e - 0.5 * (pred[i - 1] / obs[i - 1] - 1 + pred[i + 1] / obs[i + 1] - 1);
                hf += d * d;
                n_hf++;
            }
        }
        m->in_mean = sum / (double)np;
        m->in_max = mx;
        m->sigma_fit = sqrt(ss / (double)np);
        m->sigma_noise = n_hf ? sqrt(hf / (double)n_hf / 1.5) : m->sigma_fit;
    }
    fit_result_free(&res);
    fit_law_free(&law);
    for (size_t i = 0; i < l->n_runs; i++) {
        if (mults) free(mults[i]);
        if (idxs) free(idxs[i]);
        if (steps) free(steps[i]);
    }
    free(runs); free(mults); free(idxs); free(steps); free(obs); free(w); free(pred); free(run_of);
    return st;
}
