// calibration: how well a verifier's scores rank and how honest they are as probabilities. AUROC: the
// probability that a random positive scores above a random negative (ties count one half), computed from
// ranks (Mann–Whitney) in O(n log n). ECE: expected calibration error over equal-width bins of the score,
// Σ_b (n_b/n)·|mean score_b − mean label_b|, labels may be soft (Monte-Carlo step values).
// Not responsible for producing the scores.
#ifndef SEXTANT_INFER_CALIBRATION_H
#define SEXTANT_INFER_CALIBRATION_H
#include <stdbool.h>
#include <stddef.h>

// AUROC of score against positive (n); NaN when either class is empty (or out of memory).
double calib_auroc(const double *score, const bool *positive, size_t n);
// ECE with `bins` equal-width bins on [0, 1] (scores outside are clamped); NaN when n == 0.
double calib_ece(const double *score, const double *label, size_t n, size_t bins);

#endif
