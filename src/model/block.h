// block: the one interface every sub-layer variant implements. A transformer layer is
// x += mixer(rmsnorm(x)); x += ffn(rmsnorm(x)), where the mixer (MHA/GQA today, MLA next) and the FFN
// (dense today, MoE next) are block_modules chosen by the config. A module declares its own parameters
// into the model's table, says how much activation memory it keeps, and runs forward and backward; an
// attention mixer also runs its cached decode (inference: new positions against the rows it cached for the
// earlier ones). Adding a variant touches its module file, its row in model.c's table, its test and docs.
#ifndef SEXTANT_BLOCK_H
#define SEXTANT_BLOCK_H
#include <stddef.h>
#include <stdint.h>
#include "model/config.h"
#include "model/params.h"

// The value embedding a GQA layer adds to its values (model/value_embed.h): its table, its gate and each row's
// token. Gradients (training only; NULL in decode) are ACCUMULATED by the mixer's backward.
typedef struct {
    const float *table;       // (V, Hkv·hd)
    const float *gate;        // (Hkv, VALUE_EMBED_GATE_IN)
    float *dtable, *dgate;
    const int32_t *tok;       // (rows) the token of each row
} value_embed_layer;

// The last layer's DC-MHA weights (model/dcmha.h); gradients as for value_embed_layer.
typedef struct {
    const float *w1, *w2;     // (H, C) each
    float *dw1, *dw2;
} dcmha_layer;

typedef struct {
    const model_config *cfg;
    size_t B, T;
    const float *rope_cos, *rope_sin;   // (T, rope_dim/2), NULL when rope_dim == 0
    size_t layer;                       // index of the layer being run
    float grad_scale;                   // backward: weight of the module's own auxiliary loss terms (the
                                        // multiplier of the mean loss that dout already carries)
    const value_embed_layer *ve;        // this layer's value embedding, NULL when it has none
    const dcmha_layer *dc;              // this layer's DC-MHA, NULL when it has none
} block_shape;

// A contiguous run of cached rows of one layer: positions pos0 .. pos0+n-1, row i at rows + i·row_floats.
typedef struct {
    const float *rows;
    size_t pos0, n;
} kv_span;

// Cached decode of n new positions of layer `layer` (rows of possibly different sequences, batched into each
// weight product). The cache itself (infer/kvcache) is the caller's: it hands each row the slot its module
// fills and the spans it may read.
typedef struct {
    const model_config *cfg;
    size_t n, layer;
    const size_t *pos;                 // (n) absolute position of row r in its sequence
    const float *rope_cos, *rope_sin;  // (max_ctx, rope_dim/2) indexed by absolute position; NULL when no RoPE
    size_t max_ctx;                    // positions per sequence (bounds pos; sizes the score scratch)
    float *const *slot;                // (n) row r's cache row in this layer (cache_floats), written by decode
    const kv_span *const *spans;       // (n) the rows row r sees, positions 0..pos[r] in order, its own slot last
    const size_t *n_spans;             // (n)
    const value_embed_layer *ve;       // this layer's value embedding, NULL when it has none
    const dcmha_layer *dc;             // this layer's DC-MHA, NULL when it has none
} decode_shape;

typedef struct {
    const char *name;
    // Appends this module's tensors for layer `layer` to the table (names "l<layer>.<tensor>").
    sx_status (*declare)(const model_config *c, size_t layer, param_table *t);
    // Floats of activations kept per layer from forward to backward, and of temporary scratch (shared).
    size_t (*saved_floats)(const model_config *c, size_t BT);
    size_t (*scratch_floats)(const model_config *c, size_t BT);
    // h (B,T,C) -> ADDS the module's output to out (B,T,C). w: this module's tensors in declaration order.
    void (*forward)(const block_shape *s, float *const *w, const float *h, float *out, float *saved,
                    float *scratch);
    // dout (B,T,C) -> OVERWRITES dh (B,T,C); ACCUMULATES weight gradients into dw (same order as w).
    void (*backward)(const block_shape *s, float *const *w, float *const *dw, const float *h, const float *dout,
                     float *dh, const float *saved, float *scratch);
    // Mixers only (NULL for FFNs, which decode through forward with B = rows, T = 1). qk_dim: channels of one
    // head's query·key product (values have head_dim; FLOP accounting). Cached decode: cache_floats: floats
    // cached per position and layer. decode: h (n,C) -> fills each row's slot, then
    // ADDS the module's output to out (n,C), as forward would at those positions. scratch: decode_scratch_floats.
    size_t (*qk_dim)(const model_config *c);
    size_t (*cache_floats)(const model_config *c);
    size_t (*decode_scratch_floats)(const model_config *c, size_t n, size_t max_ctx);
    void (*decode)(const decode_shape *s, float *const *w, const float *h, float *out, float *scratch);
    // Optional (NULL for modules without them; MoE has them). n_stats: floats of per-layer statistics
    // (tokens per expert). stats: ADDS the last forward's statistics (from its saved block) to acc.
    // aux_loss: the auxiliary loss term of the last forward (its gradient is part of backward).
    // after_step: per-step update of non-gradient state held in the module's tensors w, from the statistics
    // accumulated since the previous step.
    size_t (*n_stats)(const model_config *c);
    void (*stats)(const model_config *c, size_t BT, const float *saved, float *acc);
    double (*aux_loss)(const model_config *c, size_t BT, const float *saved);
    void (*after_step)(const model_config *c, float *const *w, const float *acc);
} block_module;

// Carves consecutive views of sizes[i] floats (each rounded up to a multiple of `align`) from base into
// *dst[i]; with base NULL it only sizes (the views become NULL). Returns the floats used.
static inline size_t block_carve(float *base, const size_t *sizes, float **const *dst, size_t n, size_t align) {
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        *dst[i] = base ? base + off : NULL;
        off += (sizes[i] + align - 1) / align * align;
    }
    return off;
}

extern const block_module attn_gqa_module;   // MHA / GQA / MQA, QK-norm, partial RoPE
extern const block_module attn_mla_module;   // multi-head latent attention (DeepSeek-V2/V3)
extern const block_module ffn_dense_module;  // ReLU², GELU or SwiGLU MLP
extern const block_module ffn_moe_module;    // mixture of experts with top-k routing

#endif
