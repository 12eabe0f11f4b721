// model: the decoder-only transformer. Owns one arena holding parameters and gradients in the table's
// order, the activation memory for a (B, T) shape, and the forward / backward passes that stitch the
// layer modules (block.h), the embedding, the final norm and the fused head + cross-entropy together.
// Not responsible for optimisation, data or files.
#ifndef SEXTANT_MODEL_MODEL_H
#define SEXTANT_MODEL_MODEL_H
#include <stdint.h>
#include "kernels/gemm.h"
#include "kernels/xent.h"
#include "model/block.h"
#include "model/config.h"
#include "model/params.h"

// RMSNorm epsilon of the layer inputs and the final norm (training and decode).
#define MODEL_NORM_EPS 1e-5f

// Gradients final before the backward ends, so that a caller can start sending them (their sum over ranks)
// while the backward goes on. model_grad_stages gives the stages' order; during model_loss_and_grad, with
// m->grad_hook set, ready(ctx, s) is called on the calling thread, between kernels, when stage s is done:
// from then on the gradients of tensors order[0 .. stage_end[s]) get no more writes in this pass.
typedef struct {
    void *ctx;
    void (*ready)(void *ctx, size_t stage);
} model_grad_hook;

typedef struct {
    model_config cfg;
    param_table table;
    const block_module *mixer, *ffn;
    float *params, *grads;      // one arena: table.total floats each, tensors at table.v[i].offset
    float **p, **g;             // per-tensor pointers into params / grads
    size_t emb, head, norm_f;   // tensor indices (head == emb when tied)
    size_t bigram;              // tensor index of the bigram hash table (with cfg.bigram_rows)
    size_t ve, smear, dc;       // tensor indices of the first value-embedding table, smear_gate, dc_w1 (when on)
    size_t gnorm;               // with cfg.gnorm_rank: index of the first GatedNorm tensor; site k (2·layer, +1 for
                                // the MLP's norm; 2L the final norm) has W_down at gnorm + 2k and W_up after it
    size_t *layer_first;        // per layer: index of its attn_norm; then mixer tensors, mlp_norm, ffn tensors
    size_t mixer_tensors, ffn_tensors;
    // Per-layer FFN statistics (tokens per expert for MoE, and QB prices; operand amaxes of fp8 MLPs;
    // n_stats == 0 otherwise), (L, n_stats) each:
    // accumulated over the training forwards since the last model_after_step, and those of the last step.
    size_t n_stats;
    float *stats_acc, *stats_last;
    // Activations for the reserved shape.
    size_t B, T;
    float *acts;
    size_t acts_floats;
    int32_t *tokens;            // (2, B·T): the batch's inputs, then its targets; with the bigram table
                                // (3, B·T) more: each input's previous token, bigram row and sign pattern;
                                // then the extra targets (B·T, n_extra)
    size_t work_threads;        // threads the kernels' workspaces are sized for (at model_reserve)
    float *work;                // the kernels' workspace (block_shape.work), work_floats floats
    size_t work_floats;
    gemm_workspace gemm_work;   // GEMM's packing workspace, bound to the thread for the passes
    void *head_panels;          // the head's weight packed for the logits, then for dh (head_panel_bytes each)
    size_t head_panel_bytes[2];
    // Extra cross-entropy targets of training batches (model_set_extra_targets): mtp future offsets, then the
    // prefix of each target (prefix: (vocab) map, borrowed); their weights for the next steps, and the mean
    // weighted extra loss of the last model_loss_and_grad.
    size_t mtp, n_extra;
    const int32_t *prefix;
    float extra_w[XENT_MAX_EXTRA];
    double extra_loss;
    const model_grad_hook *grad_hook;   // NULL (default): nothing is told
    // With int8 weights (model_quantize_int8, model/quant.h): the int8 copies of the weight matrices in the
    // table's order, a scale per row, and their size in bytes; NULL and 0 otherwise.
    int8_t *q8;
    float *q8_scale;
    size_t q8_bytes;
} model;

// The attention mixer module of a config (model.c's table).
const block_module *model_mixer_of(const model_config *c);
// The model's tensors without their memory: the configuration, modules and parameter table (enough for
// model_param_count and model_memory_bytes, for a model of any size); free with model_free.
sx_status model_declare(model *m, const model_config *cfg);
// model_declare, then the parameters and gradients (zero) and the modules' statistics.
sx_status model_init(model *m, const model_config *cfg);
void model_free(model *m);
// Parameters from the table's init column (deterministic for a seed).
void model_init_weights(model *m, uint64_t seed);
// Per tensor from (seed, tensor name): variants that share a tensor start it alike (param_table_init_by_name).
void model_init_weights_by_name(model *m, uint64_t seed);
// After either: the matrices the table starts at zero drawn at fan-in scale instead (param_table_init_zero_matrices),
// for the hyperball optimizers.
void model_init_zero_matrices(model *m, uint64_t seed);
// GatedNorm of site k (see gnorm above) on a norm's output h (n, C), in place, with the forward's saved
// block (gatednorm_saved_floats(n)) and scratch (gatednorm_scratch_floats(n)); does nothing without gnorm<R>.
void model_gate_norm(const model *m, size_t k, size_t n, float *h, float *saved, float *scratch);
// Layer l's model-level add-ons to its mixer (value embedding, DC-MHA), the one place that knows which layer
// has which: points the add-on fields of bs and/or ds (either may be NULL) at buf's records, or at NULL where
// the layer has none. tok: the rows' tokens (value embeddings read them); with_grads: the records carry the
// gradient buffers (training backward), else none (forward, decode). A new add-on adds a record to
// layer_addons and a line here; the training passes and the decoder need no edit.
typedef struct { value_embed_layer ve; dcmha_layer dc; } layer_addons;
void model_layer_addons(const model *m, size_t l, const int32_t *tok, bool with_grads, layer_addons *buf,
                        block_shape *bs, decode_shape *ds);
// The shapes model_reserve takes: the sizes of its blocks are computed for at most these (far beyond what any
// machine holds, and far from size_t's limit).
#define MODEL_MAX_SEQ (1 << 24)
#define MODEL_MAX_TOKENS (1 << 28)
// Allocates activation memory for batches of B sequences of T tokens (linear in T): everything the passes
// below need, so that they allocate nothing and cannot fail.
sx_status model_reserve(model *m, size_t B, size_t T);
// Bytes of GEMM packing workspace for every product of a pass over `rows` rows (training: B·T; decode: the
// rows of a call) on `threads` threads; SIZE_MAX if too large.
size_t model_gemm_work_bytes(const model *m, size_t rows, size_t threads);
// tokens (B, T+1): inputs tokens[:, :T], targets tokens[:, 1:]. *loss receives the mean cross-entropy (after
// model_reserve). A kernel that could not get its scratch makes the status SX_ERR_NOMEM (with what failed),
// so a non-finite *loss with SX_OK is numerical, never an allocation failure.
// If logits_out is non-NULL it receives the scored logits z (B, T, V).
sx_status model_loss(model *m, const int32_t *tokens, float *logits_out, double *loss);
// Forward + backward: ACCUMULATES grad_scale · ∂(mean loss + aux loss + extra loss)/∂θ into m->grads, where
// aux is the MoE auxiliary balance loss (0 for other models; see model_aux_loss) and extra the weighted
// cross-entropy of the extra targets (model_set_extra_targets; see model_extra_loss). Returns the mean
// next-token cross-entropy only.
// Adds this batch's per-layer statistics (tokens per expert) to the step's accumulator.
double model_loss_and_grad(model *m, const int32_t *tokens, float grad_scale);
// The auxiliary loss of the last forward (model_loss or model_loss_and_grad), summed over layers; 0 if none.
double model_aux_loss(const model *m);
// Extra cross-entropy targets scored on each position's logits by model_loss_and_grad (never by model_loss:
// validation stays the next-token loss): the tokens mtp = 0.. offsets further ahead (parameter-free
// multi-token prediction) and, with prefix non-NULL, prefix[target] (the prefix-token auxiliary loss; a
// (vocab) map, −1 = none, borrowed until model_free). Call before model_reserve. Weights start at zero.
sx_status model_set_extra_targets(model *m, size_t mtp, const int32_t *prefix);
// The extras' weights from now on: w[k−1] for offset k, then the prefix's (m->n_extra values). While all are
// zero model_loss_and_grad does exactly what it does without extras.
void model_set_extra_weights(model *m, const float *w);
// Mean over the batch's positions of Σ_k w_k·(lse − z[extra target k]) in the last model_loss_and_grad.
double model_extra_loss(const model *m);
// Call once after each optimizer step: applies per-step module updates (MoE selection-bias balancing, the fp8
// amax history), moves the accumulated statistics to "last step" and clears the accumulator. No-op for models
// without statistics.
void model_after_step(model *m);
// Per-layer statistics of the last completed step as a new JSON object, or NULL when the model has none:
// {"moe_load": [[fraction of routed tokens per expert] per layer], "moe_max_load": [max/mean per layer]}.
json_t *model_moe_stats_json(const model *m);
void model_zero_grad(model *m);
// The backward's stages (model_grad_hook): fills order (m->table.n tensor indices, each once) and stage_end
// (MODEL_GRAD_STAGES(m) cumulative counts; the last is m->table.n). Stage 0: the untied head, final norm and
// its GatedNorm; then one stage per layer, last layer first (its tensors and GatedNorms); last, the tensors
// every layer may write (embeddings, value embeddings, smear, DC-MHA), final only when the backward ends.
#define MODEL_GRAD_STAGES(m) ((m)->cfg.n_layer + 2)
void model_grad_stages(const model *m, size_t *order, size_t *stage_end);
// Optimizer view of the tensors: refs has m->table.n entries (allocated by the caller).
void model_param_refs(const model *m, param_ref *refs);
// Parameter counts: all tensors, and without the embeddings (token, bigram, value) and (untied) head. For MoE the active count
// (parameters used per token) is in model/flops.h.
size_t model_param_count(const model *m);
size_t model_param_count_nonembed(const model *m);
// Bytes of parameters + gradients, and of activations and the kernels' workspaces (GEMM's packing included)
// that model_reserve(m, B, T) would allocate, into *bytes, allocating nothing: m needs only model_declare.
sx_status model_memory_bytes(const model *m, size_t B, size_t T, size_t *bytes);

#endif
