// linear: y = x·Wᵀ with W in PyTorch layout (out, in), and its backward, as thin gemm() calls. For inference
// a weight can have an int8 copy registered (model/quant): linear_forward then computes from it instead
// (kernels/int8); and a thread can bind weights packed once for the GEMM (a decoder's): linear_forward then
// reads their panels instead of packing W again. Nothing is registered or bound in training, where each
// lookup is one test of a count or a pointer.
#ifndef SEXTANT_MODEL_LINEAR_H
#define SEXTANT_MODEL_LINEAR_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/status.h"
#include "kernels/gemm.h"

// x (N,in), W (out,in) -> y (N,out): overwritten, or added to when accumulate.
void linear_forward(size_t N, size_t in, size_t out, const float *x, const float *W, float *y, bool accumulate);
// From now on linear_forward with weight W uses q (out, in) and scale (out) (kernels/int8.h), borrowed until
// linear_forget_int8(W). Process-wide, like the GEMM precision; register before threads start using W.
sx_status linear_use_int8(const float *W, const int8_t *q, const float *scale);
void linear_forget_int8(const float *W);
// Weights packed once (gemm_pack_b of op(B) = Wᵀ: trans_b, K = in, N = out, B = W), n of them.
typedef struct {
    const gemm_packed_b *v;
    size_t n;
} linear_packed_set;
// Makes s (NULL: none) the calling thread's packed weights: linear_forward with a W packed there at its (in,
// out) reads the panels (products equal bit for bit to packing W again; an int8 copy still comes first).
// Returns the set bound before, for the caller to restore. s and its panels must stay valid while bound, and
// the weights unchanged.
const linear_packed_set *linear_bind_packed(const linear_packed_set *s);
// dW (out,in) += dyᵀ·x. dx (N,in) = dy·W, or += when accumulate_dx; dx may be NULL (not needed).
void linear_backward(size_t N, size_t in, size_t out, const float *x, const float *W, const float *dy, float *dW,
                     float *dx, bool accumulate_dx);
#endif
