// attention_small: attention.c's fp32 work at head dimension 8 or 16, fused, on AVX-512 (internal to
// src/kernels/attention*.c). At these sizes the tiled kernels' products have K = hd and their tiles go
// through memory between five products, transposes and the softmax passes: attention took ~23% of a
// one-thread d2-hd8-w64 step for ~7% of its FLOPs. Here one vector holds 16 queries (forward) or 16 keys
// (backward); each pair's dot products, exponential and updates run in registers, with K, V, Q and dO rows
// read as broadcasts where they lie. Same tasks as attention.c (so the same thread independence), no
// soft-cap (attention.c keeps it).
#ifndef SEXTANT_KERNELS_ATTENTION_SMALL_H
#define SEXTANT_KERNELS_ATTENTION_SMALL_H
#include <stdbool.h>
#include <stddef.h>

#include "kernels/attention.h"

// Whether s runs here: hd 8 or 16, no soft-cap, fp32 products, a CPU with AVX-512 (the caller decides fp32).
bool attn_small_applies(const attn_shape *s);

// Floats of scratch one call below needs (each thread its own).
size_t attn_small_scratch_floats(const attn_shape *s);

// Forward of queries q0..q0+nq−1 of the G query heads that read KV head kvh of sequence b: overwrites those
// rows of out and lse (attention_forward's contract).
void attn_small_forward(const attn_shape *s, const float *q, const float *k, const float *v, float *out, float *lse,
                        size_t b, size_t kvh, size_t q0, size_t nq, float *scratch);

// Keys per backward call (one vector).
enum { ATTN_SMALL_KEYS = 16 };

// Backward of keys k0..k0+nk−1 (nk <= ATTN_SMALL_KEYS) of KV head kvh of sequence b against every query of its G heads
// that sees them: overwrites those rows of dk and dv, adds into dq. D (G, T) holds rowsum(dout ⊙ out) of each
// query row of the group's heads.
void attn_small_backward(const attn_shape *s, const float *q, const float *k, const float *v, const float *lse,
                         const float *dout, const float *D, float *dq, float *dk, float *dv, size_t b, size_t kvh,
                         size_t k0, size_t nk, float *scratch);
#endif
