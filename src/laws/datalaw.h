// datalaw: the data-constrained scaling law (Muennighoff et al. 2023, "Scaling Data-Constrained Language
// Models"): repeated tokens are worth less than fresh ones, with returns that decay per repetition.
//   R      = D/U - 1                       repetitions beyond the first pass (0 when D <= U)
//   D'     = U + U*Rstar*(1 - exp(-R/Rstar))   effective tokens (D' = D when D <= U; D' -> U*(1+Rstar))
//   L(N,D,U) = E + A/N^alpha + B/D'^beta   the Chinchilla form with D replaced by D'
// Rstar is the number of repetitions after which repeated data has lost 1 - 1/e of its value.
// Responsible for the formula, its binding to data for the fit engine (laws/fit.h), and the penalty a
// forecaster adds when a run repeats data. Kept apart from laws.c (the fresh-data laws) on purpose.
// Not responsible for choosing which runs to fit (forecast.c) or for reading runs.
#ifndef SEXTANT_LAWS_DATALAW_H
#define SEXTANT_LAWS_DATALAW_H
#include <stddef.h>
#include "core/status.h"
#include "laws/laws.h"

enum { LAW_DC_E, LAW_DC_A, LAW_DC_B, LAW_DC_ALPHA, LAW_DC_BETA, LAW_DC_RSTAR, LAW_DC_NPARAM };

// Effective tokens D' of D tokens drawn from U unique ones (D' = D when D <= U or U <= 0: no cap).
double law_dc_effective_tokens(double D, double U, double rstar);
double law_dc_eval(const double p[LAW_DC_NPARAM], double N, double D, double U);
// The loss a run pays for repeating data under the law: B * (D'^-beta - D^-beta) >= 0 (0 without repeats).
double law_dc_repeat_penalty(double B, double beta, double rstar, double D, double U);

// Binds the law to n points (N, D, U) (U <= 0: fresh data, the point has no cap). E, A, B are LINEAR;
// alpha, beta, Rstar NONLIN. SX_ERR_ARG for non-positive N or D. Free with fit_law_free.
sx_status law_dc_bind(const double *N, const double *D, const double *U, size_t n, fit_law *out);

#endif
