#include "scale/flops.h"

model_flops model_flops_count(const model_config *c, size_t T) {
    model_flops f = {0};
    double C = (double)c->width, L = (double)c->n_layer, V = (double)c->vocab, hd = (double)c->head_dim;
    double H = (double)c->n_head, Hkv = (double)c->n_kv_head, F = (double)c->ffn_hidden;
    double attn = C * H * hd * 2 + C * Hkv * hd * 2;               // wq, wo, wk, wv
    double ffn = C * F * (c->mlp == MLP_SWIGLU ? 3 : 2);
    double gains = 2 * C;                                            // two RMSNorm gains per layer
    f.params_nonembed = L * (attn + ffn + gains) + C;               // + final norm
    f.params_total = f.params_nonembed + V * C * (c->untied ? 2 : 1);
    f.params_active = f.params_total;
    f.params_matmul = L * (attn + ffn) + V * C;
    f.fwd_matmul_per_token = 2 * f.params_matmul;
    // Position t (0-based) attends to t+1 keys: on average (T+1)/2. q·k and p·v: 2·hd FLOPs each per key
    // per query head.
    double keys = ((double)T + 1) / 2;
    f.fwd_attention_per_token = L * H * keys * 4 * hd;
    f.train_per_token = 3 * (f.fwd_matmul_per_token + f.fwd_attention_per_token);
    f.kv_cache_bytes_per_token = L * 2 * Hkv * hd * 4;
    return f;
}
