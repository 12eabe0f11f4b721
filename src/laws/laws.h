// laws: the scaling laws sextant fits, evaluated in float64, and their binding to data as a `fit_law`
// (predictions, analytic Jacobian, and the basis used for variable projection) for the fit engine.
//
// Responsible for: the formulas and their derivatives; precomputing LR-schedule sums (law_sched).
// Not responsible for: optimisation, bootstrap or JSON (laws/fit.h), reading run directories
// (runs/rundir.h) or public CSVs (laws/pubdata.h).
//
// Laws (all parameters are positive reals; parameter vectors are double[] in the enum order below):
//   ND      L(N,D) = E + A/N^alpha + B/D^beta                          (Chinchilla approach 3)
//   ND1     L(N,D) = E + A/N^alpha + B/D^alpha                         (one exponent: Gadre et al. 2024)
//   POWER   L(C)   = Linf + A*C^-alpha                                 (loss vs compute; per-fraction laws)
//   TISSUE  L(t)   = L0 + A*S1(t)^-alpha - C*S2(t)                     (Tissue et al. LR-annealing law)
//   MPL     L(t)   = L0 + A*S1(t)^-alpha - B*LD(t)                     (multi-power law, Luo et al.)
// Schedule conventions (those of the MPL authors' evaluation code, see shared/data/README.md):
//   lr[0..n-1] is the LR of each optimizer step; a prediction "at step t" (0-based) is the loss after the
//   updates 0..t. P(t) = sum_{i=0..t} lr[i]; S1(t) = P(t) (warmup included, no separate S_W term).
//   MPL:    LD(t) = sum_{k=1..t} (lr[k-1]-lr[k]) * (1 - (1 + C*lr[k]^-gamma*(P(t)-P(k-1)))^-beta);
//           warmup steps (LR rising) enter with the opposite sign, exactly as the authors evaluate and fit
//           (their published constants and metrics assume it; the paper's formula sums post-warmup steps).
//   TISSUE: m_0 = 0, m_i = lambda*m_{i-1} + (lr[i-1]-lr[i]), S2(t) = sum_{i=1..t} m_i.
// A run directory's step s (1-based, after the update) is index s-1 here.
#ifndef SEXTANT_LAWS_LAWS_H
#define SEXTANT_LAWS_LAWS_H
#include <stddef.h>
#include "core/status.h"

enum { LAW_ND_E, LAW_ND_A, LAW_ND_B, LAW_ND_ALPHA, LAW_ND_BETA, LAW_ND_NPARAM };
enum { LAW_ND1_E, LAW_ND1_A, LAW_ND1_B, LAW_ND1_ALPHA, LAW_ND1_NPARAM };
enum { LAW_POW_LINF, LAW_POW_A, LAW_POW_ALPHA, LAW_POW_NPARAM };
enum { LAW_TIS_L0, LAW_TIS_A, LAW_TIS_C, LAW_TIS_ALPHA, LAW_TIS_LAMBDA, LAW_TIS_NPARAM };
enum { LAW_MPL_L0, LAW_MPL_A, LAW_MPL_B, LAW_MPL_ALPHA, LAW_MPL_C, LAW_MPL_BETA, LAW_MPL_GAMMA, LAW_MPL_NPARAM };

// ---- closed-form laws -------------------------------------------------------------------------------
double law_nd_eval(const double p[LAW_ND_NPARAM], double n_params, double n_tokens);
double law_nd1_eval(const double p[LAW_ND1_NPARAM], double n_params, double n_tokens);
double law_power_eval(const double p[LAW_POW_NPARAM], double x);

// ---- LR-schedule laws ---------------------------------------------------------------------------------
// Precomputed view of one LR array: prefix sums and the steps where the LR changes (only those enter
// the MPL double sum, so evaluating it costs O(points x changes) rather than O(points x steps)).
typedef struct law_sched law_sched;

// Copies lr[0..n-1] (n >= 1, all lr >= 0). Returns NULL and records SX_ERR_NOMEM on failure.
// Free with law_sched_free.
law_sched *law_sched_new(const double *lr, size_t n);
void law_sched_free(law_sched *s);
size_t law_sched_steps(const law_sched *s);
// P(t) = sum_{i<=t} lr[i]. t < steps.
double law_sched_s1(const law_sched *s, size_t t);

// Predictions at 0-based steps[0..n_steps-1] (each < law_sched_steps, and S1 > 0 there) under the
// schedule. pred[n_steps] is overwritten. law_mpl_predict runs in parallel (OpenMP) over steps.
void law_tissue_predict(const double p[LAW_TIS_NPARAM], const law_sched *s, const size_t *steps,
                        size_t n_steps, double *pred);
void law_mpl_predict(const double p[LAW_MPL_NPARAM], const law_sched *s, const size_t *steps,
                     size_t n_steps, double *pred);

// ---- binding a law to data for the fit engine ---------------------------------------------------------
// How the engine treats each parameter:
//   LINEAR  the law is linear in it given the others: found by non-negative least squares during the grid
//           search (variable projection), then refined with the rest by the local optimiser;
//   NONLIN  searched over `grid`, then refined by the local optimiser;
//   GRID    searched over `grid` only and held fixed during local refinement (e.g. Tissue's lambda).
// Every parameter is positive; the local optimiser works on log(value).
typedef enum { LAW_LINEAR, LAW_NONLIN, LAW_GRID } law_param_kind;

typedef struct {
    const char *name;
    law_param_kind kind;
    const double *grid; // NONLIN: starting values; GRID: the candidates; LINEAR: unused (NULL)
    size_t n_grid;
} law_param;

// A law bound to n_points observations. Parameters are in the law's enum order; LINEAR parameters take
// basis columns in the order they appear. The prediction is pred = sum_j phi[:,j] * linear_j.
typedef struct {
    const char *name; // "nd", "nd1", "power", "tissue", "mpl"
    size_t n_params, n_linear, n_points;
    const law_param *params; // [n_params], static
    void *ctx;               // owned; bound data and caches (not thread-safe: one fit at a time per law)
    // pred[n_points] overwritten; jac (n_points x n_params, row-major, d pred / d param in natural units)
    // overwritten when non-NULL (columns of GRID parameters are zero).
    void (*eval)(void *ctx, const double *p, double *pred, double *jac);
    // phi (n_points x n_linear, row-major) overwritten with the basis at the non-linear entries of p.
    void (*basis)(void *ctx, const double *p, double *phi);
    void (*free_ctx)(void *ctx);
} fit_law;

// One LR curve for the schedule laws: predictions wanted at 0-based steps[0..n_points-1] of lr.
typedef struct {
    const double *lr;
    size_t n_steps;
    const size_t *steps;
    size_t n_points;
} law_curve;

// Binders copy what they need from the inputs; points are numbered in input order (curves concatenated
// in order for the schedule laws). Free with fit_law_free. They return SX_ERR_ARG for bad inputs
// (non-positive N/D/x, steps out of range, S1 = 0 at a point) and SX_ERR_NOMEM.
sx_status law_nd_bind(const double *n_params, const double *n_tokens, size_t n, fit_law *out);
sx_status law_nd1_bind(const double *n_params, const double *n_tokens, size_t n, fit_law *out);
sx_status law_power_bind(const double *x, size_t n, fit_law *out);
sx_status law_tissue_bind(const law_curve *curves, size_t n_curves, fit_law *out);
// block > 1 (fast fitting): runs of up to `block` consecutive LR changes between two eval steps enter the
// MPL sum as one midpoint term (predictions move by a few 1e-5 relative or less); block <= 1 is exact. Fit with a
// blocked binding, then fit_refine with an exact one (fit_law_run_staged in fit.h).
sx_status law_mpl_bind(const law_curve *curves, size_t n_curves, size_t block, fit_law *out);
void fit_law_free(fit_law *law);

#endif
