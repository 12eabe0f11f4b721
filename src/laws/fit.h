// fit: the scaling-law fitting engine. Given a law bound to data (laws/laws.h) and observed losses, it
// minimises  sum_i w_i * Huber_delta(log pred_i - log obs_i)  (delta = 1e-3 by default) in float64, plus
// an optional Gaussian prior on log parameters (fit_options.prior). Steps:
//   1. grid search over the law's NONLIN/GRID parameters; at each grid point the LINEAR parameters come
//      from non-negative least squares on relative residuals, re-weighted a few times with Huber weights
//      (variable projection);
//   2. the best `n_starts` grid points are refined by GSL's trust-region Levenberg-Marquardt
//      (gsl_multifit_nlinear) over every free parameter in log space, on Huber-transformed residuals;
//      GRID parameters (Tissue's lambda) stay at their grid value, and the best grid point of every GRID
//      value is refined as well (a profile over lambda). The lowest objective wins.
// On top: bootstrap confidence intervals, in-sample errors, leave-one-group-out backtests, per-fraction
// L_f(C) fits, parameters as power laws of scale across rungs, and JSON output (jansson).
//
// Not responsible for: the formulas (laws.h), reading data (rundir.h, pubdata.h), writing files or
// choosing which laws a fit.json holds (the CLI composes fit_result_to_json objects).
// Not thread-safe per law (the law caches); different laws may be fitted on different threads.
#ifndef SEXTANT_LAWS_FIT_H
#define SEXTANT_LAWS_FIT_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "core/status.h"
#include "laws/laws.h"

typedef struct {
    double huber_delta; // on log residuals; default 1e-3
    size_t n_starts;    // grid points refined by the local optimiser; default 4
    size_t max_iter;    // local optimiser iterations per start; default 200
    // Pinned parameters: pin[j] is the fixed value of parameter j, NAN for free. NULL: all free.
    // Length law->n_params; read, not owned (e.g. pin Linf of the power law).
    const double *pin;
    // Gaussian prior on log parameters, for parameters the data identify poorly (a ridge towards a
    // reference): the objective gains prior_weight/2 * sum_j (log p_j - log prior[j])^2 over the j with
    // prior[j] not NAN. NULL or prior_weight 0: none. Length law->n_params; read, not owned. The grid
    // search ranks its points with the penalty but its linear solve ignores it, so put priors on
    // NONLIN/GRID parameters.
    const double *prior;
    double prior_weight;
} fit_options;

void fit_options_default(fit_options *o);

// Result of fitting one law. All arrays have length n_params and are owned (free with fit_result_free).
typedef struct {
    size_t n_params;
    double *params;       // best fit, natural units, law enum order
    double objective;     // sum_i w_i Huber(log pred - log obs) at params, plus the prior penalty if any
    size_t n_points;      // points with weight > 0
    double mean_abs_rel;  // in-sample mean |pred/obs - 1| over those points
    double max_abs_rel;   // in-sample max  |pred/obs - 1|
    // Bootstrap (fit_bootstrap); n_boot == 0 until run. ci_lo/ci_hi are percentile intervals.
    size_t n_boot;
    double ci_level;
    int boot_by_group;    // 1: whole groups (curves/rungs) resampled; 0: single points
    double *ci_lo, *ci_hi;
    // Leave-one-group-out backtest (fit_backtest); n_groups == 0 until run.
    size_t n_groups;
    double *bt_mean_abs_rel; // [n_groups] mean |rel err| on the held-out group, fitted on the others
    double *bt_max_abs_rel;  // [n_groups]
    double bt_mean, bt_max;  // over all held-out points
} fit_result;

void fit_result_free(fit_result *r);

// Linear-interpolated quantile q in [0, 1] of x[n] (n >= 1); sorts x in place.
double fit_quantile(double *x, size_t n, double q);

// The parameters fit_law_run fits by least squares (not pinned by o, not searched on a grid): a fit needs at
// least this many points.
size_t fit_free_params(const fit_law *law, const fit_options *o);

// Fits law to obs[law->n_points] (all > 0) with optional weights w (NULL: all 1; w_i >= 0, zero drops a
// point). out is overwritten (allocated here; call fit_result_free). Errors: SX_ERR_ARG (bad inputs,
// fewer weighted points than free parameters), SX_ERR_NUMERIC (no grid point gave a finite objective),
// SX_ERR_NOMEM.
sx_status fit_law_run(const fit_law *law, const double *obs, const double *w, const fit_options *o,
                      fit_result *out);

// Two-stage fit for laws with a fast approximate binding (law_mpl_bind with block > 1): fit_law_run on
// `fast`, then fit_refine (at most 10 iterations) on `exact` from that result; objective and errors are the exact law's. Both
// bindings must cover the same points. out as for fit_law_run.
sx_status fit_law_run_staged(const fit_law *fast, const fit_law *exact, const double *obs, const double *w,
                             const fit_options *o, fit_result *out);

// Local refinement only, from start[n_params] (natural units); params[n_params] overwritten with the
// result, *objective with its Huber objective. Used for warm restarts (bootstrap, backtests).
sx_status fit_refine(const fit_law *law, const double *obs, const double *w, const fit_options *o,
                     const double *start, double *params, double *objective);

// Objective (Huber sum plus prior penalty) and |relative error| statistics of params over points with
// w_i > 0 (w NULL: all). Any output pointer may be NULL.
void fit_evaluate(const fit_law *law, const double *params, const double *obs, const double *w,
                  const fit_options *o, double *objective, double *mean_abs_rel, double *max_abs_rel);

// Bootstrap percentile intervals at `level` (e.g. 0.95) from n_boot resamples, each refitted with
// fit_refine from r->params. group[n_points] (values 0..n_groups-1) makes whole groups the resampled unit
// (use it when points are correlated: curves of one run, eval points of one rung); NULL resamples points.
// Fills r->ci_lo/ci_hi/n_boot/ci_level/boot_by_group (overwritten). Deterministic in seed.
sx_status fit_bootstrap(const fit_law *law, const double *obs, const size_t *group, size_t n_groups,
                        const fit_options *o, size_t n_boot, double level, uint64_t seed, fit_result *r);

// Leave-one-group-out backtest: for each group g, fit on the other groups and measure |rel err| on g.
// full_search: 1 runs fit_law_run (grid + local) per fold, 0 refines from r->params (faster).
// Fills r->bt_* and r->n_groups (overwritten).
sx_status fit_backtest(const fit_law *law, const double *obs, const size_t *group, size_t n_groups,
                       const fit_options *o, int full_search, fit_result *r);

// Per-fraction cross-rung laws L_f(C) = Linf_f + A_f*C^-alpha_f: one POWER fit per fraction.
// x[n_rungs]: each rung's scale (e.g. total training FLOPs); loss[n_rungs x n_fracs] row-major (rung r,
// fraction f); fracs[n_fracs] only labels the results. out[n_fracs] overwritten (free each).
sx_status fit_per_fraction(const double *x, const double *loss, size_t n_rungs, size_t n_fracs,
                           const fit_options *o, fit_result *out);

// Scale dependence across rungs: each parameter j of a per-rung whole-curve fit becomes either a power
// law p_j(x) = coef_j * x^expo_j (vary[j] = 1, log-linear least squares over rungs, needs >= 2 rungs)
// or a constant, the geometric mean over rungs (vary[j] = 0, expo_j = 0).
typedef struct {
    size_t n_params;
    double *coef, *expo; // [n_params], owned
    double *rmse_log;    // [n_params] RMS of log residuals across rungs (0 for constants)
} fit_scale;

// rung_params[n_rungs x n_params] row-major (all > 0), x[n_rungs] > 0. out overwritten.
sx_status fit_scale_dependence(const double *x, const double *rung_params, size_t n_rungs, size_t n_params,
                               const int *vary, fit_scale *out);
// params[n_params] overwritten with the law's parameters at scale x.
void fit_scale_predict(const fit_scale *s, double x, double *params);
void fit_scale_free(fit_scale *s);

// JSON: {"law": name, "params": {name: value}, "ci": {name: [lo, hi]} (when bootstrapped, with
// "ci_level", "n_boot", "boot_unit"), "objective", "n_points", "mean_abs_rel_err", "max_abs_rel_err",
// "backtest": {"groups": [{"mean_abs_rel_err", "max_abs_rel_err"}], "mean_abs_rel_err",
// "max_abs_rel_err"} (when run)}. `name` is the fit's label (e.g. "final_loss_nd"). New reference,
// caller owns; NULL on allocation failure.
json_t *fit_result_to_json(const char *name, const fit_law *law, const fit_result *r);
json_t *fit_scale_to_json(const fit_law *law, const fit_scale *s, const char *x_name);

#endif
