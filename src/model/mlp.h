// mlp: one ReLU² / GELU / SwiGLU MLP applied to N rows, y = act(x·W_upᵀ [, x·W_gateᵀ])·W_downᵀ, with its
// backward. The building block of the MoE experts and the shared expert (src/model/ffn_moe.c). Not
// responsible for parameters or routing.
#ifndef SEXTANT_MODEL_MLP_H
#define SEXTANT_MODEL_MLP_H
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
#endif
