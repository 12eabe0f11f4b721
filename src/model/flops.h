// flops: exact parameter and training-FLOP accounting from the architecture (not 6·N·D): every matmul
// of the forward pass counted at 2 FLOPs per multiply-add, attention with its real (causal) key count,
// backward = 2× forward. The attention mixer's weights, query·key width and cache row come from its own module
// (block.h), so MLA counts its real down/up projections; MoE counts its active experts (top-k + shared +
// router) as matmul work; sliding-window layers their capped key counts. Not responsible for measuring anything.
#ifndef SEXTANT_FLOPS_H
#define SEXTANT_FLOPS_H
#include <stddef.h>
#include "model/config.h"

typedef struct {
    double params_total;        // every parameter (embedding and head counted once each; tied counts once)
    double params_nonembed;     // without embeddings (token, bigram hash, value) and head
    double params_active;       // used per token (total minus the unchosen experts; equals total for dense)
    double params_matmul;       // weights that multiply activations (hidden matrices + head)
    double fwd_matmul_per_token;    // 2 · params_matmul
    double fwd_attention_per_token; // scores and values, averaged over the T positions of a sequence
    double train_per_token;         // 3 · (matmul + attention) forward
    double kv_cache_bytes_per_token; // fp32 over all layers: K and V (GQA), latent + rope key (MLA)
} model_flops;

// T is the training context length (each position attends to itself and the positions before it).
model_flops model_flops_count(const model_config *c, size_t T);
// Model FLOPs of one decoded position at context length ctx: matmuls 2·active params + attention
// 2·keys·H·(qk + head_dim) per layer (keys capped by the window on local layers).
double model_flops_decode_token(const model_config *c, size_t ctx);

#endif
