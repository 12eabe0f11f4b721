#include <math.h>
#include <stdio.h>
#include <string.h>
#include "model/attn_common.h"
#include "kernels/rope.h"
#include "model/linear.h"

attn_shape attn_layer_shape(const block_shape *s, size_t H, size_t Hkv, size_t hd, float scale) {
    const model_config *c = s->cfg;
    return (attn_shape){.B = s->B, .T = s->T, .H = H, .Hkv = Hkv, .hd = hd, .scale = scale,
                        .window = model_config_layer_is_local(c, s->layer) ? c->window : 0,
                        .softcap = c->attn_softcap};
}

size_t attn_kernel_work_floats(const model_config *c, size_t B, size_t T, size_t threads, size_t H, size_t Hkv,
                               size_t hd) {
    attn_shape s = attn_layer_shape(&(block_shape){.cfg = c, .B = B, .T = T}, H, Hkv, hd, 1.0f);
    size_t fwd = attention_forward_workspace_floats(&s, threads);
    size_t bwd = attention_backward_workspace_floats(&s, threads);
    return fwd > bwd ? fwd : bwd;
}

size_t attn_gate_count(const model_config *c) {
    return !c->attn_gate ? 0 : c->attn_gate_elem ? c->n_head * c->head_dim : c->n_head;
}

sx_status attn_gate_declare(const model_config *c, size_t layer, param_table *t) {
    if (!c->attn_gate) return SX_OK;
    char name[48];
    snprintf(name, sizeof name, "l%zu.wg", layer);
    return param_table_add(t, name, attn_gate_count(c), c->width, INIT_ZERO, 0, PGROUP_MATRIX);
}

void attn_gate_forward(size_t BT, size_t C, size_t G, size_t span, const float *h, const float *Wg,
                       const float *att, float *gate, float *out) {
    linear_forward(BT, C, G, h, Wg, gate, false);
    for (size_t r = 0; r < BT * G; r++) {
        float g = 1.0f / (1.0f + expf(-gate[r]));
        gate[r] = g;
        for (size_t d = 0; d < span; d++) out[r * span + d] = g * att[r * span + d];
    }
}

void attn_gate_backward(size_t BT, size_t G, size_t span, const float *att, const float *gate, const float *dout,
                        float *datt, float *dlogit) {
    for (size_t r = 0; r < BT * G; r++) {
        float g = gate[r];
        double dg = 0;
        for (size_t d = 0; d < span; d++) {
            dg += (double)dout[r * span + d] * att[r * span + d];
            datt[r * span + d] = g * dout[r * span + d];
        }
        dlogit[r] = (float)dg * g * (1.0f - g);
    }
}

// One query head against the visible rows: scores (positions 0..pos) and the softmax-weighted values. The
// exponentials are summed in double and the window's first position masks everything before it.
static void attend_head(const decode_shape *s, size_t r, size_t first, size_t row_floats, size_t qd, size_t vd,
                        size_t ko, size_t vo, float scale, const float *q, float *scores, float *out) {
    const kv_span *spans = s->spans[r];
    size_t ns = s->n_spans[r], pos = s->pos[r];
    float cap = s->cfg->attn_softcap, mx = -INFINITY;
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < spans[i].n; j++) {
            size_t p = spans[i].pos0 + j;
            if (p < first) continue;
            const float *k = spans[i].rows + j * row_floats + ko;
            float dot = 0;
            for (size_t e = 0; e < qd; e++) dot += q[e] * k[e];
            float z = dot * scale;
            if (cap > 0) z = cap * tanhf(z / cap);
            scores[p] = z;
            mx = z > mx ? z : mx;
        }
    double sum = 0;
    for (size_t p = first; p <= pos; p++) sum += (scores[p] = expf(scores[p] - mx));
    memset(out, 0, vd * sizeof *out);
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < spans[i].n; j++) {
            size_t p = spans[i].pos0 + j;
            if (p < first) continue;
            float wgt = (float)(scores[p] / sum);
            const float *v = spans[i].rows + j * row_floats + vo;
            for (size_t e = 0; e < vd; e++) out[e] += wgt * v[e];
        }
}

void attn_cached_forward(const decode_shape *s, size_t H, size_t Hkv, size_t row_floats, size_t qd, size_t vd,
                         size_t v0, float scale, const float *q, float *scores, float *out) {
    const model_config *c = s->cfg;
    size_t window = model_config_layer_is_local(c, s->layer) ? c->window : 0;
    #pragma omp parallel for schedule(dynamic, 1) if (s->n * H > 8)
    for (size_t rh = 0; rh < s->n * H; rh++) {
        size_t r = rh / H, g = rh % H / (H / Hkv), pos = s->pos[r];
        size_t first = window && pos + 1 > window ? pos + 1 - window : 0;
        attend_head(s, r, first, row_floats, qd, vd, g * qd, v0 + g * vd, scale, q + rh * qd,
                    scores + rh * s->max_ctx, out + rh * vd);
    }
}

void attn_rope_at(const decode_shape *s, size_t heads, size_t dim, size_t rot, size_t pos, float *x) {
    size_t half = s->cfg->rope_dim / 2;
    rope_forward(1, 1, heads, dim, rot, s->rope_cos + pos * half, s->rope_sin + pos * half, x);
}
