// value_embed: value embeddings (modded-nanogpt #14/#15, gated as in #55; ARCH-FEATURES F19). N token-indexed
// tables E_k (V, Hkv·hd), tensors "ve<k>"; table k feeds layers k and L−N+k (the U pattern: a table is shared by
// an early and a late layer). At such a layer, with e = E_k[x_t] viewed as Hkv heads of hd:
//   v_{t,g} ← v_{t,g} + γ_{t,g}·e_g,   γ_{t,g} = 2·σ(w_g · [h_t[0:6]; e[0:6]])
// h_t is the mixer's input (the normed residual) and w (Hkv, 12) the layer's rows of "ve_gate" (2N·Hkv, 12),
// zero-initialised, so γ starts at 1. Tables start at 0.01·N(0,1), group embed; the gate is group gain.
// Not responsible for the values themselves or for caching them (the GQA mixer adds e before it caches v).
#ifndef SEXTANT_VALUE_EMBED_H
#define SEXTANT_VALUE_EMBED_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/status.h"
#include "model/block.h"

enum { VALUE_EMBED_GATE_HALF = 6, VALUE_EMBED_GATE_IN = 2 * VALUE_EMBED_GATE_HALF };

// Appends "ve0" … "ve<N−1>" (V, Hkv·hd) and "ve_gate" (2N·Hkv, 12) when the config has value embeddings.
sx_status value_embed_declare(const model_config *c, param_table *t);
// Layer `layer`'s value embedding: its table and gate rows among the tensors p (gradients g, NULL in decode)
// whose value-embedding tensors start at index `first`, and the rows' tokens. False when the layer has none.
bool value_embed_at(const model_config *c, size_t layer, float *const *p, float *const *g, size_t first,
                    const int32_t *tok, value_embed_layer *out);
// h (N,C) the mixer's input -> v (N, Hkv·hd) += γ ⊙ E[tok] (ACCUMULATES into v).
void value_embed_forward(const model_config *c, size_t N, const value_embed_layer *ve, const float *h, float *v);
// dv (N, Hkv·hd): gradient of v after the addition (the projection that made v receives it unchanged).
// ACCUMULATES into ve->dtable, ve->dgate and dh (N,C). scratch: value_embed_scratch_floats.
void value_embed_backward(const model_config *c, size_t N, const value_embed_layer *ve, const float *h,
                          const float *dv, float *dh, float *scratch);
size_t value_embed_scratch_floats(const model_config *c, size_t N);
// Floats in the tables (embedding parameters: a lookup, no matmul).
size_t value_embed_table_floats(const model_config *c);
#endif
