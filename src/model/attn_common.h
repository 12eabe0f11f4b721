// attn_common: what the attention mixers (GQA, MLA) share: the attention kernel's shape for a layer
// (sliding window per the local/global layer pattern, logit soft-cap) and the per-head sigmoid output gate
// a_{t,h} <- σ(h_t·W_g[h]) · a_{t,h} (W_g (H, C), tensor "l<i>.wg", zero-initialised).
// Not responsible for projections, RoPE or the attention kernel itself.
#ifndef SEXTANT_ATTN_COMMON_H
#define SEXTANT_ATTN_COMMON_H
#include "kernels/attention.h"
#include "model/block.h"

// The kernel shape of layer s->layer: H query heads, Hkv KV heads of dim hd, logit scale.
attn_shape attn_layer_shape(const block_shape *s, size_t H, size_t Hkv, size_t hd, float scale);
// Appends "l<layer>.wg" (H, C) when the config has the gate.
sx_status attn_gate_declare(const model_config *c, size_t layer, param_table *t);
// att (BT,H,hd) -> overwrites gate (BT,H) = σ(h·W_gᵀ) and out (BT,H,hd) = gate ⊙ att. h (BT,C).
void attn_gate_forward(size_t BT, size_t C, size_t H, size_t hd, const float *h, const float *Wg,
                       const float *att, float *gate, float *out);
// dout (BT,H,hd) of the gated output -> overwrites datt (BT,H,hd) and dlogit (BT,H) (the gradient of the gate's
// pre-activation; the caller finishes with linear_backward(BT, C, H, h, W_g, dlogit, dW_g, dh, true)).
void attn_gate_backward(size_t BT, size_t H, size_t hd, const float *att, const float *gate, const float *dout,
                        float *datt, float *dlogit);
#endif
