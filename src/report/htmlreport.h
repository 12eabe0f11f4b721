// htmlreport: one self-contained HTML page (inline CSS and SVG, no script, nothing fetched) that a person
// opens in a browser: for a ladder, its runs' status, the fitted laws with bootstrap intervals, the rung
// curves and the spec; for a run, its curves, the check against its forecast (plot and verification table,
// points outside the band marked; a plot per task the forecast holds, its measured accuracies against the
// chained forecast) and its resolved configuration.
// Elements carry ids a test can find: "summary", "plots", "status", "laws", "verification", "config".
// Not responsible for training, fitting or forecasting: it reads their documents.
#ifndef SEXTANT_REPORT_HTMLREPORT_H
#define SEXTANT_REPORT_HTMLREPORT_H
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"
#include "scale/ladder.h"

// A ladder's report. fit: the content of fit.json, or NULL when the ladder has not been fitted yet.
sx_status htmlreport_ladder(FILE *f, const ladder_spec *spec, const char *runs_dir, json_t *fit);
// A run's report. fc: the forecast it was trained against (NULL: none); fit: the ladder fit behind the
// forecast, for the rung curves (NULL: none).
sx_status htmlreport_run(FILE *f, const char *run_dir, json_t *fc, json_t *fit);

#endif
