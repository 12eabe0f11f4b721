// ladder_data: the runs of a finished ladder read back for analysis (forecasting, comparison): the plan,
// each run directory, and seed-averaged rung curves at the ladder's shared fractions.
#ifndef SEXTANT_SCALE_LADDER_DATA_H
#define SEXTANT_SCALE_LADDER_DATA_H
#include <stddef.h>
#include "core/status.h"
#include "scale/ladder.h"
#include "runs/rundir.h"

typedef struct {
    const ladder_spec *spec;
    ladder_run *plan;
    size_t n_plan;
    rundir_run *runs;   // parallel to plan
} ladder_data;

// Reads every run of spec's plan under dir; every run must have finished (else SX_ERR_ARG with a hint).
sx_status ladder_data_read(const ladder_spec *spec, const char *dir, ladder_data *d);
void ladder_data_free(ladder_data *d);
// The validation loss logged at fraction f of a run (its eval at step round(f·total)), or NAN.
double ladder_loss_at_frac(const rundir_run *r, double f);
// Seed means mean (R, F) and relative seed spread sd_rel (R, F; may be NULL) of every rung at every
// fraction of the spec; rungs in plan order (largest first). With pick != NULL (one entry per main run of
// the plan), rung r averages the seeds pick[b .. b+S_r) instead of 0..S_r-1 (b = ladder_rung_start(spec, r),
// S_r = ladder_rung_seeds(spec, r); bootstrap).
void ladder_rung_curves(const ladder_data *d, const size_t *pick, double *mean, double *sd_rel);

#endif
