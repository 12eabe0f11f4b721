// taskcast: the downstream forecast of a ladder's hero, chained in two steps (docs/FORECAST.md, "Task
// accuracy"): (i) each task's loss vs compute, from the same per-fraction laws as the validation loss (the
// ladder read with task_<name>_loss in place of val_loss, scale/forecast.h), and (ii) accuracy vs task loss
// (laws/acclaw.h), fitted on every rung's (task loss, accuracy) pairs at every evaluated fraction. The
// hero's accuracy at each fraction is the accuracy law at its forecast task loss, with a band that carries the
// loss band, the accuracy law's bootstrap and held-out error, and the binomial error of the task's items.
//
// Tasks are found in the runs' metrics (task_<name>_acc / _loss / _n on evaluation lines, `train
// --eval-tasks`); a ladder without them has no tasks and nothing here changes its fit or forecast.
// Not responsible for: evaluating tasks (train/, the eval command), the laws themselves.
#ifndef SEXTANT_SCALE_TASKCAST_H
#define SEXTANT_SCALE_TASKCAST_H
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"
#include "scale/forecast.h"
#include "scale/ladder.h"

// Fits both steps for every task the ladder's runs logged. *tasks receives a new object {name: {"items",
// "loss_fit" (a fit.json document for task_<name>_loss), "acc_law" (acclaw_model_to_json)}}, empty when the
// runs logged no tasks. A task whose laws cannot be fitted is left out with a warning on stderr.
sx_status taskcast_fit(const ladder_spec *spec, const char *ladder_dir, json_t **tasks);
// fit.json's "tasks" -> forecast.json's "tasks": {name: {"status", "form", "items", "points": [{"frac",
// "step", "loss", "loss_lo", "loss_hi", "acc", "lo", "hi"}]}}. *out receives a new reference.
sx_status taskcast_forecast(json_t *fit_tasks, const hero_spec *hero, json_t **out);
// After a loss check (forecast_check_run): the run's task accuracies against forecast.json's "tasks", printed
// to out and attached to the loss report as "tasks": {name: {"points", "mean_abs_err_points",
// "max_abs_err_points", "final_err_points", "inside_band_frac", "mean_band_halfwidth_points", "rows"}}, the
// error in points being forecast - observed (out NULL: attached, not printed). Nothing when the forecast has
// no tasks. Used by `forecast --check`, `train --forecast` and the run's HTML report.
sx_status taskcast_check_into(json_t *forecast, const char *run_dir, json_t *report, FILE *out);

#endif
