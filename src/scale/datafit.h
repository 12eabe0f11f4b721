// datafit: the data-constrained law (scale/datalaw.h) fitted from finished ladders, and applied to a
// forecast whose hero repeats its data. Points are the final evaluation of every finished run of the
// ladders (main runs and cooldown branches): N = non-embedding parameters, D = tokens seen, U = the run's
// cap on unique tokens (config.json "unique_tokens", set by the ladder key unique_tokens; none = fresh).
// A ladder capped to few unique tokens gives the repeated points, the fresh ladder the rest.
// Not responsible for the per-fraction laws or the forecast's shape (scale/forecast.h).
#ifndef SEXTANT_SCALE_DATAFIT_H
#define SEXTANT_SCALE_DATAFIT_H
#include <jansson.h>
#include "core/status.h"
#include "scale/ladder.h"

// Fits the law on the runs of specs[0..n) whose outputs are under dirs[0..n); *out receives
// {"law": "data_constrained", "params": {...}, "ci": {...}, "n_points", "repeating_points", "max_passes",
// mean/max errors}. SX_ERR_ARG when fewer than 12 finished runs, or fewer than 3 that repeat data.
sx_status datafit_ladders(const ladder_spec *specs, const char *const *dirs, size_t n, json_t **out);

// Adds the law's repeat penalty B*(D'^-beta - D^-beta) at every point of forecast (tokens = frac x the
// hero's tokens; its unique tokens `unique`) to loss, lo and hi, and records in "method" which law was
// used ("data_law"). dc may be NULL (no fitted law): the points are unchanged and the method says the
// fresh-data law was used although the hero repeats data. The caller rehashes (forecast_rehash).
sx_status datafit_apply(json_t *forecast, const json_t *dc, double unique);

#endif
