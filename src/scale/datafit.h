// datafit: the repeat penalty of the data-constrained law (laws/datalaw.h) fitted from a fresh ladder and
// a data-limited twin, and applied to a forecast whose hero repeats its data.
//
// Method: the data-limited ladder is the fresh ladder's recipe with the key unique_tokens U (every run
// trains on only U unique tokens). A run and its twin (same rung, seed, schedule, batch) differ only in
// their data, so at every shared evaluation step the difference of their losses is the cost of repeating:
//   delta(D, U) = L_limited - L_fresh = B * (D'^-beta - D^-beta),   D' = U + U*Rstar*(1 - exp(-(D/U - 1)/Rstar))
// at tokens seen D (delta = 0 while D <= U). Schedule and size effects cancel in the difference, so three
// parameters (B, beta, Rstar) are fitted by least squares (B in closed form, a zooming grid over beta and
// Rstar), with a bootstrap over run pairs for 90% intervals. That penalty is exactly what a forecast adds.
// The law models diminishing returns, not overfitting: a limited run's points after its lowest evaluation
// (its loss rising as it trains on) are left out, and the fewest passes where a twin did that is recorded
// ("overfits_from_passes"; forecast warns when a hero goes past it).
// Not responsible for the per-fraction laws or the forecast's shape (scale/forecast.h).
#ifndef SEXTANT_SCALE_DATAFIT_H
#define SEXTANT_SCALE_DATAFIT_H
#include <stddef.h>
#include <jansson.h>
#include "core/status.h"
#include "scale/ladder.h"

#define DATAFIT_BOOT 100

typedef struct {
    double params[3];       // B, beta, Rstar
    double lo[3], hi[3];    // 90% bootstrap intervals
    double rmse;            // of the loss differences
    size_t n_points, repeating, n_boot;
} datafit_result;

// Fits delta[i] = B*(D'^-beta - D^-beta) at (D[i], U[i]) (U <= 0: no cap); group[i] in 0..n_groups-1 is
// the run pair of point i (the bootstrap's unit). SX_ERR_ARG for fewer than 3 repeating points,
// SX_ERR_NUMERIC when the limited runs are not worse (nothing to fit).
sx_status datafit_penalty(const double *D, const double *U, const double *delta, size_t n, const size_t *group,
                          size_t n_groups, datafit_result *out);

// Pairs every finished main run of the data-limited ladder (limited, its runs under limited_dir) with the
// same run of the fresh ladder (under fresh_dir) and fits the penalty on their matched evaluations. *out:
// {"law": "data_constrained", "method", "params": {"B", "beta", "Rstar"}, "ci": {...: [lo, hi]},
// "ci_level", "n_points", "repeating_points", "run_pairs", "max_passes", "rmse"} and, where a twin overfitted,
// "overfits_from_passes".
sx_status datafit_ladders(const ladder_spec *fresh, const char *fresh_dir, const ladder_spec *limited,
                          const char *limited_dir, json_t **out);

// Adds the law's repeat penalty B*(D'^-beta - D^-beta) at every point of forecast (tokens = frac x the
// hero's tokens; its unique tokens `unique`) to loss, lo and hi, and records in "method" which law was
// used ("data_law"). dc may be NULL (no fitted law): the points are unchanged and the method says the
// fresh-data laws were used although the hero repeats data. The caller reseals it (forecast_seal).
sx_status datafit_apply(json_t *forecast, const json_t *dc, double unique);

#endif
