// int8: weight-only int8 with one scale per output channel, for inference. A weight W (out, in) is stored as
// q (out, in) int8 in [−127, 127] and scale (out), W ≈ scale[o]·q[o, i] with scale[o] = max_i |W[o, i]| / 127;
// products take fp32 activations, widen q to fp32 and accumulate in fp32, so the result is x·Ŵᵀ for the
// dequantized Ŵ up to summation order, while reading a quarter of the weight bytes. Not responsible for
// which weights are quantized (model/quant) or for training (there is no backward).
#ifndef SEXTANT_KERNELS_INT8_H
#define SEXTANT_KERNELS_INT8_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Overwrites q (rows, cols) and scale (rows) with W's (rows, cols) per-row quantization: q = round(W / scale)
// (ties away from zero). An all-zero row gets scale 0 and q 0.
void int8_quantize_rows(size_t rows, size_t cols, const float *W, int8_t *q, float *scale);
// Overwrites W (rows, cols) with scale[r]·q[r, c] (W may alias nothing of q or scale).
void int8_dequantize_rows(size_t rows, size_t cols, const int8_t *q, const float *scale, float *W);
// y (N, out) = x (N, in) · (scale ⊙ q)ᵀ, overwritten, or added to when accumulate. Threads with OpenMP
// over the output channels when called outside a parallel region and the product is large.
void int8_linear(size_t N, size_t in, size_t out, const float *x, const int8_t *q, const float *scale, float *y,
                 bool accumulate);
// The specification: the same contract, each dot product accumulated in double.
void int8_linear_ref(size_t N, size_t in, size_t out, const float *x, const int8_t *q, const float *scale, float *y,
                     bool accumulate);
#endif
