// curvecast: fit.json and forecast.json for curve ladders (runs/import.h). `fit` fits the joint law
// (laws/curvefit.h) to every run, with N (with or without embeddings) chosen one size back, and records the
// band's parts; on a one-size ladder (runs differing only in schedule) it also fits the multi-power law with its
// shape prior and keeps whichever law has the lower leave-one-curve-out error (laws/backtest.h); it also fits the
// per-fraction law (laws/perfrac.h) and, where its error one size back is clearly lower than the joint law's
// (PERFRAC_CHOICE_MARGIN), records it as
// the forecaster for targets above the training sizes (inside them, and when it is not lower, the joint law
// forecasts); `forecast` forecasts any target run (a runs-table row or one described by flags) at any list
// of steps with a band, frozen by a SHA-256; `check` scores a logged run against a frozen forecast at every
// logged point, interpolating the forecast in log-step between its points.
// Not responsible for: reading ladders (import.h), the law or its fit (law_nds.h, curvefit.h), CLI printing.
#ifndef SEXTANT_SCALE_CURVECAST_H
#define SEXTANT_SCALE_CURVECAST_H
#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include "core/status.h"
#include "laws/law_nds.h"
#include "runs/import.h"

#define CURVECAST_VERSION 1

// *fit receives {"kind": "curve-ladder", "version", "ladder": {"runs", "groups", "loss", "flops"}, "law": "nds"|"mpl",
// "schedule_law" (one-size ladders: backtest_schedlaw_json plus "n_params"),
// "params": {...}, "n_kind": "with embeddings"|"without embeddings", "n_choice_inner_rms": {...},
// "sigma": {"noise", "one_size_back", "top_n", "log_step"}, "in_sample_mean", "in_sample_max",
// "perfrac": perfrac_json plus "one_size_back", "forecaster_above": "nds"|"perfrac"} (the last two where the
// per-fraction law could be scored one size back: 4 sizes or more).
// per_fraction: also fit the per-fraction law and choose the forecaster above the training sizes (false: the
// joint law only, as a spec ladder's fit embeds it beside its own per-fraction laws).
sx_status curvecast_fit(const import_ladder *l, size_t loss, bool per_fraction, json_t **fit);
// 1 when the fit's law reads N without embeddings (its "n_kind", less any offset), 0 when with.
int curvecast_nonembed(const json_t *fit);
// The joint law's parameters (E, A, B, D, alpha, beta, eps, C, g) from a fit: SX_ERR_FORMAT, naming the parameter,
// unless all are finite and positive (D may be 0: no annealing term).
sx_status curvecast_params(json_t *fit, double p[LAW_NDS_NPARAM]);
// *fc receives {"kind": "curve-forecast", "version", "law" ("nds", "mpl", "tissue" or "perfrac"), "target": {...}, "flops_rule", "sigma", "points":
// [{"step", "tokens", "flops", "loss", "lo", "hi"}], "sha256"}. steps[n]: 1-based, increasing, <= total_steps.
sx_status curvecast_forecast(json_t *fit, const import_run *target, const long *steps, size_t n, json_t **fc);
// *report receives {"run", "points": [[step, observed, forecast, lo, hi]], "mean_abs_rel_err", "max_abs_rel_err",
// "final_abs_rel_err", "band_coverage", "n_points"} over the run's logged points after 10% of it that lie within
// the forecast's steps.
sx_status curvecast_check(json_t *fc, const import_ladder *l, const import_run *r, size_t loss, json_t **report);

#endif
