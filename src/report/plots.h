// plots: the standard charts of sextant's documents, drawn with svgplot, each titled with what it shows
// (ladder, run, schedules): a curve ladder's backtest, the forecast (ladder rungs, the hero's forecast band, the observed run with its
// out-of-band points ringed), the hero's task accuracies against their chained forecast, a ladder's rung curves with its
// final-loss law, and a run's own curves.
// Used by `forecast --plot` (a spec's hero or a curve ladder's target), `backtest --plot` (files) and `report` (inline in HTML). Not responsible for computing any of
// the numbers: they come from fit.json, forecast.json, a check report or a run directory.
#ifndef SEXTANT_REPORT_PLOTS_H
#define SEXTANT_REPORT_PLOTS_H
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"
#include "runs/rundir.h"

// Rung curves from fit (may be NULL), the forecast fc with its band, and when report (forecast_check_run's
// document) is given the observed points, those outside the band flagged.
sx_status plots_forecast(FILE *f, json_t *fit, json_t *fc, json_t *report);
// The same, written to path.
sx_status plots_forecast_write(const char *path, json_t *fit, json_t *fc, json_t *report);
// A curve ladder's forecast (curvecast_forecast's document: a target's loss at steps with its band) against
// step, and when report (curvecast_check's) is given the run's logged points, those outside the band ringed.
sx_status plots_curve(FILE *f, json_t *fc, json_t *report);
sx_status plots_curve_write(const char *path, json_t *fc, json_t *report);
// Rung curves (seed means at the fit's fractions) against training FLOPs and the fitted final-loss law.
sx_status plots_ladder(FILE *f, json_t *fit);
// A backtest (backtest_run's report): the target runs' observed losses against step, each with the joint law's
// forecast and band, points outside the band ringed; at most PLOTS_BACKTEST_RUNS runs, spread over the targets.
#define PLOTS_BACKTEST_RUNS 5
sx_status plots_backtest(FILE *f, json_t *report);
sx_status plots_backtest_write(const char *path, json_t *report);
// A run's training loss (at most ~500 points) and its validation evaluations against tokens seen.
// name labels the run (usually its directory).
sx_status plots_run(FILE *f, const char *name, const rundir_run *run);
// One task's accuracy forecast for the hero (forecast.json's "tasks"[task]: the chained forecast at every
// evaluated fraction with its band) against training FLOPs, and, when report holds the task's check
// (report["tasks"], taskcast_check_into), the hero's measured accuracies, those outside the band ringed.
// SX_ERR_ARG when the forecast has no such task.
sx_status plots_task(FILE *f, json_t *fc, json_t *report, const char *task);
// plots_task for every task of the forecast, each to its own file beside path: "dir/x.svg" gives
// "dir/x-task-NAME.svg". Nothing when the forecast has no tasks.
sx_status plots_tasks_write(const char *path, json_t *fc, json_t *report);
// Final loss vs compute of every variant of a comparison (compare_ladders' report, scale/compare.h) with
// its fitted law extended to the target compute, written to path.
sx_status plots_compare(const char *path, json_t *report);

#endif
