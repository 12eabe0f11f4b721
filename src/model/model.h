// model: the decoder-only transformer. Owns one arena holding parameters and gradients in the table's
// order, the activation memory for a (B, T) shape, and the forward / backward passes that stitch the
// layer modules (block.h), the embedding, the final norm and the fused head + cross-entropy together.
// Not responsible for optimisation, data or files.
#ifndef SEXTANT_MODEL_H
#define SEXTANT_MODEL_H
#include <stdint.h>
#include "model/block.h"
#include "model/config.h"
#include "model/params.h"
#include "optim/optimizer.h"

typedef struct {
    model_config cfg;
    param_table table;
    const block_module *mixer, *ffn;
    float *params, *grads;      // one arena: table.total floats each, tensors at table.v[i].offset
    float **p, **g;             // per-tensor pointers into params / grads
    size_t emb, head, norm_f;   // tensor indices (head == emb when tied)
    size_t *layer_first;        // per layer: index of its attn_norm; then mixer tensors, mlp_norm, ffn tensors
    size_t mixer_tensors, ffn_tensors;
    // Activations for the reserved shape.
    size_t B, T;
    float *acts;
    size_t acts_floats;
} model;

sx_status model_init(model *m, const model_config *cfg);
void model_free(model *m);
// Parameters from the table's init column (deterministic for a seed).
void model_init_weights(model *m, uint64_t seed);
// Allocates activation memory for batches of B sequences of T tokens (linear in T).
sx_status model_reserve(model *m, size_t B, size_t T);
// tokens (B, T+1): inputs tokens[:, :T], targets tokens[:, 1:]. Returns the mean cross-entropy.
// If logits_out is non-NULL it receives the scored logits z (B, T, V).
double model_loss(model *m, const int32_t *tokens, float *logits_out);
// Forward + backward: ACCUMULATES grad_scale · ∂(mean loss)/∂θ into m->grads. Returns the mean loss.
double model_loss_and_grad(model *m, const int32_t *tokens, float grad_scale);
void model_zero_grad(model *m);
// Optimizer view of the tensors: refs has m->table.n entries (allocated by the caller).
void model_param_refs(const model *m, param_ref *refs);
// Parameter counts: all tensors, and without the embedding and (untied) head.
size_t model_param_count(const model *m);
size_t model_param_count_nonembed(const model *m);
// Bytes of parameters + gradients, and of activations for the reserved shape.
size_t model_arena_bytes(const model *m);

#endif
