// value_embed: see value_embed.h. Rows are independent in the forward and in the per-row part of the
// backward (threaded); the gate's gradient is summed over rows in row order and the tables' by
// embedding_backward, so the result does not depend on the thread count.
#include <math.h>
#include <stdio.h>
#include "kernels/embedding.h"
#include "model/value_embed.h"

#define VALUE_EMBED_INIT_STD 0.01f

static size_t kv_dim(const model_config *c) { return c->n_kv_head * c->head_dim; }

sx_status value_embed_declare(const model_config *c, param_table *t) {
    size_t N = c->value_embeds;
    char name[48];
    sx_status s = SX_OK;
    for (size_t k = 0; k < N && !s; k++) {
        snprintf(name, sizeof name, "ve%zu", k);
        s = param_table_add(t, name, c->vocab, kv_dim(c), INIT_NORMAL, VALUE_EMBED_INIT_STD, PGROUP_EMBED);
    }
    if (N && !s)
        s = param_table_add(t, "ve_gate", 2 * N * c->n_kv_head, VALUE_EMBED_GATE_IN, INIT_ZERO, 0, PGROUP_GAIN);
    return s;
}

size_t value_embed_table_floats(const model_config *c) { return c->value_embeds * c->vocab * kv_dim(c); }

size_t value_embed_scratch_floats(const model_config *c, size_t N) {
    return c->value_embeds ? N * (kv_dim(c) + c->n_kv_head) : 0;
}

bool value_embed_at(const model_config *c, size_t layer, float *const *p, float *const *g, size_t first,
                    const int32_t *tok, value_embed_layer *out) {
    size_t N = c->value_embeds, L = c->n_layer, slot;
    if (layer < N) slot = layer;                        // early layers: tables 0..N−1
    else if (N && layer >= L - N) slot = N + layer - (L - N);   // late layers: the same tables again
    else return false;
    size_t table = first + slot % N, gate = first + N, rows = c->n_kv_head * VALUE_EMBED_GATE_IN;
    *out = (value_embed_layer){.table = p[table], .gate = p[gate] + slot * rows, .tok = tok,
                               .dtable = g ? g[table] : NULL, .dgate = g ? g[gate] + slot * rows : NULL};
    return true;
}

// γ = 2·σ(w·[h[0:6]; e[0:6]]) for one KV head's gate row w (12).
static float gate_of(const float *w, const float *h, const float *e) {
    float z = 0;
    for (size_t j = 0; j < VALUE_EMBED_GATE_HALF; j++) z += w[j] * h[j] + w[VALUE_EMBED_GATE_HALF + j] * e[j];
    return 2.0f / (1.0f + expf(-z));
}

void value_embed_forward(const model_config *c, size_t N, const value_embed_layer *ve, const float *h, float *v) {
    size_t C = c->width, Hkv = c->n_kv_head, hd = c->head_dim, kd = kv_dim(c);
#pragma omp parallel for schedule(static) if (N * kd >= (1u << 15))
    for (size_t i = 0; i < N; i++) {
        const float *e = ve->table + (size_t)ve->tok[i] * kd;
        for (size_t g = 0; g < Hkv; g++) {
            float gam = gate_of(ve->gate + g * VALUE_EMBED_GATE_IN, h + i * C, e);
            for (size_t d = 0; d < hd; d++) v[i * kd + g * hd + d] += gam * e[g * hd + d];
        }
    }
}

// Backward of v_g += γ_g·e_g, γ_g = 2σ(z_g), z_g = w_g·[h[0:6]; e[0:6]]:
//   de_g = γ_g·dv_g;  dz_g = (dv_g·e_g)·γ_g(1 − γ_g/2);
//   dh[0:6] += Σ_g dz_g·w_g[0:6];  de[0:6] += Σ_g dz_g·w_g[6:12]
//   dw_g += dz_g·[h[0:6]; e[0:6]].
void value_embed_backward(const model_config *c, size_t N, const value_embed_layer *ve, const float *h,
                          const float *dv, float *dh, float *scratch) {
    size_t C = c->width, Hkv = c->n_kv_head, hd = c->head_dim, kd = kv_dim(c), K = VALUE_EMBED_GATE_HALF;
    float *de = scratch, *dz = scratch + N * kd;   // (N, kd) the rows' gradients, (N, Hkv) the gates' logits'
#pragma omp parallel for schedule(static) if (N * kd >= (1u << 15))
    for (size_t i = 0; i < N; i++) {
        const float *e = ve->table + (size_t)ve->tok[i] * kd;
        for (size_t g = 0; g < Hkv; g++) {
            const float *w = ve->gate + g * VALUE_EMBED_GATE_IN;
            float gam = gate_of(w, h + i * C, e), dot = 0;
            for (size_t d = 0; d < hd; d++) {
                dot += dv[i * kd + g * hd + d] * e[g * hd + d];
                de[i * kd + g * hd + d] = gam * dv[i * kd + g * hd + d];
            }
            dz[i * Hkv + g] = dot * gam * (1.0f - 0.5f * gam);
        }
        for (size_t g = 0; g < Hkv; g++)
            for (size_t j = 0; j < K; j++) {
                const float *w = ve->gate + g * VALUE_EMBED_GATE_IN;
                dh[i * C + j] += dz[i * Hkv + g] * w[j];
                de[i * kd + j] += dz[i * Hkv + g] * w[K + j];
            }
    }
    for (size_t g = 0; g < Hkv; g++) {
        double acc[VALUE_EMBED_GATE_IN] = {0};
        for (size_t i = 0; i < N; i++) {
            const float *e = ve->table + (size_t)ve->tok[i] * kd;
            for (size_t j = 0; j < K; j++) {
                acc[j] += (double)dz[i * Hkv + g] * h[i * C + j];
                acc[K + j] += (double)dz[i * Hkv + g] * e[j];
            }
        }
        for (size_t j = 0; j < VALUE_EMBED_GATE_IN; j++) ve->dgate[g * VALUE_EMBED_GATE_IN + j] += (float)acc[j];
    }
    embedding_backward(N, kd, ve->tok, de, ve->dtable);
}
