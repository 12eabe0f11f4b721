// hf_export: models that leave sextant and come back. A checkpoint of the dense Llama-like family (RMSNorm,
// RoPE over whole heads, MHA/GQA/MQA, SwiGLU or a non-gated ReLU² / GELU MLP, tied or untied head) is
// written as safetensors with Hugging Face Llama tensor names plus an HF-style config.json; the same files
// (or any Llama-style safetensors + config.json within the family) are read back into a weights-only
// checkpoint, bit for bit (F32; BF16 files are widened exactly). Variants with no Llama equivalent (MLA,
// MoE, QK-norm, partial RoPE, soft-caps, sliding windows, attention gates) are refused with a message
// naming the option. Name mapping and config fields: docs/FORMATS.md. Not responsible for the containers
// (core/safetensors.h, core/tensorfile.h).
#ifndef SEXTANT_TRAIN_HF_EXPORT_H
#define SEXTANT_TRAIN_HF_EXPORT_H
#include <stddef.h>
#include <jansson.h>
#include "core/status.h"
#include "model/config.h"

// SX_OK when the config can be written as a Llama-style model; otherwise SX_ERR_ARG naming what cannot.
sx_status hf_check(const model_config *c);
// The Hugging Face name of a sextant parameter ("l3.wq" -> "model.layers.3.self_attn.q_proj.weight").
sx_status hf_name(const char *sextant_name, char *out, size_t cap);
// The HF-style config.json of a config that passes hf_check (new reference). context: max positions.
json_t *hf_config(const model_config *c, size_t context);
// The sextant descriptor of an HF-style config.json (within the family; SX_ERR_ARG otherwise).
sx_status hf_descriptor(json_t *hf_config, char *out, size_t cap);

// checkpoint -> out (safetensors) and config_path (config.json). context: max_position_embeddings.
sx_status hf_export(const char *checkpoint, const char *out, const char *config_path, size_t context);
// in (safetensors) + config_path (config.json; the descriptor sextant stored in the file's metadata wins
// when present) -> a weights-only checkpoint at out.
sx_status hf_import(const char *in, const char *config_path, const char *out);

#endif
