// lrfit: the LR rule from a short LR sweep, instead of an assumed one. At each swept width the final losses
// of runs at the best peak LR and its two neighbours in the sweep are fitted by a parabola in log LR,
// L = a + b*x + c*x^2 (x = ln lr), whose vertex is that width's optimum x* = -b/(2c), with its standard error
// from the fit's covariance (delta method) and the curvature c (loss per (ln lr)^2). Across widths,
// ln lr*(w) = ln coef - power*ln(w/ref) by weighted least squares (weights 1/se^2), with the covariance of
// (ln coef, power). The hero's LR and its uncertainty follow, and the expected loss cost of that uncertainty,
// c*se^2 (a parabola's mean excess over a normal error of the log LR).
// Not responsible for choosing or reading the runs (forecast.c, the ladder key lr_sweep).
#ifndef SEXTANT_LAWS_LRFIT_H
#define SEXTANT_LAWS_LRFIT_H
#include <stddef.h>
#include "core/status.h"

typedef struct {
    double width, lr, se_log, curvature;   // optimum lr, standard error of ln lr, c
} lrfit_optimum;

typedef struct {
    double ref_width, log_coef, power;     // ln lr*(w) = log_coef - power*ln(w/ref_width)
    double cov[2][2];                      // covariance of (log_coef, power)
    double curvature;                      // mean c over the swept widths
} lrfit_rule;

#define LRFIT_MAX_POINTS 64

// Vertex of the parabola through the points (ln lr[i], loss[i]) at the LR of lowest mean loss and its two
// neighbours; n <= LRFIT_MAX_POINTS points at >= 3 distinct LRs. se_floor_rel: the relative noise assumed per
// loss when the fit has no residual degrees of freedom (3 points) or less scatter than that (pass the runs'
// seed-to-seed noise). SX_ERR_NUMERIC when the parabola opens downward
// or its vertex lies more than 2x outside the swept LRs (no optimum inside: move or widen the sweep).
sx_status lrfit_vertex(const double *lr, const double *loss, size_t n, double se_floor_rel, lrfit_optimum *out);
// The rule through optima at >= 2 widths. SX_ERR_ARG for fewer.
sx_status lrfit_power(const lrfit_optimum *opt, size_t n, double ref_width, lrfit_rule *out);
// The rule's LR at width w, the standard error of its ln, and the expected loss cost curvature*se^2.
double lrfit_predict(const lrfit_rule *r, double width, double *se_log, double *loss_cost);

#endif
