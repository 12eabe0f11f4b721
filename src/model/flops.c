#include <math.h>
#include "model/flops.h"
#include "model/bigram.h"
#include "model/dcmha.h"
#include "model/gatednorm.h"
#include "model/mlp.h"
#include "model/model.h"
#include "model/smear.h"
#include "model/value_embed.h"

// Mean over query positions t = 0..T-1 of the keys each attends to: min(t+1, W) (W = 0: no window).
static double mean_keys(double T, double W) {
    if (W <= 0 || W >= T) return (T + 1) / 2;
    return (W * (W + 1) / 2 + (T - W) * W) / T;
}

// The mixer's weights per layer, from its own declaration: matrices (matmul work) and norm gains.
static void mixer_params(const model_config *c, double *matrices, double *gains) {
    param_table t = {0};
    *matrices = *gains = NAN;   // stays NAN (visibly) if the table cannot be built
    if (!model_mixer_of(c)->declare(c, 0, &t)) {
        *matrices = *gains = 0;
        for (size_t i = 0; i < t.n; i++)
            *(t.v[i].group == PGROUP_GAIN ? gains : matrices) += (double)t.v[i].rows * (double)t.v[i].cols;
    }
    param_table_free(&t);
}

// The model-level tensors beside the layers, the token embedding and the head, from their own declarations:
// lookup tables (bigram hash, value embeddings: embedding parameters, no matmul), matrices (DC-MHA's mixing
// weights and GatedNorm's: matmul work) and the small rest (gates).
static void extra_params(const model_config *c, double *tables, double *matrices, double *other) {
    param_table t = {0};
    *tables = *matrices = *other = NAN;
    if (!bigram_declare(c, &t) && !value_embed_declare(c, &t) && !smear_declare(c, &t) && !dcmha_declare(c, &t) &&
        !gatednorm_declare(c, &t)) {
        *tables = *matrices = *other = 0;
        for (size_t i = 0; i < t.n; i++)
            *(t.v[i].group == PGROUP_EMBED    ? tables
              : t.v[i].group == PGROUP_MATRIX ? matrices
                                              : other) += (double)t.v[i].rows * (double)t.v[i].cols;
    }
    param_table_free(&t);
}

// DC-MHA's attention work per query on the last layer over `keys` window keys: the scores of every query head
// (2·hd each) and the mixed map times each KV head's values (2·hd each).
static double dcmha_flops(const model_config *c, double keys) {
    return keys * 2 * (double)c->head_dim * (double)(c->n_head + c->n_kv_head);
}

model_flops model_flops_count(const model_config *c, size_t T) {
    model_flops f = {0};
    double C = (double)c->width, L = (double)c->n_layer, V = (double)c->vocab, hd = (double)c->head_dim;
    double H = (double)c->n_head, F = (double)c->ffn_hidden;
    double mats = c->mlp == MLP_SWIGLU ? 3 : 2;
    double gains = 2 * C;                                            // two RMSNorm gains per layer
    const block_module *mixer = model_mixer_of(c);
    double attn, mixer_gains, dqk = (double)mixer->qk_dim(c), kv_floats = (double)mixer->cache_floats(c);
    mixer_params(c, &attn, &mixer_gains);
    gains += mixer_gains;
    double ffn_total = C * F * mats, ffn_active = ffn_total;
    double other = c->fp8_mlp ? MLP_FP8_HISTORY * MLP_FP8_ROLES : 0;   // the fp8 amax history: state, not weights
    if (c->n_expert) {
        double E = (double)c->n_expert, K = (double)c->top_k, expert = C * (double)c->expert_hidden * mats;
        double shared = expert * (double)c->n_shared, router = E * C;
        ffn_total = E * expert + shared + router;
        ffn_active = K * expert + shared + router;
        if (c->bias_balance || c->qb_balance) other += E;   // selection bias: not a matmul weight
    }
    double tables, extra_matrices, extra;
    extra_params(c, &tables, &extra_matrices, &extra);
    f.params_nonembed = L * (attn + ffn_total + gains + other) + C + extra_matrices + extra; // + final norm
    f.params_total = f.params_nonembed + V * C * (c->untied ? 2 : 1) + tables;
    f.params_active = f.params_total - L * (ffn_total - ffn_active);
    f.params_matmul = L * (attn + ffn_active) + V * C + extra_matrices;
    f.fwd_matmul_per_token = 2 * f.params_matmul;
    // Per query head and key: q·k over dqk channels and p·v over hd, 2 FLOPs per multiply-add. Local layers
    // see at most `window` keys.
    for (size_t l = 0; l < c->n_layer; l++) {
        double keys = mean_keys((double)T, model_config_layer_is_local(c, l) ? (double)c->window : 0);
        f.fwd_attention_per_token += H * keys * 2 * (dqk + hd);
    }
    if (c->dc_window) f.fwd_attention_per_token += dcmha_flops(c, mean_keys((double)T, (double)c->dc_window));
    f.train_per_token = 3 * (f.fwd_matmul_per_token + f.fwd_attention_per_token);
    f.kv_cache_bytes_per_token = L * kv_floats * 4;
    return f;
}

double model_flops_decode_token(const model_config *c, size_t ctx) {
    model_flops f = model_flops_count(c, 1);
    size_t qk = model_mixer_of(c)->qk_dim(c);
    double attn = 0;
    for (size_t l = 0; l < c->n_layer; l++) {
        size_t keys = model_config_layer_is_local(c, l) && ctx > c->window ? c->window : ctx;
        attn += 2.0 * (double)keys * (double)c->n_head * (double)(qk + c->head_dim);
    }
    if (c->dc_window) attn += dcmha_flops(c, (double)(ctx < c->dc_window ? ctx : c->dc_window));
    return f.fwd_matmul_per_token + attn;
}
