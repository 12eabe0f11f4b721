// lrsweep: the ladder's LR sweep (keys lr_sweep, lr_sweep_widths): fits the LR rule from the sweep's runs
// (laws/lrfit.h) and gives the hero its LR from that rule, with the rule's uncertainty and the loss cost
// of that uncertainty. Not responsible for planning or running the sweep (ladder.c) or the fit engine.
#ifndef SEXTANT_SCALE_LRSWEEP_H
#define SEXTANT_SCALE_LRSWEEP_H
#include <jansson.h>
#include "core/status.h"
#include "scale/ladder_data.h"

// The optimum at every swept width (final losses of its main runs at the rule's LR and of its sweep runs)
// and the power law across widths. *out: {"law": "lr_power", "ref_width", "coef", "power", "se_log_coef",
// "se_power", "cov", "curvature", "noise_rel", "optima": [{"width", "lr", "se_log", "curvature"}],
// "assumed": {"lr", "power"}}.
sx_status lrsweep_fit(const ladder_data *d, json_t **out);
// Sets the hero's "lr" in forecast (from its model's width) by the fitted rule and adds "lr_rule",
// "lr_se_log" and "lr_loss_cost"; the caller rehashes. No-op when rule is NULL.
sx_status lrsweep_apply(const json_t *rule, json_t *forecast, size_t hero_width);

#endif
