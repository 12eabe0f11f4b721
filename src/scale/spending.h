// spending: group-sequential boundaries by alpha spending (Lan & DeMets 1983), for a test looked at again
// and again as data are added. Testing every look at the fixed-sample level lets the chance of a false
// decision grow with the looks (about 19% at 10 looks of a 5% test, Pocock 1977); a spending function
// α(t) instead says how much of the family-wise α may be spent by information fraction t (the variance
// at the end of the planned budget over the variance now), and each look gets the two-sided nominal level
// whose crossing probability, given no crossing before, is the increment α(t_k) − α(t_{k−1}), for a
// standardised statistic Z_k = W(t_k)/√t_k of a Brownian motion W (independent increments: the seeds added
// between looks are new draws). Two spending functions of Lan & DeMets's:
//   Pocock type          α(t) = α ln(1 + (e − 1) t): spends evenly, so an early look can decide (for a
//                        budget that is a cap, not a plan); the last look's level is stricter (~0.017 at 5 looks);
//   O'Brien–Fleming type α(t) = 2 − 2Φ(z_{1−α/2}/√t): almost nothing early, the last look close to the
//                        fixed-sample level (for a budget that will be spent).
// Crossing probabilities by numerical integration of W's density over the continuation region, look by
// look (Armitage, McPherson & Rowe 1969; Jennison & Turnbull 2000, ch. 19).
// Not responsible for the statistic itself or for choosing t (scale/sequential.h).
#ifndef SEXTANT_SCALE_SPENDING_H
#define SEXTANT_SCALE_SPENDING_H
#include <stddef.h>
#include "core/status.h"

// α spent by information fraction t in [0, 1] at family-wise level alpha: 0 at t = 0, alpha at t >= 1.
double spending_pocock(double t, double alpha);
double spending_obf(double t, double alpha);
// Nominal two-sided levels of looks at information fractions t (k of them, nondecreasing, in (0, 1]) with
// spent[j] the family-wise alpha spent by look j (nondecreasing: a spending function at t[j], or at 1 for a final
// look, which spends what is left): nominal (k) overwritten. A look that adds no information or spends
// nothing gets level 0. SX_ERR_ARG for t or spent out of range or decreasing, SX_ERR_NOMEM.
sx_status spending_levels(const double *t, const double *spent, size_t k, double *nominal);

#endif
