// perfrac: the per-fraction law as a forecaster for curve ladders (runs/import.h). At fractions f = 0.10,
// 0.15, ..., 1 of each run, L_f = E_f + A_f·N^-a_f + B_f·D^-b_f over the training runs (D = the run's total
// tokens; a fraction needs points of 6 runs), anchored on the largest training size (times its observed/fitted
// ratio at f); a target's loss at step s is interpolated in log-fraction between the fractions around s/T and
// held beyond the first and last. backtest scores it beside the joint law; curvecast forecasts with it a target
// above the training sizes where it did better one size back.
// Not responsible for: choosing it (laws/backtest.h, scale/curvecast.h), the least-squares fit (laws/fit.h).
#ifndef SEXTANT_LAWS_PERFRAC_H
#define SEXTANT_LAWS_PERFRAC_H
#include <stddef.h>
#include <jansson.h>
#include "core/status.h"
#include "laws/curvefit.h"
#include "laws/laws.h"
#include "runs/import.h"

#define PERFRAC_N_FRACS 19
// Above the training sizes the per-fraction law forecasts instead of the joint law only where its RMS error one
// size back is below this fraction of the joint law's: one fold's error is noisy, and the joint law forecasts
// more (any schedule, any step). Set on the development sets: Gadre's rpj and rw_original (ratios 0.68, 0.76)
// gain from the switch held out, Misfitting M2 with N as given (0.91) loses.
#define PERFRAC_CHOICE_MARGIN 0.85

typedef struct {
    int nonembed;                                // N without (1) or with (0) embeddings
    double p[PERFRAC_N_FRACS][LAW_ND_NPARAM];    // laws.h order; NAN where a fraction has no law
    double ratio[PERFRAC_N_FRACS];               // the anchor: the largest training size's observed/fitted
} perfrac_model;

// Fraction k: 0.10 + 0.05·k.
double perfrac_frac(size_t k);
// Fits the runs with train[i] != 0 at loss column `loss`; SX_ERR_ARG when no fraction has a law.
sx_status perfrac_fit(const import_ladder *l, const unsigned char *train, size_t loss, int nonembed, perfrac_model *m);
// pred[n] overwritten with run t's loss after steps[n] (1-based, <= t->total_steps).
void perfrac_predict(const perfrac_model *m, const import_run *t, const long *steps, size_t n, double *pred);
// perfrac_predict within the fitted fractions; outside them (before the first, after the last: a ladder of
// final losses has only f = 1) the joint law's curve `shape`, scaled to meet the per-fraction law at the nearest
// fitted fraction: the per-fraction law's level with the joint law's shape, never a flat line. pred[n] overwritten.
sx_status perfrac_predict_shaped(const perfrac_model *m, const curvefit_model *shape, const import_run *t, const long *steps,
                                 size_t n, double *pred);
// The RMS relative error (points after score_from of each run) of the training set's largest size forecast
// from the sizes below it; NAN (SX_OK) when those are fewer than 3 sizes or give no law.
sx_status perfrac_one_size_back(const import_ladder *l, const unsigned char *train, size_t loss, int nonembed,
                                double score_from, double *rms);
// {"nonembed", "fracs": [...], "params": [[E, A, B, alpha, beta] | null ...], "ratio": [...]}; a new reference.
json_t *perfrac_json(const perfrac_model *m);
// perfrac_json's object back; SX_ERR_FORMAT naming what is wrong.
sx_status perfrac_read(json_t *j, perfrac_model *m);

#endif
