// rmsnorm: y = x / sqrt(mean(x²) + eps) ⊙ g over rows of length C (g may be NULL: no gain).
// Used for the pre-norms (with gain) and for QK-norm (per head, rows of length hd, no gain).
#ifndef SEXTANT_KERNELS_RMSNORM_H
#define SEXTANT_KERNELS_RMSNORM_H
#include <stdbool.h>
#include <stddef.h>

// x (N,C) -> overwrites y (N,C) and rstd (N) = 1/sqrt(mean(x²)+eps). y may not alias x.
void rmsnorm_forward(size_t N, size_t C, const float *x, const float *g, float eps, float *y, float *rstd);
// dy (N,C) -> dx (N,C): overwritten, or added to when accumulate. dg (C) is accumulated (skipped if NULL).
// Backward of y = g ⊙ x·r: with ŷ = x·r, g̃ = dy ⊙ g: dx = r·(g̃ − ŷ·mean(g̃ ⊙ ŷ)); dg += Σ_rows dy ⊙ ŷ.
// work: rmsnorm_backward_workspace_floats(N, C) floats from the caller, for the partial sums of dg (contents on
// entry do not matter; NULL when dg is NULL), so the kernel allocates nothing and cannot fail.
size_t rmsnorm_backward_workspace_floats(size_t N, size_t C);
void rmsnorm_backward(size_t N, size_t C, const float *x, const float *g, const float *rstd, const float *dy,
                      float *dx, float *dg, bool accumulate, float *work);
void rmsnorm_forward_ref(size_t N, size_t C, const float *x, const float *g, float eps, float *y, float *rstd);
void rmsnorm_backward_ref(size_t N, size_t C, const float *x, const float *g, const float *rstd,
                          const float *dy, float *dx, float *dg, bool accumulate);
#endif
