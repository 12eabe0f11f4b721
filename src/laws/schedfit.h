// schedfit: the schedule law of one model size's curves (runs that differ only in their LR schedule): the
// multi-power law (Luo et al. 2025, laws.h) with a Gaussian prior pulling its annealing shape (C, β, γ)
// towards the authors' starting values (1, 0.5, 0.5), at a weight chosen by leave-one-curve-out among
// schedfit_weights (each fit curve predicted from the others, scored on its points no other curve shares).
// Why a prior: the authors' fitting code starts there and stops after at most 200 AdamW steps, so their fits
// stay close to it (early stopping acts as a prior); unregularised, three fit schedules leave the shape
// poorly identified and the optimum drifts to corners (e.g. C = 0.002, γ = 1.36 at 100M) that extrapolate
// worse. Used by `backtest` (method "mpl" when the training runs are one size) and bench/fit_public.
// Not responsible for: choosing curves, reading ladders, the law itself (laws.c).
#ifndef SEXTANT_LAWS_SCHEDFIT_H
#define SEXTANT_LAWS_SCHEDFIT_H
#include <stddef.h>
#include "core/status.h"
#include "laws/fit.h"
#include "laws/laws.h"

// One curve: the LR of every step (absolute: the law's S1 sums it) and the losses at 0-based steps.
typedef struct {
    const double *lr;
    size_t n_steps;
    const size_t *steps;
    const double *loss;
    size_t n_points;
} schedfit_curve;

#define SCHEDFIT_N_WEIGHTS 5
// Prior weights tried, from none to effectively pinned (at 1e-2 one e-fold of a shape parameter costs ~50x a
// whole fit's objective, ~1e-4).
extern const double schedfit_weights[SCHEDFIT_N_WEIGHTS];

// Fits the MPL with the shape prior at `weight` to every curve but `skip` (n: none skipped). r overwritten
// (fit_result_free). Errors as fit_law_run.
sx_status schedfit_mpl_fit(const schedfit_curve *c, size_t n, double weight, size_t skip, fit_result *r);
// Leave-one-curve-out error at `weight`: the mean over curves of the mean |rel err| of each curve, fitted on
// the others, at its points that no other curve shares (same step, loss and LR history: forked runs); NAN
// when no fold fits.
double schedfit_mpl_cv_error(const schedfit_curve *c, size_t n, double weight);
// The weight with the lowest leave-one-curve-out error (cv[SCHEDFIT_N_WEIGHTS] overwritten with each, may be
// NULL), then the fit on every curve at it. n >= 2. r overwritten.
sx_status schedfit_mpl(const schedfit_curve *c, size_t n, double *weight, double *cv, fit_result *r);
// 1 when point i of curve k is also a point of another of the n curves (same step, loss and LR history: forked
// runs, e.g. wsdcon_9 is constant_24000 until step 8000); leave-one-curve-out scores skip those.
int schedfit_point_shared(const schedfit_curve *c, size_t n, size_t k, size_t i);
// Predictions of params p on curve c: pred[c->n_points] overwritten.
sx_status schedfit_mpl_predict(const double *p, const schedfit_curve *c, double *pred);

// Tissue's law (Tissue et al. 2024, laws.h: L0 + A·S1^-alpha - C·S2, the LR-annealing area with decay lambda)
// as the alternative schedule law, without a prior (its two non-linear parameters are identified by a few
// curves): the fit on every curve but `skip` (n: none), its leave-one-curve-out error (scored as the MPL's),
// and its predictions, as the MPL functions above.
sx_status schedfit_tissue_fit(const schedfit_curve *c, size_t n, size_t skip, fit_result *r);
double schedfit_tissue_cv_error(const schedfit_curve *c, size_t n);
sx_status schedfit_tissue_predict(const double *p, const schedfit_curve *c, double *pred);

#endif
