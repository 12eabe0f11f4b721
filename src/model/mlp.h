// mlp: one ReLU² / GELU / SwiGLU MLP applied to N rows, y = act(x·W_upᵀ [, x·W_gateᵀ])·W_downᵀ, with its
// backward; and the same MLP with fp8 (e4m3) operands in its products. The building block of the dense FFN
// (src/model/ffn_dense.c), the MoE experts and the shared expert (src/model/ffn_moe.c). Not responsible for
// parameters, routing, or keeping the fp8 scale history (ffn_dense.c).
#ifndef SEXTANT_MLP_H
#define SEXTANT_MLP_H
#include <stdbool.h>
#include <stddef.h>
#include "model/config.h"

// w: {w_gate (F,C), w_up (F,C), w_down (C,F)} for SwiGLU, {w_up, w_down} otherwise.
size_t mlp_tensor_count(mlp_kind k);
// Floats kept from forward to backward (and of backward scratch): N·F·(3 for SwiGLU, else 2).
size_t mlp_saved_floats(mlp_kind k, size_t N, size_t F);
// x (N,C) -> overwrites saved; y (N,C) overwritten, or added to when accumulate. N may be 0.
void mlp_forward(mlp_kind k, size_t N, size_t C, size_t F, const float *x, float *const *w, float *saved, float *y,
                 bool accumulate);
// dy (N,C) -> dx (N,C) overwritten, or added to when accumulate_dx; dw ACCUMULATED. scratch: mlp_saved_floats.
void mlp_backward(mlp_kind k, size_t N, size_t C, size_t F, const float *x, float *const *w, float *const *dw,
                  const float *saved, const float *dy, float *dx, bool accumulate_dx, float *scratch);

// fp8 products (descriptor option `fp8`; ARCH-FEATURES F44): every operand of the three (SwiGLU) or two
// products — the input x, the activation a and each weight — is rounded to e4m3 after a power-of-two scale
// (kernels/fp8.h: y = e4m3(v·s)/s) and the products run on the rounded values through the ordinary fp32 or
// bf16 GEMM (e4m3 values are exact in both). Delayed scaling: an operand's scale comes from the largest amax
// in `history` (MLP_FP8_HISTORY rows of MLP_FP8_ROLES amaxes, the previous steps'), or from its own amax when
// its column is still all zero (the first step). Backward is straight-through: the gradients of the same
// MLP evaluated at the rounded operands (dW = dyᵀ·a_q, dx = dy·W_q), with fp32 gradients.
enum { MLP_FP8_X = 0, MLP_FP8_A, MLP_FP8_W0, MLP_FP8_ROLES = MLP_FP8_W0 + 3 };   // columns: x, a, w[0], w[1], w[2]
#define MLP_FP8_HISTORY 16
// saved: [scales used (ROLES), this forward's amaxes (ROLES), x_q (N,C), the MLP's saved block with a_q as
// its activation]. scratch: the rounded weights and mlp_backward's scratch.
size_t mlp_fp8_saved_floats(mlp_kind k, size_t N, size_t C, size_t F);
size_t mlp_fp8_scratch_floats(mlp_kind k, size_t N, size_t C, size_t F);
// As mlp_forward, with fp8 products. history (MLP_FP8_HISTORY, MLP_FP8_ROLES). The amaxes it saves are those
// of the unscaled operands (for the caller's history).
void mlp_fp8_forward(mlp_kind k, size_t N, size_t C, size_t F, const float *x, float *const *w, const float *history,
                     float *saved, float *y, bool accumulate, float *scratch);
// As mlp_backward, straight-through (see above); x is not needed (x_q is saved).
void mlp_fp8_backward(mlp_kind k, size_t N, size_t C, size_t F, float *const *w, float *const *dw, const float *saved,
                      const float *dy, float *dx, bool accumulate_dx, float *scratch);
#endif
