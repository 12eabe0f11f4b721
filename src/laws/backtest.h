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
//              training size (times its observed/fitted ratio at f), interpolated in log-step (laws/perfrac.h).
//   chosen     above the training sizes, perfrac where its RMS error one size back is below PERFRAC_CHOICE_MARGIN
//              times nds's, else nds (the
//              rule `forecast` follows, scale/curvecast.h), with its band; the joint law inside them. A row only
//              where it picks perfrac; "forecaster_above" holds both errors and the choice.
// Not responsible for: reading ladders (runs/import.h), the laws (laws/law_nds.h, fit.h).
#ifndef SEXTANT_LAWS_BACKTEST_H
#define SEXTANT_LAWS_BACKTEST_H
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"
#include "laws/curvefit.h"
#include "laws/fit.h"
#include "laws/schedfit.h"
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
// chooses the lower, and N with embeddings (or the only count the ladder gives) is tried less each offset
// when fit->n_offset is NAN (both overwritten with the choice). A count the ladder does not give for every
// run is never a candidate; asked for by fit->nonembed, an error.
// Offsets tried (curvefit_options.n_offset NAN: choose), as fractions of the smallest training run's N of
// the kind they apply to: {0, 0.25, 0.5}.
#define BACKTEST_N_OFFSETS 3
extern const double backtest_offset_fracs[BACKTEST_N_OFFSETS];
typedef struct {
    double inner_kind[2];   // [with (at its best offset), without embeddings]; NAN: not tried
    double inner_offset[BACKTEST_N_OFFSETS]; // the offsets' kind at each offset fraction; NAN: not tried
    int offset_nonembed;    // the kind the offsets apply to: with embeddings (0), or without where only it is given
    double n_min;           // the smallest training N of that kind (the offsets' unit)
    double inner_rms;       // of the chosen kind
    double top_n, log_step; // N of the largest training group, log(N_top / N of the group below it) (0: none)
    double bottom_n;        // N of the smallest training group
    char by_run[96];        // why the inner error left each run out of the others instead ("": it did not)
} backtest_choice;
// The joint law's error one length back: fitted (fit's options) on the first half of every training run (its
// points at or before half its steps), its RMS relative error on the second halves' points after score_from of
// their runs, in *rms (NAN when the halves cannot be fitted); *max_tpp: the most tokens per parameter (the N the
// law reads) of any training run. A target trained on more tokens per parameter than any training run takes the
// law's data and annealing terms where no run went: this error grows with each doubling past it
// (backtest_extrapolation). Measured per parameter, so that a ladder's larger sizes trained longer at its
// allocation (the one-size-back error's territory) do not count as longer.
sx_status backtest_length_back(const import_ladder *l, const unsigned char *train, const curvefit_options *fit,
                               double score_from, double *rms, double *max_tpp);
// The band's extrapolation term: the size term (the error one size back, or leaving one run out, times the size
// steps past the training sizes, at least 1) or the length term (the error one length back, NAN: none, times
// the doublings of the target's length past the longest training run's: 0 within it), the larger. Length: the
// joint law's tokens per parameter, a schedule law's steps.
double backtest_extrapolation(double size_term, double length_back, double length, double max_length);
// How many size steps (log_step) N lies beyond the training sizes [bottom, top], above or below (0 inside);
// the band's extrapolation error grows with it. bottom <= 0 (unknown): only above counts.
double backtest_size_steps(double n, double top, double bottom, double log_step);
// {"<N kind>": inner RMS} for every candidate tried (names by curvefit_n_name); a new reference.
json_t *backtest_choice_json(const backtest_choice *c);
sx_status backtest_one_size_back(const import_ladder *l, const unsigned char *train, curvefit_options *fit,
                                 backtest_choice *c);

// The schedule law of a ladder whose runs with train[i] != 0 (train NULL: all) are one size (runs that differ
// only in their schedule): the multi-power law with its shape prior (laws/schedfit.h, weight by leaving one
// curve out), Tissue's law and the joint law, each scored by leaving one training curve out (on the points no
// other curve shares); the lowest error is the choice (`fit`'s and `forecast`'s default; `backtest` scores
// mpl and tissue as methods). fitted 0 when the runs are not one size or fewer than 2 (nothing else set).
typedef enum { BACKTEST_LAW_NDS, BACKTEST_LAW_MPL, BACKTEST_LAW_TISSUE } backtest_law;
extern const char *const backtest_law_names[3];   // "nds", "mpl", "tissue"
typedef struct {
    int fitted;
    backtest_law chosen;
    fit_result mpl, tissue;                  // mpl at the chosen prior weight (free with backtest_schedlaw_free)
    double prior_weight, cv[SCHEDFIT_N_WEIGHTS];
    double law_cv[3];                        // leave-one-curve-out mean |rel err| of each law, backtest_law order
    double length_back[3];                   // each schedule law's error one length back (RMS; NAN: not measured)
    long max_steps;                          // the longest training run's steps
} backtest_schedlaw;
sx_status backtest_schedule_law(const import_ladder *l, const unsigned char *train, const curvefit_options *fit,
                                backtest_schedlaw *s);
void backtest_schedlaw_free(backtest_schedlaw *s);
// A schedule law's band takes the same extrapolation term (backtest_extrapolation), in steps, with the larger
// of its errors leaving one curve out and one length back (length_back: fitted on every training curve's first
// half, scored on the second halves) as the size term: three curves left out one by one judge schedule
// transfer on three folds and can come out far below the error on new schedules (0.05% against 0.28% on the
// multi-power-law 400M curves).
double backtest_sched_size_term(double loo, double length_back);
// Run r's tokens per parameter, for n its N as the law reads it (curvefit_n).
double backtest_tokens_per_param(const import_run *r, double n);
// log2(length / max_length) where length > max_length > 0, else 0.
double backtest_length_doublings(double length, double max_length);
// {"law", "params": [L0, A, B, alpha, C, beta, gamma], "prior_weight", "cv_error_by_weight", "in_sample_mean",
//  "tissue": {"params": [L0, A, C, alpha, lambda], "in_sample_mean"}, "schedule_law_choice": {"nds", "mpl",
//  "tissue", "chosen"}, "length_back": {"mpl", "tissue"} (those measured), "max_steps"}; a new reference.
json_t *backtest_schedlaw_json(const backtest_schedlaw *s);
// The schedule law `law` (MPL p[7] or Tissue p[5]) on run r (its LR of every step, absolute) after steps[n]
// (1-based): pred[n] overwritten.
sx_status backtest_sched_predict(backtest_law law, const double *p, const import_run *r, const long *steps, size_t n,
                                 double *pred);

// Runs the backtest; *report receives a new JSON object:
//   {"targets": [group...], "train": [group...], "n_param_kind": "with embeddings"|"without embeddings",
//    "methods": [{"method", "mean_abs_rel_err", "max_abs_rel_err", "final_abs_rel_err" (mean over target runs),
//                 "final_max_abs_rel_err", "band_coverage" (nds), "n_points", "runs": [{"run", "group",
//                 "mean", "max", "final", "coverage"}]}],
//    "nds": {"params", "sigma_noise", "sigma_extrapolation", "inner_rms"}}
sx_status backtest_run(const import_ladder *l, const backtest_options *o, json_t **report);
void backtest_print(FILE *f, const json_t *report);

#endif
