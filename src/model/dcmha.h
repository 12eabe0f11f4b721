// dcmha: lightweight dynamically-composable multi-head attention on the last layer (DCFormer's post-softmax
// cross-head composition, as modded-nanogpt keeps it; ARCH-FEATURES F16), option dcmha<W>, GQA only. At the
// last layer, per query t and on the same q and k as the layer's attention (after QK-norm and RoPE):
//   P_h(s) = softmax over s in [t−W+1, t] of q_{t,h}·k_{s,g(h)}/sqrt(hd)   a second, local map per head
//   [u1; u2] = [h_t·dc_w1ᵀ; h_t·dc_w2ᵀ] (H each), w1 = u1/sqrt(mean_h(u1²) + 1e-6), w2 = u2
//   a(s) = Σ_h w1_h·P_h(s)                                              the heads' maps mixed into one
//   o_{t,h} += w2_h·Σ_s a(s)·v_{s,g(h)}                                 applied to each head's values
// o is the attention output, before XSA and the gate; h the mixer's normed input; g(h) the KV head of query
// head h. dc_w1 (H, C) starts N(0, 1/C) and dc_w2 (H, C) at zero, so the layer starts as plain attention.
// Not responsible for the layer's own attention or for what a cache row holds (it reads the GQA rows).
#ifndef SEXTANT_DCMHA_H
#define SEXTANT_DCMHA_H
#include <stdbool.h>
#include <stddef.h>
#include "core/status.h"
#include "model/block.h"

// Appends "dc_w1" and "dc_w2" (H, C) when the config has dcmha<W>.
sx_status dcmha_declare(const model_config *c, param_table *t);
// Layer `layer`'s weights among the tensors p (gradients g, NULL in decode) starting at index `first`, when it
// is the last layer of a dcmha<W> model; false otherwise.
bool dcmha_at(const model_config *c, size_t layer, float *const *p, float *const *g, size_t first, dcmha_layer *out);
// u (2, N, H) = [h·dc_w1ᵀ; h·dc_w2ᵀ] for the N rows of h (N, C).
void dcmha_mix_weights(const model_config *c, size_t N, const dcmha_layer *dc, const float *h, float *u);
// One query row: q (H·hd), the n ≤ W window keys and values as pointers to KV rows (oldest first, the row's own
// last; head g at g·hd), its mixing weights u1, u2 (H each) -> o (H·hd) += the composed output. P: H·n and
// a: n floats of scratch (left holding the maps and the mixed map).
void dcmha_row(const model_config *c, size_t n, const float *q, const float *const *k, const float *const *v,
               const float *u1, const float *u2, float *P, float *a, float *o);
// Training: q (BT, H·hd), k, v (BT, Hkv·hd) of B sequences of T; u from dcmha_mix_weights -> o (BT, H·hd) +=.
void dcmha_forward(const model_config *c, size_t B, size_t T, const float *q, const float *k, const float *v,
                   const float *u, float *o, float *scratch);
// dout (BT, H·hd): gradient of o -> ACCUMULATES into dq, dk, dv and the weight gradients; leaves the gradient
// of u, du (2, BT, H), at the start of scratch for dcmha_backward_input (the caller's dh is not ready yet).
void dcmha_backward(const model_config *c, size_t B, size_t T, const dcmha_layer *dc, const float *h,
                    const float *q, const float *k, const float *v, const float *u, const float *dout, float *dq,
                    float *dk, float *dv, float *scratch);
// dh (N, C) += du1·dc_w1 + du2·dc_w2, du from dcmha_backward's scratch.
void dcmha_backward_input(const model_config *c, size_t N, const dcmha_layer *dc, const float *scratch, float *dh);
// Scratch floats of dcmha_forward / dcmha_backward for BT rows (0 without dcmha), and of one decoded row.
size_t dcmha_scratch_floats(const model_config *c, size_t BT);
size_t dcmha_row_scratch_floats(const model_config *c);
#endif
