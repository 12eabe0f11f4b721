// config: the model's shape and options, parsed from a descriptor string such as "d6-kv2-swiglu"
// (grammar and defaults in docs/MODEL.md). Responsible for validation with clear messages; not for
// parameters or computation.
#ifndef SEXTANT_CONFIG_H
#define SEXTANT_CONFIG_H
#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include "core/status.h"

typedef enum { MLP_RELU2 = 0, MLP_SWIGLU, MLP_GELU } mlp_kind;

typedef struct {
    char descriptor[128];
    size_t n_layer, width, head_dim, n_head, n_kv_head, ffn_hidden, vocab;
    mlp_kind mlp;
    bool qk_norm, untied;
    double rope_base, rope_frac;
    size_t rope_dim;   // channels rotated per head (even), derived from rope_frac
    float softcap;     // 0 = off
} model_config;

// Parses and validates a descriptor. vocab_override > 0 replaces the descriptor's vocabulary (the data's).
sx_status model_config_parse(const char *descriptor, size_t vocab_override, model_config *out);
const char *mlp_kind_name(mlp_kind k);
json_t *model_config_to_json(const model_config *c);

#endif
