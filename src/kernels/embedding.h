// embedding: token lookup and its scatter-add backward.
#ifndef SEXTANT_KERNELS_EMBEDDING_H
#define SEXTANT_KERNELS_EMBEDDING_H
#include <stddef.h>
#include <stdint.h>

// Overwrites x (N,C) with rows E[tok[i]] of E (V,C).
void embedding_forward(size_t N, size_t C, const int32_t *tok, const float *E, float *x);
// Accumulates dE[tok[i]] += dx[i] (dE (V,C)). Threaded without races (work split over channels).
void embedding_backward(size_t N, size_t C, const int32_t *tok, const float *dx, float *dE);
#endif
