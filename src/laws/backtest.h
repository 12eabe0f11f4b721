// backtest: how well a curve ladder forecasts its own largest sizes (or its runs marked heldout). The groups (sizes) are ordered by N;
// the largest `holdout` groups are the targets, the smaller ones the training set. Every target run's curve
// is forecast from the training runs alone and scored at every logged point after `score_from` of the run:
// mean, max and final |relative error|, and the fraction of points inside the ±2σ band.
// Methods, side by side:
//   nds        the joint law over N, data and LR schedule (laws/curvefit.h), fitted to every training point;
//              band σ² = point noise (the residuals' high-frequency part) + extrapolation error (the same fit
//              one size back, on the training set's largest size, scaled by distance in log N)
//   perfrac    the simple baseline: per-fraction laws L_f = E_f + A_f·N^-a_f + B_f·D^-b_f over the training
//              runs at fractions f = 0.1, 0.15, ..., 1 (D = the run's total tokens), anchored on the largest
//              training size (times its observed/fitted ratio at f), interpolated in log-step.
// Not responsible for: reading ladders (runs/import.h), the laws (laws/law_nds.h, fit.h).
#ifndef SEXTANT_LAWS_BACKTEST_H
#define SEXTANT_LAWS_BACKTEST_H
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"
#include "laws/curvefit.h"
#include "runs/import.h"

typedef enum { BACKTEST_SIZE, BACKTEST_ROLE } backtest_protocol;

typedef struct {
    backtest_protocol protocol; // SIZE: the largest `holdout` groups are the targets; ROLE: the runs with role
                                // heldout (e.g. other schedules of the same sizes, or final-loss targets)
    size_t holdout;       // number of largest groups forecast [1]
    double score_from;    // score points at step > score_from·total_steps [0.1]
    int baseline;         // also run the per-fraction baseline [1]
    curvefit_options fit; // N with or without embeddings, loss column, fit weights
} backtest_options;

void backtest_options_default(backtest_options *o);

// The band's extrapolation unit, from the runs with train[i] != 0: the RMS relative error (after score_from
// = 10%) of the training set's largest group forecast from the groups below it (with fewer than 3 groups:
// of every training run forecast from the others), for N with and without embeddings; fit->nonembed < 0
// chooses the lower (overwritten with the choice).
typedef struct {
    double inner_kind[2];   // [with, without embeddings]; NAN: not tried
    double inner_rms;       // of the chosen kind
    double top_n, log_step; // N of the largest training group, log(N_top / N of the group below it) (0: none)
} backtest_choice;
sx_status backtest_one_size_back(const import_ladder *l, const unsigned char *train, curvefit_options *fit,
                                 backtest_choice *c);

// Runs the backtest; *report receives a new JSON object:
//   {"targets": [group...], "train": [group...], "n_param_kind": "with embeddings"|"without embeddings",
//    "methods": [{"method", "mean_abs_rel_err", "max_abs_rel_err", "final_abs_rel_err" (mean over target runs),
//                 "final_max_abs_rel_err", "band_coverage" (nds), "n_points", "runs": [{"run", "group",
//                 "mean", "max", "final", "coverage"}]}],
//    "nds": {"params", "sigma_noise", "sigma_extrapolation", "inner_rms"}}
sx_status backtest_run(const import_ladder *l, const backtest_options *o, json_t **report);
void backtest_print(FILE *f, const json_t *report);

#endif
