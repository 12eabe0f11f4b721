// finallaw: the final-loss law of a curve ladder — Chinchilla's approach 3, L = E + A·N^-α + B·D^-β, fitted by
// the one fitting engine (grid + variable projection, Huber δ = 1e-3 on log residuals: Hoffmann et al.'s
// objective) to every chosen run's final loss: its evaluation at its last step, D = its tokens there. A point
// bootstrap gives percentile intervals. For ladders logged as final losses only (Chinchilla's points,
// isoFLOP grids) and as the final-loss protocol of `backtest`; whole curves are the joint law's (curvefit.h).
// Not responsible for reading ladders (import.h) or curves before the last step.
#ifndef SEXTANT_LAWS_FINALLAW_H
#define SEXTANT_LAWS_FINALLAW_H
#include <stddef.h>
#include "core/status.h"
#include "runs/import.h"
#include "laws/laws.h"

typedef struct {
    double p[LAW_ND_NPARAM];                       // E, A, B, alpha, beta (laws.h order)
    double lo[LAW_ND_NPARAM], hi[LAW_ND_NPARAM];   // 95% bootstrap intervals (NAN without a bootstrap)
    size_t n_runs, n_boot;
    int nonembed;                                  // N without embeddings
    double in_mean, in_max;                        // in-sample |relative error|
} finallaw;

// A run's final loss (column loss) and tokens: 1 when its last evaluation is at its last step, else 0.
int finallaw_final(const import_ladder *l, const import_run *r, size_t loss, double *final, double *tokens);
// Fits the runs with use[i] != 0 that have a final loss (at least 10: twice the parameters), N with (nonembed 0)
// or without (1) embeddings; n_boot > 0 adds point-bootstrap intervals. out overwritten. Errors: SX_ERR_ARG (too
// few runs), SX_ERR_NUMERIC, SX_ERR_NOMEM.
sx_status finallaw_fit(const import_ladder *l, const unsigned char *use, size_t loss, int nonembed, size_t n_boot,
                       finallaw *out);
// The law's final loss for run r (at its last step's tokens, else its planned tokens).
double finallaw_predict(const finallaw *f, const import_ladder *l, const import_run *r);

#endif
