// rope: rotary position embedding on the first rot_dim channels of each head, half-split pairing
// (channel j pairs with j + rot_dim/2, as in Llama/HF), positions 0..T-1 within each sequence.
// Angle for pair j at position t: t·base^(−2j/rot_dim). Channels rot_dim..hd-1 pass through.
#ifndef SEXTANT_KERNELS_ROPE_H
#define SEXTANT_KERNELS_ROPE_H
#include <stddef.h>

// Overwrites cos, sin (T, rot_dim/2). rot_dim is even, 0 < rot_dim <= hd.
void rope_tables(size_t T, size_t rot_dim, double base, float *cos_t, float *sin_t);
// x (B,T,n_heads,hd) rotated in place: y_j = x_j cos − x_{j+h} sin; y_{j+h} = x_j sin + x_{j+h} cos.
void rope_forward(size_t B, size_t T, size_t n_heads, size_t hd, size_t rot_dim, const float *cos_t,
                  const float *sin_t, float *x);
// The rotation is orthogonal: dx = R(−θ)·dy, in place on d (B,T,n_heads,hd).
void rope_backward(size_t B, size_t T, size_t n_heads, size_t hd, size_t rot_dim, const float *cos_t,
                   const float *sin_t, float *d);
void rope_forward_ref(size_t B, size_t T, size_t n_heads, size_t hd, size_t rot_dim, double base, float *x);
#endif
