#include "scale/flops.h"

// Mean over query positions t = 0..T-1 of the keys each attends to: min(t+1, W) (W = 0: no window).
static double mean_keys(double T, double W) {
    if (W <= 0 || W >= T) return (T + 1) / 2;
    return (W * (W + 1) / 2 + (T - W) * W) / T;
}

model_flops model_flops_count(const model_config *c, size_t T) {
    model_flops f = {0};
    double C = (double)c->width, L = (double)c->n_layer, V = (double)c->vocab, hd = (double)c->head_dim;
    double H = (double)c->n_head, Hkv = (double)c->n_kv_head, F = (double)c->ffn_hidden;
    double mats = c->mlp == MLP_SWIGLU ? 3 : 2;
    double gains = 2 * C;                                            // two RMSNorm gains per layer
    double attn, dqk = hd, kv_floats;
    if (c->mixer == MIXER_MLA) {
        double dc = (double)c->mla_dc, dcq = (double)c->mla_dcq, rd = (double)c->mla_rope, nd = (double)c->mla_nope;
        dqk = rd + nd;
        attn = (dcq > 0 ? C * dcq + dcq * H * dqk : C * H * dqk) + C * dc + C * rd + dc * H * nd + dc * H * hd +
               H * hd * C;
        if (c->mla_latent_norm) gains += dc + dcq;
        kv_floats = dc + rd;
    } else {
        attn = C * H * hd * 2 + C * Hkv * hd * 2;                   // wq, wo, wk, wv
        kv_floats = 2 * Hkv * hd;
    }
    if (c->attn_gate) attn += H * C;
    double ffn_total = C * F * mats, ffn_active = ffn_total, other = 0;
    if (c->n_expert) {
        double E = (double)c->n_expert, K = (double)c->top_k, expert = C * (double)c->expert_hidden * mats;
        double shared = expert * (double)c->n_shared, router = E * C;
        ffn_total = E * expert + shared + router;
        ffn_active = K * expert + shared + router;
        if (c->bias_balance) other = E;                             // selection bias: not a matmul weight
    }
    f.params_nonembed = L * (attn + ffn_total + gains + other) + C; // + final norm
    f.params_total = f.params_nonembed + V * C * (c->untied ? 2 : 1);
    f.params_active = f.params_total - L * (ffn_total - ffn_active);
    f.params_matmul = L * (attn + ffn_active) + V * C;
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
