// hf_export: see hf_export.h.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/status.h"
#include "core/fsutil.h"
#include "core/safetensors.h"
#include "model/model.h"
#include "train/checkpoint.h"
#include "train/hf_export.h"

sx_status hf_check(const model_config *c) {
    const char *why = c->mixer == MIXER_MLA ? "multi-head latent attention (mla)"
                      : c->n_expert        ? "a mixture-of-experts FFN (moe)"
                      : c->qk_norm         ? "QK-norm (qknorm)"
                      : c->rope_dim != c->head_dim ? "partial RoPE (ropefrac)"
                      : c->softcap > 0     ? "a logit soft-cap (softcap)"
                      : c->attn_softcap > 0 ? "an attention logit soft-cap (attcap)"
                      : c->window          ? "sliding-window attention (swa)"
                      : c->attn_gate       ? "an attention output gate (gate, egate)"
                      : c->xsa             ? "exclusive self attention (xsa)"
                      : c->bigram_rows     ? "a bigram hash embedding (bigram)"
                      : c->value_embeds    ? "value embeddings (ve)"
                      : c->smear           ? "a smeared input embedding (smear)"
                      : c->dc_window       ? "DC-MHA on the last layer (dcmha)"
                      : c->fp8_mlp         ? "fp8 (e4m3) MLP products (fp8)"
                      : c->gnorm_rank      ? "GatedNorm (gnorm)"
                                           : NULL;
    if (why)
        return sx_fail(SX_ERR_ARG, "model %s has %s, which a Llama-style model cannot express; export covers the dense "
                       "family (RMSNorm, RoPE, MHA/GQA/MQA, swiglu/relu2/gelu MLP)", c->descriptor, why);
    return SX_OK;
}

// sextant suffix -> HF suffix, per layer and global.
static const struct { const char *sx, *hf; } layer_names[] = {
    {"attn_norm", "input_layernorm"}, {"wq", "self_attn.q_proj"}, {"wk", "self_attn.k_proj"}, {"wv", "self_attn.v_proj"},
    {"wo", "self_attn.o_proj"}, {"mlp_norm", "post_attention_layernorm"}, {"w_gate", "mlp.gate_proj"},
    {"w_up", "mlp.up_proj"}, {"w_down", "mlp.down_proj"},
};
static const struct { const char *sx, *hf; } global_names[] = {
    {"emb", "model.embed_tokens.weight"}, {"norm_f", "model.norm.weight"}, {"head", "lm_head.weight"},
};

sx_status hf_name(const char *name, char *out, size_t cap) {
    for (size_t i = 0; i < sizeof global_names / sizeof *global_names; i++)
        if (!strcmp(name, global_names[i].sx)) return snprintf(out, cap, "%s", global_names[i].hf) < (int)cap ? SX_OK : SX_ERR_ARG;
    unsigned long layer;
    int used = 0;
    if (sscanf(name, "l%lu.%n", &layer, &used) == 1 && used > 0)
        for (size_t i = 0; i < sizeof layer_names / sizeof *layer_names; i++)
            if (!strcmp(name + used, layer_names[i].sx))
                return snprintf(out, cap, "model.layers.%lu.%s.weight", layer, layer_names[i].hf) < (int)cap ? SX_OK : SX_ERR_ARG;
    return sx_fail(SX_ERR_ARG, "parameter %s has no Hugging Face Llama name", name);
}

static bool gated(const model_config *c) { return c->mlp == MLP_SWIGLU; }
static const char *hf_act(const model_config *c) { return c->mlp == MLP_SWIGLU ? "silu" : c->mlp == MLP_GELU ? "gelu" : "relu2"; }

json_t *hf_config(const model_config *c, size_t context) {
    json_t *j = json_object();
    // Stock transformers' LlamaForCausalLM has a gated MLP only: a relu2/gelu model says so by its type.
    if (gated(c)) json_object_set_new(j, "architectures", json_pack("[s]", "LlamaForCausalLM"));
    json_object_set_new(j, "model_type", json_string(gated(c) ? "llama" : "sextant_llama_nongated"));
    json_object_set_new(j, "vocab_size", json_integer((json_int_t)c->vocab));
    json_object_set_new(j, "hidden_size", json_integer((json_int_t)c->width));
    json_object_set_new(j, "intermediate_size", json_integer((json_int_t)c->ffn_hidden));
    json_object_set_new(j, "num_hidden_layers", json_integer((json_int_t)c->n_layer));
    json_object_set_new(j, "num_attention_heads", json_integer((json_int_t)c->n_head));
    json_object_set_new(j, "num_key_value_heads", json_integer((json_int_t)c->n_kv_head));
    json_object_set_new(j, "head_dim", json_integer((json_int_t)c->head_dim));
    json_object_set_new(j, "hidden_act", json_string(hf_act(c)));
    json_object_set_new(j, "mlp_gated", json_boolean(gated(c)));
    char eps[32];   // the float epsilon as the decimal it was written as (1e-5f -> 1e-05, not 9.99999975e-06)
    snprintf(eps, sizeof eps, "%.6g", (double)MODEL_NORM_EPS);
    json_object_set_new(j, "rms_norm_eps", json_real(strtod(eps, NULL)));
    json_object_set_new(j, "rope_theta", json_real(c->rope_base));
    json_object_set_new(j, "max_position_embeddings", json_integer((json_int_t)context));
    json_object_set_new(j, "tie_word_embeddings", json_boolean(!c->untied));
    json_object_set_new(j, "attention_bias", json_false());
    json_object_set_new(j, "mlp_bias", json_false());
    json_object_set_new(j, "torch_dtype", json_string("float32"));
    json_object_set_new(j, "sextant_descriptor", json_string(c->descriptor));
    return j;
}

static long get_int(json_t *j, const char *key) {
    json_t *v = json_object_get(j, key);
    return json_is_integer(v) ? (long)json_integer_value(v) : -1;
}

sx_status hf_descriptor(json_t *j, char *out, size_t cap) {
    long L = get_int(j, "num_hidden_layers"), C = get_int(j, "hidden_size"), H = get_int(j, "num_attention_heads");
    long K = get_int(j, "num_key_value_heads"), F = get_int(j, "intermediate_size"), V = get_int(j, "vocab_size");
    long hd = get_int(j, "head_dim");
    if (hd < 0 && H > 0) hd = C / H;
    const char *act = json_string_value(json_object_get(j, "hidden_act"));
    json_t *gate = json_object_get(j, "mlp_gated"), *tie = json_object_get(j, "tie_word_embeddings");
    bool is_gated = gate ? json_is_true(gate) : true;   // plain Llama configs are gated
    double theta = json_is_number(json_object_get(j, "rope_theta")) ? json_number_value(json_object_get(j, "rope_theta")) : 10000;
    const char *mlp = is_gated && act && !strcmp(act, "silu") ? "swiglu" : !is_gated && act && !strcmp(act, "relu2") ? "relu2"
                      : !is_gated && act && !strcmp(act, "gelu") ? "gelu" : NULL;
    if (L < 1 || C < 1 || H < 1 || K < 1 || F < 1 || V < 1 || hd < 1 || H * hd != C)
        return sx_fail(SX_ERR_ARG, "config.json: needs num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads, "
                       "intermediate_size, vocab_size (head_dim x heads = hidden_size)");
    if (!mlp) return sx_fail(SX_ERR_ARG, "config.json: hidden_act %s with mlp_gated %s has no sextant MLP (silu gated, relu2 or "
                             "gelu non-gated)", act ? act : "(none)", is_gated ? "true" : "false");
    if (json_is_true(json_object_get(j, "attention_bias")) || json_is_true(json_object_get(j, "mlp_bias")))
        return sx_fail(SX_ERR_ARG, "config.json: biases are not part of the sextant model");
    if (json_object_get(j, "rope_scaling") && !json_is_null(json_object_get(j, "rope_scaling")))
        return sx_fail(SX_ERR_ARG, "config.json: rope_scaling is not supported (plain RoPE only)");
    int n = snprintf(out, cap, "d%ld-w%ld-hd%ld-kv%ld-%s-ff%ld-v%ld-rope%.17g%s", L, C, hd, K, mlp, F, V, theta,
                     tie && !json_is_true(tie) ? "-untied" : "");
    return n < (int)cap ? SX_OK : sx_fail(SX_ERR_ARG, "config.json: descriptor too long");
}

// The model of a checkpoint, with its weights loaded, if the export supports it.
static sx_status open_checkpoint(const char *path, model *m) {
    sx_status st = checkpoint_open_model(path, m);
    if (!st && (st = hf_check(&m->cfg))) model_free(m);
    return st;
}

static void tensor_shape(const param_spec *s, size_t shape[2], int *ndim) {
    *ndim = s->rows == 1 ? 1 : 2;
    shape[0] = s->rows == 1 ? s->cols : s->rows;
    shape[1] = s->cols;
}

sx_status hf_export(const char *checkpoint, const char *out, const char *config_path, size_t context) {
    model m;
    // The config goes beside OUT: in a run's own directory that is the run's config.json, which must stay.
    json_t *there = access(config_path, F_OK) ? NULL : json_load_file(config_path, 0, NULL);
    bool ours = !there || json_object_get(there, "model_type");   // an HF config (an earlier export) may be replaced
    json_decref(there);
    if (!ours)
        return sx_fail(SX_ERR_ARG, "%s is not an HF config.json (a sextant run's own?): export elsewhere, or give --config "
                       "PATH", config_path);
    sx_status st = open_checkpoint(checkpoint, &m);
    st_tensor *t = st ? NULL : sx_calloc_n(m.table.n, sizeof *t, "hf_export");
    if (!st && !t) st = sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < m.table.n; i++) {
        st = hf_name(m.table.v[i].name, t[i].name, sizeof t[i].name);
        strcpy(t[i].dtype, "F32");
        tensor_shape(&m.table.v[i], t[i].shape, &t[i].ndim);
        t[i].nbytes = m.table.v[i].rows * m.table.v[i].cols * sizeof(float);
        t[i].data = m.p[i];
    }
    if (!st) {
        char vocab[32];
        snprintf(vocab, sizeof vocab, "%zu", m.cfg.vocab);
        json_t *meta = json_pack("{s:s, s:s, s:s, s:s}", "format", "pt", "sextant_descriptor", m.cfg.descriptor, "sextant_vocab",
                                 vocab, "sextant_format", "1");
        st = st_write(out, t, m.table.n, meta);
        json_decref(meta);
    }
    if (!st) {
        json_t *cfg = hf_config(&m.cfg, context);
        st = fs_write_json(config_path, cfg, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
        json_decref(cfg);
    }
    free(t);
    model_free(&m);
    return st;
}

// Copies an F32 or BF16 tensor into dst (n floats) exactly.
static sx_status widen(const char *path, const st_tensor *t, float *dst, size_t n) {
    if (!strcmp(t->dtype, "F32")) memcpy(dst, t->data, n * sizeof(float));
    else if (!strcmp(t->dtype, "BF16"))
        for (size_t i = 0; i < n; i++) {
            const unsigned char *b = (const unsigned char *)t->data + 2 * i;
            uint32_t bits = (uint32_t)(b[0] | b[1] << 8) << 16;
            memcpy(&dst[i], &bits, 4);
        }
    else return sx_fail(SX_ERR_ARG, "%s: tensor %s is %s; import reads F32 and BF16", path, t->name, t->dtype);
    return SX_OK;
}

static bool ignorable(const char *name) { return strstr(name, "rotary_emb.inv_freq") != NULL; }

sx_status hf_import(const char *in, const char *config_path, const char *out) {
    st_file f;
    sx_status st = st_read(in, &f);
    if (st) return st;
    char desc[160];
    const char *stored = json_string_value(json_object_get(f.metadata, "sextant_descriptor"));
    // sextant's own export: the descriptor and the vocabulary, which the descriptor leaves out when the data set it
    const char *stored_vocab = json_string_value(json_object_get(f.metadata, "sextant_vocab"));
    size_t vocab = 0;
    json_t *hfc = NULL;
    if (stored && stored_vocab) {
        char *end;
        unsigned long long v = strtoull(stored_vocab, &end, 10);
        if (end == stored_vocab || *end || v == 0 || v > ((size_t)1 << 24))
            st = sx_fail(SX_ERR_FORMAT, "%s: sextant_vocab '%s' is not a vocabulary size", in, stored_vocab);
        vocab = (size_t)v;
    }
    if (stored) snprintf(desc, sizeof desc, "%s", stored);
    else {
        json_error_t err;
        hfc = json_load_file(config_path, 0, &err);
        if (!hfc) st = sx_fail(SX_ERR_FORMAT, "%s: %s (the safetensors file names no sextant model, so its config.json is needed)",
                               config_path, err.text);
        if (!st) st = hf_descriptor(hfc, desc, sizeof desc);
        json_decref(hfc);
    }
    model_config cfg;
    model m;
    memset(&m, 0, sizeof m);
    if (!st) st = model_config_parse(desc, vocab, &cfg);
    if (!st) st = hf_check(&cfg);
    if (!st) st = model_init(&m, &cfg);
    size_t used = 0;
    for (size_t i = 0; !st && i < m.table.n; i++) {
        const param_spec *s = &m.table.v[i];
        char name[256];
        size_t shape[2];
        int ndim;
        tensor_shape(s, shape, &ndim);
        st = hf_name(s->name, name, sizeof name);
        const st_tensor *t = st ? NULL : st_find(&f, name);
        if (!st && !t) st = sx_fail(SX_ERR_MISMATCH, "%s: tensor %s (%s of %s) is missing", in, name, s->name, desc);
        if (!st && (t->ndim != ndim || t->shape[0] != shape[0] || (ndim == 2 && t->shape[1] != shape[1])))
            st = sx_fail(SX_ERR_MISMATCH, "%s: tensor %s has shape [%zu%s], %s needs [%zu, %zu]", in, name, t->shape[0],
                         t->ndim > 1 ? ", ..." : "", desc, shape[0], ndim == 2 ? shape[1] : 0);
        if (!st) st = widen(in, t, m.p[i], s->rows * s->cols);
        used += !st;
    }
    // A tied model's file may still carry lm_head.weight (some writers do): it must equal the embedding.
    const st_tensor *head = st || cfg.untied ? NULL : st_find(&f, "lm_head.weight");
    if (head) {
        size_t n = cfg.vocab * cfg.width;
        float *tmp = sx_alloc(n * sizeof *tmp, "hf_export tmp");
        if (!tmp) st = sx_fail(SX_ERR_NOMEM, "out of memory");
        if (!st) st = widen(in, head, tmp, n);
        if (!st && (head->nbytes / st_dtype_size(head->dtype) != n || memcmp(tmp, m.p[m.emb], n * sizeof *tmp)))
            st = sx_fail(SX_ERR_MISMATCH, "%s: lm_head.weight differs from the embedding of a tied model (tie_word_embeddings)", in);
        free(tmp);
        used += !st;
    }
    for (size_t i = 0; !st && i < f.n; i++)
        if (ignorable(f.tensors[i].name)) used++;
    if (!st && used != f.n) {
        for (size_t i = 0; i < f.n; i++) {
            long k = -1;
            char name[256];
            for (size_t p = 0; p < m.table.n && k < 0; p++)
                if (!hf_name(m.table.v[p].name, name, sizeof name) && !strcmp(name, f.tensors[i].name)) k = (long)p;
            if (k < 0 && !ignorable(f.tensors[i].name) && strcmp(f.tensors[i].name, "lm_head.weight")) {
                st = sx_fail(SX_ERR_MISMATCH, "%s: tensor %s has no place in %s", in, f.tensors[i].name, desc);
                break;
            }
        }
    }
    if (!st) {
        json_t *meta = json_pack("{s:s}", "imported_from", in);
        st = checkpoint_save(out, &m, NULL, meta);
        json_decref(meta);
    }
    model_free(&m);
    st_free(&f);
    return st;
}
