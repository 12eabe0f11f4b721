#include <math.h>
#include "model/flops.h"
#include "model/bigram.h"
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
// lookup tables (bigram hash, value embeddings: embedding parameters, no matmul) and the small rest (gates).
static void extra_params(const model_config *c, double *tables, double *other) {
    param_table t = {0};
    *tables = *other = NAN;
    if (!bigram_declare(c, &t) && !value_embed_declare(c, &t) && !smear_declare(c, &t)) {
        *tables = *other = 0;
        for (size_t i = 0; i < t.n; i++)
            *(t.v[i].group == PGROUP_EMBED ? tables : other) += (double)t.v[i].rows * (double)t.v[i].cols;
    }
    param_table_free(&t);
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
    double tables, extra;
    extra_params(c, &tables, &extra);
    // GatedNorm: W_down (R,C) and W_up (C,R) after each of the 2L+1 norms, all matmul weights.
    double gnorm = c->gnorm_rank ? (2 * L + 1) * 2 * C * (double)c->gnorm_rank : 0;
    f.params_nonembed = L * (attn + ffn_total + gains + other) + C + extra + gnorm; // + final norm
    f.params_total = f.params_nonembed + V * C * (c->untied ? 2 : 1) + tables;
    f.params_active = f.params_total - L * (ffn_total - ffn_active);
    f.params_matmul = L * (attn + ffn_active) + V * C + gnorm;
    f.fwd_matmul_per_token = 2 * f.params_matmul;
    // Per query head and key: q·k over dqk channels and p·v over hd, 2 FLOPs per multiply-add. Local layers
    // see at most `window` keys.
    for (size_t l = 0; l < c->n_layer; l++) {
        double keys = mean_keys((double)T, model_config_layer_is_local(c, l) ? (double)c->window : 0);
        f.fwd_attention_per_token += H * keys * 2 * (dqk + hd);
    }
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
    return f.fwd_matmul_per_token + attn;
}
