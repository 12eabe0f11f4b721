// linear: y = x·Wᵀ with W in PyTorch layout (out, in), and its backward, as thin gemm() calls.
#ifndef SEXTANT_MODEL_LINEAR_H
#define SEXTANT_MODEL_LINEAR_H
#include <stdbool.h>
#include <stddef.h>

// x (N,in), W (out,in) -> y (N,out): overwritten, or added to when accumulate.
void linear_forward(size_t N, size_t in, size_t out, const float *x, const float *W, float *y, bool accumulate);
// dW (out,in) += dyᵀ·x. dx (N,in) = dy·W, or += when accumulate_dx; dx may be NULL (not needed).
void linear_backward(size_t N, size_t in, size_t out, const float *x, const float *W, const float *dy, float *dW,
                     float *dx, bool accumulate_dx);
#endif
