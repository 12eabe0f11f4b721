// laws: formulas, derivatives and fit bindings of the scaling laws (see laws.h for the conventions).
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "laws/laws.h"

// ---- closed-form laws -------------------------------------------------------------------------------

double law_nd_eval(const double p[LAW_ND_NPARAM], double n_params, double n_tokens) {
    return p[LAW_ND_E] + p[LAW_ND_A] * pow(n_params, -p[LAW_ND_ALPHA]) +
           p[LAW_ND_B] * pow(n_tokens, -p[LAW_ND_BETA]);
}

// ND1 is ND with beta = alpha.
static void nd_of_nd1(const double *p1, double *p) {
    p[LAW_ND_E] = p1[LAW_ND1_E];
    p[LAW_ND_A] = p1[LAW_ND1_A];
    p[LAW_ND_B] = p1[LAW_ND1_B];
    p[LAW_ND_ALPHA] = p[LAW_ND_BETA] = p1[LAW_ND1_ALPHA];
}

double law_nd1_eval(const double p[LAW_ND1_NPARAM], double n_params, double n_tokens) {
    double p5[LAW_ND_NPARAM];
    nd_of_nd1(p, p5);
    return law_nd_eval(p5, n_params, n_tokens);
}

double law_power_eval(const double p[LAW_POW_NPARAM], double x) {
    return p[LAW_POW_LINF] + p[LAW_POW_A] * pow(x, -p[LAW_POW_ALPHA]);
}

// ---- LR schedules -------------------------------------------------------------------------------------

struct law_sched {
    size_t n;
    double *lr;   // [n]
    double *P;    // [n] P[i] = sum_{j<=i} lr[j]
    size_t n_chg; // steps k >= 1 with lr[k-1] != lr[k], ascending
    size_t *chg_k;     // [n_chg]
    double *chg_d;     // [n_chg] lr[k-1] - lr[k]
    double *chg_lnlr;  // [n_chg] log(lr[k]) (-inf where lr[k] == 0)
    double *chg_pkm1;  // [n_chg] P(k-1)
};

law_sched *law_sched_new(const double *lr, size_t n) {
    SX_CHECK(n >= 1, "an LR schedule has at least one step");
    law_sched *s = sx_calloc_n(1, sizeof *s, "laws s");
    if (!s) {
        sx_fail(SX_ERR_NOMEM, "cannot allocate an LR schedule");
        return NULL;
    }
    s->n = n;
    s->lr = sx_alloc(n * sizeof(double), "laws s.lr");
    s->P = sx_alloc(n * sizeof(double), "laws s.P");
    size_t n_chg = 0;
    for (size_t k = 1; k < n; k++) n_chg += lr[k - 1] != lr[k];
    size_t m = n_chg ? n_chg : 1;
    s->chg_k = sx_alloc(m * sizeof(size_t), "laws s.chg_k");
    s->chg_d = sx_alloc(m * sizeof(double), "laws s.chg_d");
    s->chg_lnlr = sx_alloc(m * sizeof(double), "laws s.chg_lnlr");
    s->chg_pkm1 = sx_alloc(m * sizeof(double), "laws s.chg_pkm1");
    if (!s->lr || !s->P || !s->chg_k || !s->chg_d || !s->chg_lnlr || !s->chg_pkm1) {
        law_sched_free(s);
        sx_fail(SX_ERR_NOMEM, "cannot allocate an LR schedule of %zu steps", n);
        return NULL;
    }
    memcpy(s->lr, lr, n * sizeof(double));
    double acc = 0;
    for (size_t i = 0; i < n; i++) {
        SX_CHECK(lr[i] >= 0, "learning rates are non-negative");
        acc += lr[i];
        s->P[i] = acc;
    }
    for (size_t k = 1; k < n; k++) {
        if (lr[k - 1] == lr[k]) continue;
        size_t c = s->n_chg++;
        s->chg_k[c] = k;
        s->chg_d[c] = lr[k - 1] - lr[k];
        s->chg_lnlr[c] = lr[k] > 0 ? log(lr[k]) : -INFINITY;
        s->chg_pkm1[c] = s->P[k - 1];
    }
    return s;
}

void law_sched_free(law_sched *s) {
    if (!s) return;
    free(s->lr);
    free(s->P);
    free(s->chg_k);
    free(s->chg_d);
    free(s->chg_lnlr);
    free(s->chg_pkm1);
    free(s);
}

size_t law_sched_steps(const law_sched *s) { return s->n; }

double law_sched_s1(const law_sched *s, size_t t) {
    SX_CHECK(t < s->n, "the step lies within the schedule");
    return s->P[t];
}

// Number of LR changes at steps k <= t.
static size_t sched_changes_upto(const law_sched *s, size_t t) {
    size_t lo = 0, hi = s->n_chg;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->chg_k[mid] <= t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// Merges runs of up to `block` consecutive LR changes into one term of the MPL sum (midpoint rule with
// d-weighted mean LR and P(k-1)), for fast fitting. A run never crosses an eval step in sorted steps[n]
// nor changes sign, so "all changes k <= t" stays exact for every eval step t; chg_k becomes the run's last
// step. The merged sum differs from the exact one by a second-order term (predictions move <~5e-5).
static void sched_coarsen(law_sched *s, const size_t *steps, size_t n, size_t block) {
    size_t out = 0, e = 0, c = 0;
    while (c < s->n_chg) {
        while (e < n && steps[e] < s->chg_k[c]) e++; // first eval step >= this change
        size_t limit = e < n ? steps[e] : SIZE_MAX;  // the run may not pass this eval step
        double d = 0, wl = 0, wp = 0;
        size_t last = c, cnt = 0;
        int sign = s->chg_d[c] > 0;
        while (c < s->n_chg && cnt < block && s->chg_k[c] <= limit && (s->chg_d[c] > 0) == sign) {
            double lr = exp(s->chg_lnlr[c]);
            d += s->chg_d[c];
            wl += s->chg_d[c] * lr;
            wp += s->chg_d[c] * s->chg_pkm1[c];
            last = c++;
            cnt++;
        }
        s->chg_k[out] = s->chg_k[last];
        s->chg_d[out] = d;
        s->chg_lnlr[out] = log(wl / d);
        s->chg_pkm1[out] = wp / d;
        out++;
    }
    s->n_chg = out;
}

// Tissue's S2 at every step for one lambda: s2[n] overwritten.
static void sched_tissue_s2(const law_sched *s, double lambda, double *s2) {
    double m = 0, acc = 0;
    s2[0] = 0;
    for (size_t i = 1; i < s->n; i++) {
        m = lambda * m + (s->lr[i - 1] - s->lr[i]);
        acc += m;
        s2[i] = acc;
    }
}

// eg[c] = lr[k_c]^-gamma for every change (inf where lr = 0). eg[n_chg] overwritten.
static void sched_mpl_eg(const law_sched *s, double gamma, double *eg) {
    for (size_t c = 0; c < s->n_chg; c++) eg[c] = exp(-gamma * s->chg_lnlr[c]);
}

// The MPL loss-drop sum at step t over the first n_chg changes, and optionally its derivatives:
// out[0] = LD, out[1..3] = dLD/dC, dLD/dbeta, dLD/dgamma (when want_grad).
static void sched_mpl_ld(const law_sched *s, size_t t, size_t n_chg, const double *eg, double C, double beta,
                         int want_grad, double out[4]) {
    double Pt = s->P[t];
    double ld = 0, dc = 0, db = 0, dg = 0;
    for (size_t c = 0; c < n_chg; c++) {
        double S = Pt - s->chg_pkm1[c];
        double d = s->chg_d[c];
        if (!isfinite(eg[c])) { // lr[k] == 0: G(inf * S) = 1 when S > 0
            ld += S > 0 ? d : 0;
            continue;
        }
        double x = eg[c] * S;
        double u = 1 + C * x;
        double lu = log(u);
        double ub = exp(-beta * lu);
        ld += d * (1 - ub);
        if (want_grad) {
            double q = d * beta * ub / u * x; // d * dG/dC
            dc += q;
            db += d * ub * lu;
            dg -= q * C * s->chg_lnlr[c];
        }
    }
    out[0] = ld;
    out[1] = dc;
    out[2] = db;
    out[3] = dg;
}

void law_tissue_predict(const double p[LAW_TIS_NPARAM], const law_sched *s, const size_t *steps,
                        size_t n_steps, double *pred) {
    double *s2 = sx_alloc(s->n * sizeof(double), "laws s2");
    if (!s2) {   // the fit sees unusable points; sx_alloc_check at its end reports the failure
        for (size_t i = 0; i < n_steps; i++) pred[i] = NAN;
        return;
    }
    sched_tissue_s2(s, p[LAW_TIS_LAMBDA], s2);
    for (size_t i = 0; i < n_steps; i++) {
        size_t t = steps[i];
        SX_CHECK(t < s->n && s->P[t] > 0, "the step lies within the schedule, after some learning");
        pred[i] = p[LAW_TIS_L0] + p[LAW_TIS_A] * pow(s->P[t], -p[LAW_TIS_ALPHA]) - p[LAW_TIS_C] * s2[t];
    }
    free(s2);
}

void law_mpl_predict(const double p[LAW_MPL_NPARAM], const law_sched *s, const size_t *steps, size_t n_steps,
                     double *pred) {
    double *eg = sx_alloc((s->n_chg ? s->n_chg : 1) * sizeof(double), "laws eg");
    if (!eg) {   // as law_tissue_predict
        for (size_t i = 0; i < n_steps; i++) pred[i] = NAN;
        return;
    }
    sched_mpl_eg(s, p[LAW_MPL_GAMMA], eg);
#pragma omp parallel for schedule(dynamic, 4)
    for (size_t i = 0; i < n_steps; i++) {
        size_t t = steps[i];
        SX_CHECK(t < s->n && s->P[t] > 0, "the step lies within the schedule, after some learning");
        double ld[4];
        sched_mpl_ld(s, t, sched_changes_upto(s, t), eg, p[LAW_MPL_C], p[LAW_MPL_BETA], 0, ld);
        pred[i] = p[LAW_MPL_L0] + p[LAW_MPL_A] * pow(s->P[t], -p[LAW_MPL_ALPHA]) - p[LAW_MPL_B] * ld[0];
    }
    free(eg);
}

// ---- fit bindings: ND and POWER -------------------------------------------------------------------------

static const double grid_exponent[] = {0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6,
                                       0.7, 0.8, 0.9, 1.0, 1.2, 1.5};
#define N_GRID_EXPONENT (sizeof grid_exponent / sizeof grid_exponent[0])

static const law_param nd_params[LAW_ND_NPARAM] = {
    [LAW_ND_E] = {"E", LAW_LINEAR, NULL, 0},
    [LAW_ND_A] = {"A", LAW_LINEAR, NULL, 0},
    [LAW_ND_B] = {"B", LAW_LINEAR, NULL, 0},
    [LAW_ND_ALPHA] = {"alpha", LAW_NONLIN, grid_exponent, N_GRID_EXPONENT},
    [LAW_ND_BETA] = {"beta", LAW_NONLIN, grid_exponent, N_GRID_EXPONENT},
};

typedef struct {
    size_t n;
    double *ln_a, *ln_b; // ND: log N, log D; POWER: log x (ln_b unused)
} xy_ctx;

static void xy_free(void *p) {
    xy_ctx *c = p;
    if (!c) return;
    free(c->ln_a);
    free(c->ln_b);
    free(c);
}

static sx_status xy_new(const double *a, const double *b, size_t n, const char *what, fit_law *out) {
    xy_ctx *c = sx_calloc_n(1, sizeof *c, "laws c");
    if (!c) return sx_fail(SX_ERR_NOMEM, "cannot allocate %s data", what);
    c->n = n;
    c->ln_a = sx_alloc((n ? n : 1) * sizeof(double), "laws c.ln_a");
    c->ln_b = sx_alloc((n ? n : 1) * sizeof(double), "laws c.ln_b");
    if (!c->ln_a || !c->ln_b) {
        xy_free(c);
        return sx_fail(SX_ERR_NOMEM, "cannot allocate %s data for %zu points", what, n);
    }
    for (size_t i = 0; i < n; i++) {
        if (!(a[i] > 0) || (b && !(b[i] > 0))) {
            xy_free(c);
            return sx_fail(SX_ERR_ARG, "%s point %zu has a non-positive input", what, i);
        }
        c->ln_a[i] = log(a[i]);
        c->ln_b[i] = b ? log(b[i]) : 0;
    }
    out->ctx = c;
    out->free_ctx = xy_free;
    out->n_points = n;
    return SX_OK;
}

static void nd_basis(void *ctx, const double *p, double *phi) {
    const xy_ctx *c = ctx;
    for (size_t i = 0; i < c->n; i++) {
        phi[3 * i + 0] = 1;
        phi[3 * i + 1] = exp(-p[LAW_ND_ALPHA] * c->ln_a[i]);
        phi[3 * i + 2] = exp(-p[LAW_ND_BETA] * c->ln_b[i]);
    }
}

// d pred_i / d p into J[LAW_ND_NPARAM] (overwritten).
static void nd_point_jac(const xy_ctx *c, const double *p, size_t i, double *J) {
    double na = exp(-p[LAW_ND_ALPHA] * c->ln_a[i]), db = exp(-p[LAW_ND_BETA] * c->ln_b[i]);
    J[LAW_ND_E] = 1;
    J[LAW_ND_A] = na;
    J[LAW_ND_B] = db;
    J[LAW_ND_ALPHA] = -p[LAW_ND_A] * na * c->ln_a[i];
    J[LAW_ND_BETA] = -p[LAW_ND_B] * db * c->ln_b[i];
}

static void nd_eval(void *ctx, const double *p, double *pred, double *jac) {
    const xy_ctx *c = ctx;
    for (size_t i = 0; i < c->n; i++) {
        pred[i] = p[LAW_ND_E] + p[LAW_ND_A] * exp(-p[LAW_ND_ALPHA] * c->ln_a[i]) + p[LAW_ND_B] * exp(-p[LAW_ND_BETA] * c->ln_b[i]);
        if (jac) nd_point_jac(c, p, i, jac + i * LAW_ND_NPARAM);
    }
}

sx_status law_nd_bind(const double *n_params, const double *n_tokens, size_t n, fit_law *out) {
    memset(out, 0, sizeof *out);
    *out = (fit_law){.name = "nd", .n_params = LAW_ND_NPARAM, .n_linear = 3, .params = nd_params,
                     .eval = nd_eval, .basis = nd_basis};
    return xy_new(n_params, n_tokens, n, "L(N,D)", out);
}

static const law_param nd1_params[LAW_ND1_NPARAM] = {
    [LAW_ND1_E] = {"E", LAW_LINEAR, NULL, 0},
    [LAW_ND1_A] = {"A", LAW_LINEAR, NULL, 0},
    [LAW_ND1_B] = {"B", LAW_LINEAR, NULL, 0},
    [LAW_ND1_ALPHA] = {"alpha", LAW_NONLIN, grid_exponent, N_GRID_EXPONENT},
};

static void nd1_basis(void *ctx, const double *p, double *phi) {
    double p5[LAW_ND_NPARAM];
    nd_of_nd1(p, p5);
    nd_basis(ctx, p5, phi);
}

// ND's Jacobian row by row, its two exponent columns summed into the one exponent.
static void nd1_eval(void *ctx, const double *p, double *pred, double *jac) {
    const xy_ctx *c = ctx;
    double p5[LAW_ND_NPARAM], j5[LAW_ND_NPARAM];
    nd_of_nd1(p, p5);
    nd_eval(ctx, p5, pred, NULL);
    for (size_t i = 0; jac && i < c->n; i++) {
        nd_point_jac(c, p5, i, j5);
        double *J = jac + i * LAW_ND1_NPARAM;
        J[LAW_ND1_E] = j5[LAW_ND_E];
        J[LAW_ND1_A] = j5[LAW_ND_A];
        J[LAW_ND1_B] = j5[LAW_ND_B];
        J[LAW_ND1_ALPHA] = j5[LAW_ND_ALPHA] + j5[LAW_ND_BETA];
    }
}

sx_status law_nd1_bind(const double *n_params, const double *n_tokens, size_t n, fit_law *out) {
    memset(out, 0, sizeof *out);
    *out = (fit_law){.name = "nd1", .n_params = LAW_ND1_NPARAM, .n_linear = 3, .params = nd1_params,
                     .eval = nd1_eval, .basis = nd1_basis};
    return xy_new(n_params, n_tokens, n, "L(N,D)", out);
}

static const double grid_pow_alpha[] = {0.02, 0.05, 0.08, 0.12, 0.16, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 1.0};

static const law_param pow_params[LAW_POW_NPARAM] = {
    [LAW_POW_LINF] = {"Linf", LAW_LINEAR, NULL, 0},
    [LAW_POW_A] = {"A", LAW_LINEAR, NULL, 0},
    [LAW_POW_ALPHA] = {"alpha", LAW_NONLIN, grid_pow_alpha, sizeof grid_pow_alpha / sizeof(double)},
};

static void pow_basis(void *ctx, const double *p, double *phi) {
    const xy_ctx *c = ctx;
    for (size_t i = 0; i < c->n; i++) {
        phi[2 * i + 0] = 1;
        phi[2 * i + 1] = exp(-p[LAW_POW_ALPHA] * c->ln_a[i]);
    }
}

static void pow_eval(void *ctx, const double *p, double *pred, double *jac) {
    const xy_ctx *c = ctx;
    for (size_t i = 0; i < c->n; i++) {
        double xa = exp(-p[LAW_POW_ALPHA] * c->ln_a[i]);
        pred[i] = p[LAW_POW_LINF] + p[LAW_POW_A] * xa;
        if (!jac) continue;
        double *J = jac + i * LAW_POW_NPARAM;
        J[LAW_POW_LINF] = 1;
        J[LAW_POW_A] = xa;
        J[LAW_POW_ALPHA] = -p[LAW_POW_A] * xa * c->ln_a[i];
    }
}

sx_status law_power_bind(const double *x, size_t n, fit_law *out) {
    memset(out, 0, sizeof *out);
    *out = (fit_law){.name = "power", .n_params = LAW_POW_NPARAM, .n_linear = 2, .params = pow_params,
                     .eval = pow_eval, .basis = pow_basis};
    return xy_new(x, NULL, n, "L(C)", out);
}

// ---- fit bindings: schedule laws -------------------------------------------------------------------------

typedef struct {
    size_t n_curves, n_points, max_steps, max_chg;
    law_sched **sched; // [n_curves]
    size_t *pt_curve;  // [n_points]
    size_t *pt_step;   // [n_points]
    size_t *pt_nchg;   // [n_points] changes at k <= step
    double *scratch;   // [max_steps] S2 (Tissue)
    double *eg;        // [n_curves][max_chg] lr^-gamma per change (MPL)
    double *ld;        // [n_points] cached MPL LD for (ld_key)
    double ld_key[3];  // (C, beta, gamma) of the cached LD; NaN when empty
} sched_ctx;

static void sched_ctx_free(void *p) {
    sched_ctx *c = p;
    if (!c) return;
    if (c->sched)
        for (size_t i = 0; i < c->n_curves; i++) law_sched_free(c->sched[i]);
    free(c->sched);
    free(c->pt_curve);
    free(c->pt_step);
    free(c->pt_nchg);
    free(c->scratch);
    free(c->eg);
    free(c->ld);
    free(c);
}

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

static sx_status sched_ctx_new(const law_curve *curves, size_t n_curves, size_t block, const char *what,
                               fit_law *out) {
    sched_ctx *c = sx_calloc_n(1, sizeof *c, "laws c");
    if (!c) return sx_fail(SX_ERR_NOMEM, "cannot allocate %s data", what);
    out->ctx = c;
    out->free_ctx = sched_ctx_free;
    c->n_curves = n_curves;
    c->sched = sx_calloc_n(n_curves ? n_curves : 1, sizeof(law_sched *), "laws c.sched");
    if (!c->sched) goto nomem;
    for (size_t j = 0; j < n_curves; j++) {
        if (curves[j].n_steps == 0) return sx_fail(SX_ERR_ARG, "%s curve %zu has no LR steps", what, j);
        c->sched[j] = law_sched_new(curves[j].lr, curves[j].n_steps);
        if (!c->sched[j]) return SX_ERR_NOMEM;   // law_sched_new said what
        if (block > 1 && curves[j].n_points > 0) {
            size_t *sorted = sx_alloc(curves[j].n_points * sizeof(size_t), "laws sorted");
            if (!sorted) goto nomem;
            memcpy(sorted, curves[j].steps, curves[j].n_points * sizeof(size_t));
            qsort(sorted, curves[j].n_points, sizeof(size_t), cmp_size);
            sched_coarsen(c->sched[j], sorted, curves[j].n_points, block);
            free(sorted);
        }
        c->n_points += curves[j].n_points;
        if (curves[j].n_steps > c->max_steps) c->max_steps = curves[j].n_steps;
        if (c->sched[j]->n_chg > c->max_chg) c->max_chg = c->sched[j]->n_chg;
    }
    size_t np = c->n_points ? c->n_points : 1;
    c->pt_curve = sx_alloc(np * sizeof(size_t), "laws c.pt_curve");
    c->pt_step = sx_alloc(np * sizeof(size_t), "laws c.pt_step");
    c->pt_nchg = sx_alloc(np * sizeof(size_t), "laws c.pt_nchg");
    c->ld = sx_alloc(np * sizeof(double), "laws c.ld");
    c->scratch = sx_alloc((c->max_steps ? c->max_steps : 1) * sizeof(double), "laws c.scratch");
    c->eg = sx_alloc((n_curves ? n_curves : 1) * (c->max_chg ? c->max_chg : 1) * sizeof(double), "laws c.eg");
    if (!c->pt_curve || !c->pt_step || !c->pt_nchg || !c->ld || !c->scratch || !c->eg) goto nomem;
    size_t i = 0;
    for (size_t j = 0; j < n_curves; j++) {
        for (size_t q = 0; q < curves[j].n_points; q++, i++) {
            size_t t = curves[j].steps[q];
            if (t >= curves[j].n_steps || !(c->sched[j]->P[t] > 0))
                return sx_fail(SX_ERR_ARG, "%s curve %zu: step %zu is past the LR array or has S1 = 0", what,
                               j, t);
            c->pt_curve[i] = j;
            c->pt_step[i] = t;
            c->pt_nchg[i] = sched_changes_upto(c->sched[j], t);
        }
    }
    c->ld_key[0] = NAN;
    out->n_points = c->n_points;
    return SX_OK;
nomem:
    return sx_fail(SX_ERR_NOMEM, "cannot allocate %s data", what);
}

static const double grid_tis_alpha[] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0};
static const double grid_tis_lambda[] = {0.9, 0.95, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9995};

static const law_param tis_params[LAW_TIS_NPARAM] = {
    [LAW_TIS_L0] = {"L0", LAW_LINEAR, NULL, 0},
    [LAW_TIS_A] = {"A", LAW_LINEAR, NULL, 0},
    [LAW_TIS_C] = {"C", LAW_LINEAR, NULL, 0},
    [LAW_TIS_ALPHA] = {"alpha", LAW_NONLIN, grid_tis_alpha, sizeof grid_tis_alpha / sizeof(double)},
    [LAW_TIS_LAMBDA] = {"lambda", LAW_GRID, grid_tis_lambda, sizeof grid_tis_lambda / sizeof(double)},
};

// Per point: S1^-alpha, log S1 and S2 at the given lambda (s2[n_points] overwritten).
static void tis_terms(sched_ctx *c, double lambda, double *s2) {
    for (size_t j = 0; j < c->n_curves; j++) {
        sched_tissue_s2(c->sched[j], lambda, c->scratch);
        for (size_t i = 0; i < c->n_points; i++)
            if (c->pt_curve[i] == j) s2[i] = c->scratch[c->pt_step[i]];
    }
}

static void tis_basis(void *ctx, const double *p, double *phi) {
    sched_ctx *c = ctx;
    tis_terms(c, p[LAW_TIS_LAMBDA], c->ld);
    for (size_t i = 0; i < c->n_points; i++) {
        double s1 = c->sched[c->pt_curve[i]]->P[c->pt_step[i]];
        phi[3 * i + 0] = 1;
        phi[3 * i + 1] = pow(s1, -p[LAW_TIS_ALPHA]);
        phi[3 * i + 2] = -c->ld[i];
    }
    c->ld_key[0] = NAN; // c->ld now holds S2, not an MPL sum
}

static void tis_eval(void *ctx, const double *p, double *pred, double *jac) {
    sched_ctx *c = ctx;
    tis_terms(c, p[LAW_TIS_LAMBDA], c->ld);
    c->ld_key[0] = NAN;
    for (size_t i = 0; i < c->n_points; i++) {
        double s1 = c->sched[c->pt_curve[i]]->P[c->pt_step[i]];
        double sa = pow(s1, -p[LAW_TIS_ALPHA]);
        pred[i] = p[LAW_TIS_L0] + p[LAW_TIS_A] * sa - p[LAW_TIS_C] * c->ld[i];
        if (!jac) continue;
        double *J = jac + i * LAW_TIS_NPARAM;
        J[LAW_TIS_L0] = 1;
        J[LAW_TIS_A] = sa;
        J[LAW_TIS_C] = -c->ld[i];
        J[LAW_TIS_ALPHA] = -p[LAW_TIS_A] * sa * log(s1);
        J[LAW_TIS_LAMBDA] = 0;
    }
}

sx_status law_tissue_bind(const law_curve *curves, size_t n_curves, fit_law *out) {
    memset(out, 0, sizeof *out);
    *out = (fit_law){.name = "tissue", .n_params = LAW_TIS_NPARAM, .n_linear = 3, .params = tis_params,
                     .eval = tis_eval, .basis = tis_basis};
    sx_status st = sched_ctx_new(curves, n_curves, 1, "Tissue law", out);
    if (st != SX_OK) fit_law_free(out);
    return st;
}

static const double grid_mpl_alpha[] = {0.2, 0.35, 0.5, 0.7};
static const double grid_mpl_c[] = {0.5, 2, 8};
static const double grid_mpl_beta[] = {0.3, 0.6, 1.0};
static const double grid_mpl_gamma[] = {0.3, 0.6, 0.9};

static const law_param mpl_params[LAW_MPL_NPARAM] = {
    [LAW_MPL_L0] = {"L0", LAW_LINEAR, NULL, 0},
    [LAW_MPL_A] = {"A", LAW_LINEAR, NULL, 0},
    [LAW_MPL_B] = {"B", LAW_LINEAR, NULL, 0},
    [LAW_MPL_ALPHA] = {"alpha", LAW_NONLIN, grid_mpl_alpha, sizeof grid_mpl_alpha / sizeof(double)},
    [LAW_MPL_C] = {"C", LAW_NONLIN, grid_mpl_c, sizeof grid_mpl_c / sizeof(double)},
    [LAW_MPL_BETA] = {"beta", LAW_NONLIN, grid_mpl_beta, sizeof grid_mpl_beta / sizeof(double)},
    [LAW_MPL_GAMMA] = {"gamma", LAW_NONLIN, grid_mpl_gamma, sizeof grid_mpl_gamma / sizeof(double)},
};

// LD (and, when jac, its derivatives into jac's C/beta/gamma columns as dLD) at every point.
static void mpl_terms(sched_ctx *c, const double *p, double *ld, double *jac) {
    for (size_t j = 0; j < c->n_curves; j++) sched_mpl_eg(c->sched[j], p[LAW_MPL_GAMMA], c->eg + j * c->max_chg);
#pragma omp parallel for schedule(dynamic, 4)
    for (size_t i = 0; i < c->n_points; i++) {
        size_t j = c->pt_curve[i];
        double out[4];
        sched_mpl_ld(c->sched[j], c->pt_step[i], c->pt_nchg[i], c->eg + j * c->max_chg, p[LAW_MPL_C],
                     p[LAW_MPL_BETA], jac != NULL, out);
        ld[i] = out[0];
        if (jac) {
            double *J = jac + i * LAW_MPL_NPARAM;
            J[LAW_MPL_C] = out[1];
            J[LAW_MPL_BETA] = out[2];
            J[LAW_MPL_GAMMA] = out[3];
        }
    }
}

static void mpl_basis(void *ctx, const double *p, double *phi) {
    sched_ctx *c = ctx;
    double key[3] = {p[LAW_MPL_C], p[LAW_MPL_BETA], p[LAW_MPL_GAMMA]};
    if (memcmp(key, c->ld_key, sizeof key) != 0) {
        mpl_terms(c, p, c->ld, NULL);
        memcpy(c->ld_key, key, sizeof key);
    }
    for (size_t i = 0; i < c->n_points; i++) {
        double s1 = c->sched[c->pt_curve[i]]->P[c->pt_step[i]];
        phi[3 * i + 0] = 1;
        phi[3 * i + 1] = pow(s1, -p[LAW_MPL_ALPHA]);
        phi[3 * i + 2] = -c->ld[i];
    }
}

static void mpl_eval(void *ctx, const double *p, double *pred, double *jac) {
    sched_ctx *c = ctx;
    double key[3] = {p[LAW_MPL_C], p[LAW_MPL_BETA], p[LAW_MPL_GAMMA]};
    if (jac || memcmp(key, c->ld_key, sizeof key) != 0) { // the grid search re-evaluates at one (C, beta, gamma)
        mpl_terms(c, p, c->ld, jac);
        memcpy(c->ld_key, key, sizeof key);
    }
    double B = p[LAW_MPL_B];
    for (size_t i = 0; i < c->n_points; i++) {
        double s1 = c->sched[c->pt_curve[i]]->P[c->pt_step[i]];
        double sa = pow(s1, -p[LAW_MPL_ALPHA]);
        pred[i] = p[LAW_MPL_L0] + p[LAW_MPL_A] * sa - B * c->ld[i];
        if (!jac) continue;
        double *J = jac + i * LAW_MPL_NPARAM;
        J[LAW_MPL_L0] = 1;
        J[LAW_MPL_A] = sa;
        J[LAW_MPL_B] = -c->ld[i];
        J[LAW_MPL_ALPHA] = -p[LAW_MPL_A] * sa * log(s1);
        J[LAW_MPL_C] *= -B;
        J[LAW_MPL_BETA] *= -B;
        J[LAW_MPL_GAMMA] *= -B;
    }
}

sx_status law_mpl_bind(const law_curve *curves, size_t n_curves, size_t block, fit_law *out) {
    memset(out, 0, sizeof *out);
    *out = (fit_law){.name = "mpl", .n_params = LAW_MPL_NPARAM, .n_linear = 3, .params = mpl_params,
                     .eval = mpl_eval, .basis = mpl_basis};
    sx_status st = sched_ctx_new(curves, n_curves, block ? block : 1, "multi-power law", out);
    if (st != SX_OK) fit_law_free(out);
    return st;
}

void fit_law_free(fit_law *law) {
    if (law->free_ctx) law->free_ctx(law->ctx);
    law->ctx = NULL;
    law->free_ctx = NULL;
}
