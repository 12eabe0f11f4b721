// datalaw: the data-constrained law (see datalaw.h).
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "laws/datalaw.h"

double law_dc_effective_tokens(double D, double U, double rstar) {
    if (!(U > 0) || D <= U) return D;
    double R = D / U - 1;
    return U + U * rstar * -expm1(-R / rstar);
}

double law_dc_eval(const double p[LAW_DC_NPARAM], double N, double D, double U) {
    double Deff = law_dc_effective_tokens(D, U, p[LAW_DC_RSTAR]);
    return p[LAW_DC_E] + p[LAW_DC_A] * pow(N, -p[LAW_DC_ALPHA]) + p[LAW_DC_B] * pow(Deff, -p[LAW_DC_BETA]);
}

double law_dc_repeat_penalty(double B, double beta, double rstar, double D, double U) {
    return B * (pow(law_dc_effective_tokens(D, U, rstar), -beta) - pow(D, -beta));
}

typedef struct {
    size_t n;
    double *ln_n, *d, *u;
} dc_ctx;

static void dc_free(void *ctx) {
    dc_ctx *c = ctx;
    if (!c) return;
    free(c->ln_n);
    free(c->d);
    free(c->u);
    free(c);
}

static const double grid_dc_alpha[] = {0.1, 0.2, 0.3, 0.4, 0.6};
static const double grid_dc_beta[] = {0.1, 0.2, 0.3, 0.4, 0.6};
static const double grid_dc_rstar[] = {1, 3, 10, 30, 100};

static const law_param dc_params[LAW_DC_NPARAM] = {
    [LAW_DC_E] = {"E", LAW_LINEAR, NULL, 0},
    [LAW_DC_A] = {"A", LAW_LINEAR, NULL, 0},
    [LAW_DC_B] = {"B", LAW_LINEAR, NULL, 0},
    [LAW_DC_ALPHA] = {"alpha", LAW_NONLIN, grid_dc_alpha, sizeof grid_dc_alpha / sizeof(double)},
    [LAW_DC_BETA] = {"beta", LAW_NONLIN, grid_dc_beta, sizeof grid_dc_beta / sizeof(double)},
    [LAW_DC_RSTAR] = {"Rstar", LAW_NONLIN, grid_dc_rstar, sizeof grid_dc_rstar / sizeof(double)},
};

static void dc_basis(void *ctx, const double *p, double *phi) {
    const dc_ctx *c = ctx;
    for (size_t i = 0; i < c->n; i++) {
        double Deff = law_dc_effective_tokens(c->d[i], c->u[i], p[LAW_DC_RSTAR]);
        phi[3 * i + 0] = 1;
        phi[3 * i + 1] = exp(-p[LAW_DC_ALPHA] * c->ln_n[i]);
        phi[3 * i + 2] = exp(-p[LAW_DC_BETA] * log(Deff));
    }
}

// d pred / d Rstar: B * -beta * D'^(-beta-1) * dD'/dRstar, with dD'/dRstar = U*(1 - e^-x) - U*x*e^-x
// where x = R/Rstar (zero when the point does not repeat).
static void dc_eval(void *ctx, const double *p, double *pred, double *jac) {
    const dc_ctx *c = ctx;
    double rs = p[LAW_DC_RSTAR];
    for (size_t i = 0; i < c->n; i++) {
        double Deff = law_dc_effective_tokens(c->d[i], c->u[i], rs), lnD = log(Deff);
        double na = exp(-p[LAW_DC_ALPHA] * c->ln_n[i]), db = exp(-p[LAW_DC_BETA] * lnD);
        pred[i] = p[LAW_DC_E] + p[LAW_DC_A] * na + p[LAW_DC_B] * db;
        if (!jac) continue;
        double *J = jac + i * LAW_DC_NPARAM, dDeff = 0;
        if (c->u[i] > 0 && c->d[i] > c->u[i]) {
            double x = (c->d[i] / c->u[i] - 1) / rs, e = exp(-x);
            dDeff = c->u[i] * (1 - e) - c->u[i] * x * e;
        }
        J[LAW_DC_E] = 1;
        J[LAW_DC_A] = na;
        J[LAW_DC_B] = db;
        J[LAW_DC_ALPHA] = -p[LAW_DC_A] * na * c->ln_n[i];
        J[LAW_DC_BETA] = -p[LAW_DC_B] * db * lnD;
        J[LAW_DC_RSTAR] = -p[LAW_DC_B] * p[LAW_DC_BETA] * db / Deff * dDeff;
    }
}

sx_status law_dc_bind(const double *N, const double *D, const double *U, size_t n, fit_law *out) {
    memset(out, 0, sizeof *out);
    *out = (fit_law){.name = "data_constrained", .n_params = LAW_DC_NPARAM, .n_linear = 3, .params = dc_params,
                     .eval = dc_eval, .basis = dc_basis};
    dc_ctx *c = sx_calloc(sizeof *c, "data-constrained law");
    size_t m = n ? n : 1;
    if (c) {
        c->ln_n = sx_calloc_n(m, sizeof(double), "data-constrained law ln N");
        c->d = sx_calloc_n(m, sizeof(double), "data-constrained law D");
        c->u = sx_calloc_n(m, sizeof(double), "data-constrained law U");
    }
    if (!c || !c->ln_n || !c->d || !c->u) {
        dc_free(c);
        return sx_fail(SX_ERR_NOMEM, "cannot allocate data-constrained law data for %zu points", n);
    }
    c->n = n;
    for (size_t i = 0; i < n; i++) {
        if (!(N[i] > 0) || !(D[i] > 0)) {
            dc_free(c);
            return sx_fail(SX_ERR_ARG, "data-constrained law: point %zu has a non-positive N or D", i);
        }
        c->ln_n[i] = log(N[i]);
        c->d[i] = D[i];
        c->u[i] = U ? U[i] : 0;
    }
    out->ctx = c;
    out->free_ctx = dc_free;
    out->n_points = n;
    return SX_OK;
}
