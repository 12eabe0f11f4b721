// plots: the standard charts of sextant's documents, drawn with svgplot, each titled with what it shows
// (ladder, run, schedules): a curve ladder's backtest, the forecast (ladder rungs, the hero's forecast band, the observed run with its
// out-of-band points ringed), a ladder's rung curves with its final-loss law, and a run's own curves.
// Used by `forecast --plot`, `backtest --plot` (files) and `report` (inline in HTML). Not responsible for computing any of
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
// Final loss vs compute of every variant of a comparison (compare_ladders' report, scale/compare.h) with
// its fitted law extended to the target compute, written to path.
sx_status plots_compare(const char *path, json_t *report);

#endif
