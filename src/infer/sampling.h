// sampling: turns one row of logits into a token: greedy (temperature 0) or temperature-scaled softmax
// restricted to the top-k tokens and to the smallest set whose probability reaches top-p, drawn from a
// seeded generator. Not responsible for running the model or for stop conditions (infer/generate).
#ifndef SEXTANT_INFER_SAMPLING_H
#define SEXTANT_INFER_SAMPLING_H
#include <stddef.h>
#include <stdint.h>
#include "core/rng.h"

typedef struct {
    double temperature;   // 0: greedy (argmax, ties to the lower id)
    size_t top_k;         // 0: all tokens
    double top_p;         // 1: off
} sampler_config;

// The filtered distribution: overwrites probs (V) with the probabilities sampling draws from (zeros outside
// the kept set; for temperature 0 a one-hot on the argmax). Kept set: tokens by decreasing probability (ties to
// the lower id), at most top_k, stopping once their mass reaches top_p. scratch: V·SAMPLER_SCRATCH_BYTES bytes.
#define SAMPLER_SCRATCH_BYTES 16
void sampler_probs(const sampler_config *c, const float *logits, size_t V, double *probs, void *scratch);
// The token a uniform draw u in [0, 1) picks from probs (V, summing to 1): the first whose cumulative sum
// exceeds u, or, when rounding leaves u above the last sum, the last token with probability > 0.
int32_t sampler_pick(const double *probs, size_t V, double u);
// Draws a token from logits (V) with one uniform draw from rng (none for greedy).
int32_t sampler_draw(const sampler_config *c, const float *logits, size_t V, rng_state *rng);
// Index of the largest logit (ties to the lower index).
int32_t sampler_argmax(const float *logits, size_t V);

#endif
