// attn_common: what the attention mixers (GQA, MLA) share: the attention kernel's shape for a layer
// (sliding window per the local/global layer pattern, logit soft-cap) and the sigmoid output gate
// a_{t,j} <- σ(h_t·W_g[j]) · a_{t,j}, one gate j per head (`gate`: W_g (H, C)) or per channel of each head
// (`egate`: W_g (H·hd, C)); tensor "l<i>.wg", zero-initialised.
// For cached decode: attention of new positions against the cache rows (the same scores, window and soft-cap
// as the training kernel, one query at a time) and RoPE at absolute positions.
// Not responsible for projections, what a cache row holds, or the training attention kernel itself.
#ifndef SEXTANT_MODEL_ATTN_COMMON_H
#define SEXTANT_MODEL_ATTN_COMMON_H
#include "kernels/attention.h"
#include "model/block.h"

// The kernel shape of layer s->layer: H query heads, Hkv KV heads of dim hd, logit scale.
attn_shape attn_layer_shape(const block_shape *s, size_t H, size_t Hkv, size_t hd, float scale);
// Floats of workspace (block_shape.work) the attention kernels need for shape (B, T) on `threads` threads,
// forward or backward, in any layer.
size_t attn_kernel_work_floats(const model_config *c, size_t B, size_t T, size_t threads, size_t H, size_t Hkv,
                               size_t hd);
// Gates per token: 0 without a gate, H per head, H·hd elementwise (hd: the value head dim).
size_t attn_gate_count(const model_config *c);
// Appends "l<layer>.wg" (attn_gate_count, C) when the config has a gate.
sx_status attn_gate_declare(const model_config *c, size_t layer, param_table *t);
// G = attn_gate_count gates per row, each over span = H·hd/G consecutive channels of att (BT,H·hd) ->
// overwrites gate (BT,G) = σ(h·W_gᵀ) and out (BT,H·hd) = gate ⊙ att (each gate times its span). h (BT,C).
void attn_gate_forward(size_t BT, size_t C, size_t G, size_t span, const float *h, const float *Wg,
                       const float *att, float *gate, float *out);
// dout (BT,H·hd) of the gated output -> overwrites datt (BT,H·hd) and dlogit (BT,G) (the gradient of the gate's
// pre-activation; the caller finishes with linear_backward(BT, C, G, h, W_g, dlogit, dW_g, dh, true)).
void attn_gate_backward(size_t BT, size_t G, size_t span, const float *att, const float *gate, const float *dout,
                        float *datt, float *dlogit);

// Cached decode. Each of the s->n rows' H query heads (q (n, H, qd)) attends to the cache rows it sees
// (s->spans; row_floats per row): query head h reads KV group g = h / (H/Hkv), whose key is the qd floats at
// g·qd of a row and whose value the vd floats at v0 + g·vd. Scores scaled by `scale`, then the layer's window
// and soft-cap as in training. Overwrites out (n, H, vd); scores: (n·H, s->max_ctx) scratch.
void attn_cached_forward(const decode_shape *s, size_t H, size_t Hkv, size_t row_floats, size_t qd, size_t vd,
                         size_t v0, float scale, const float *q, float *scores, float *out);
// RoPE on the first `rot` channels of each of `heads` vectors of dim `dim` in x, at absolute position pos.
void attn_rope_at(const decode_shape *s, size_t heads, size_t dim, size_t rot, size_t pos, float *x);
#endif
