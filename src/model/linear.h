// linear: y = x·Wᵀ with W in PyTorch layout (out, in), and its backward, as thin gemm() calls. For inference
// a weight can have an int8 copy registered (model/quant): linear_forward then computes from it instead
// (kernels/int8). Nothing is registered in training, where the lookup is one test of a count.
#ifndef SEXTANT_MODEL_LINEAR_H
#define SEXTANT_MODEL_LINEAR_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/status.h"

// x (N,in), W (out,in) -> y (N,out): overwritten, or added to when accumulate.
void linear_forward(size_t N, size_t in, size_t out, const float *x, const float *W, float *y, bool accumulate);
// From now on linear_forward with weight W uses q (out, in) and scale (out) (kernels/int8.h), borrowed until
// linear_forget_int8(W). Process-wide, like the GEMM precision; register before threads start using W.
sx_status linear_use_int8(const float *W, const int8_t *q, const float *scale);
void linear_forget_int8(const float *W);
// dW (out,in) += dyᵀ·x. dx (N,in) = dy·W, or += when accumulate_dx; dx may be NULL (not needed).
void linear_backward(size_t N, size_t in, size_t out, const float *x, const float *W, const float *dy, float *dW,
                     float *dx, bool accumulate_dx);
#endif
