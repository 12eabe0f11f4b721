// config: the model's shape and options, parsed from a descriptor string such as "d6-kv2-swiglu"
// (grammar and defaults in docs/MODEL.md). One option table in config.c drives the parser, the list of known
// options in its errors, the JSON and the options listing. Responsible for validation with clear messages;
// not for parameters or computation.
#ifndef SEXTANT_MODEL_CONFIG_H
#define SEXTANT_MODEL_CONFIG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"

typedef enum { MLP_RELU2 = 0, MLP_SWIGLU, MLP_GELU } mlp_kind;
enum { MODEL_MAX_LAYERS = 1000 };  // the deepest model a descriptor may name
enum { DCMHA_MAX_WINDOW = 1024 };   // the largest dcmha<W> window (model/dcmha.h keeps its pointers on the stack)
typedef enum { MIXER_GQA = 0, MIXER_MLA } mixer_kind;

typedef struct {
    char descriptor[128];
    size_t n_layer, width, head_dim, n_head, n_kv_head, ffn_hidden, vocab;
    mlp_kind mlp;
    bool qk_norm, untied;
    double rope_base, rope_frac;
    size_t rope_dim;   // channels rotated per head (even), derived from rope_frac
    float softcap;     // 0 = off
    bool fp8_mlp;           // dense MLP products with e4m3 operands (model/mlp.h)
    size_t bigram_rows;     // bigram hash embedding table rows (0 = off; model/bigram.h)
    size_t bigram_signs;    // its sign patterns (0 = no sign trick)
    bool smear;             // one-token look-back on the input embedding (model/smear.h)
    size_t gnorm_rank;      // GatedNorm after every RMSNorm, of this rank (0 = off; model/gatednorm.h)
    // Attention options (both mixers).
    mixer_kind mixer;
    bool attn_gate;         // sigmoid output gate (per head, or per channel with attn_gate_elem)
    bool attn_gate_elem;    // the gate is elementwise: one per channel of each head (implies attn_gate)
    bool xsa;               // exclusive self attention on each head's output (kernels/xsa.h)
    size_t window;          // sliding window of local layers (0 = every layer global)
    size_t local_every;     // with window: layer i is global when i % local_every == local_every-1 (0 = all local)
    float attn_softcap;     // attention logit soft-cap (0 = off)
    size_t value_embeds;    // value-embedding tables (0 = off; GQA only; model/value_embed.h)
    size_t dc_window;       // DC-MHA window on the last layer (0 = off; GQA only; model/dcmha.h)
    // MLA (mixer == MIXER_MLA): head_dim is the value head dim; rope_dim = mla_rope.
    size_t mla_dc, mla_dcq; // KV latent; query latent (0 = queries straight from h)
    size_t mla_rope, mla_nope; // decoupled RoPE dims (shared key part) and per-head content q/k dims
    bool mla_latent_norm;   // RMSNorm (with gain) on the latents
    // MoE FFN (n_expert > 0).
    size_t n_expert, top_k, expert_hidden, n_shared;
    bool router_sigmoid;    // sigmoid scores (else softmax)
    float aux_coef;         // Switch auxiliary loss coefficient (0 = off)
    bool bias_balance;      // DeepSeek-V3 auxiliary-loss-free selection bias
    float bias_rate;        // its update rate
    bool qb_balance;        // Quantile Balancing: the selection bias from one dual step per training step
} model_config;

// Parses and validates a descriptor. vocab_override > 0 is the vocabulary (the data's): a descriptor that
// names another (-v512 on 2048-token data) is SX_ERR_MISMATCH.
sx_status model_config_parse(const char *descriptor, size_t vocab_override, model_config *out);
const char *mlp_kind_name(mlp_kind k);
// Whether layer `layer` uses the sliding window (false when the config has none).
bool model_config_layer_is_local(const model_config *c, size_t layer);
// The resolved config as a new JSON object (fields in the option table's order; "mla" / "moe" objects only
// for those configs).
json_t *model_config_to_json(const model_config *c);
// The descriptor's options as a Markdown table (option, meaning, default), one row per option of the grammar
// table; docs/MODEL.md quotes it verbatim.
void model_config_print_options(FILE *f);

#endif
