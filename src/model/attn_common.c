#include <math.h>
#include <stdio.h>
#include <string.h>
#include "core/threads.h"
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

// Overwrites dot[j] = q·k_j (qd values, summed in order) for the n keys k_j = k + j*row_floats. Eight keys at a
// time: each sum is a chain of dependent additions, and eight independent chains keep the adders busy.
static void dot_keys(size_t n, const float *q, const float *k, size_t row_floats, size_t qd, float *dot) {
    enum { W = 8 };
    size_t j = 0;
    for (; j + W <= n; j += W) {
        float d[W] = {0};
        for (size_t e = 0; e < qd; e++)
            for (size_t u = 0; u < W; u++) d[u] += q[e] * k[(j + u) * row_floats + e];
        for (size_t u = 0; u < W; u++) dot[j + u] = d[u];
    }
    for (; j < n; j++) {
        float d = 0;
        for (size_t e = 0; e < qd; e++) d += q[e] * k[j * row_floats + e];
        dot[j] = d;
    }
}

// Four floats as one vector (GCC's vector extension: portable, and each lane's arithmetic is the scalar one).
typedef float v4f __attribute__((vector_size(16)));
static inline v4f load4(const float *p) {
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

// Overwrites out (w) with the sum of weight[p] · (the w values at vo of row p) over the positions first..pos
// that row r sees, in position order. Sixteen values at a time in four vector registers (summed into out, which
// may alias the cache, every value would be stored and reloaded at every position), the rest one by one.
static void weigh_values(const decode_shape *s, size_t r, size_t first, size_t row_floats, size_t vo, size_t w,
                         const float *weight, float *out) {
    const kv_span *spans = s->spans[r];
    size_t e0 = 0;
    for (; e0 + 16 <= w; e0 += 16) {
        v4f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
        for (size_t i = 0; i < s->n_spans[r]; i++)
            for (size_t j = spans[i].pos0 < first ? first - spans[i].pos0 : 0; j < spans[i].n; j++) {
                float g = weight[spans[i].pos0 + j];
                v4f wv = {g, g, g, g};
                const float *v = spans[i].rows + j * row_floats + vo + e0;
                a0 += wv * load4(v);
                a1 += wv * load4(v + 4);
                a2 += wv * load4(v + 8);
                a3 += wv * load4(v + 12);
            }
        memcpy(out + e0, &a0, sizeof a0);
        memcpy(out + e0 + 4, &a1, sizeof a1);
        memcpy(out + e0 + 8, &a2, sizeof a2);
        memcpy(out + e0 + 12, &a3, sizeof a3);
    }
    for (; e0 < w; e0++) {
        float a = 0;
        for (size_t i = 0; i < s->n_spans[r]; i++)
            for (size_t j = spans[i].pos0 < first ? first - spans[i].pos0 : 0; j < spans[i].n; j++)
                a += weight[spans[i].pos0 + j] * spans[i].rows[j * row_floats + vo + e0];
        out[e0] = a;
    }
}

// Query head rh % H of row rh / H (q, scores and out: that head's) against the rows it sees: scores (positions
// 0..pos) and the softmax-weighted values. The exponentials are summed in double and the window's first
// position masks everything before it. Arguments as attn_cached_forward's.
static void attend_head(const decode_shape *s, size_t rh, size_t H, size_t Hkv, size_t window, size_t row_floats,
                        size_t qd, size_t vd, size_t v0, float scale, const float *q, float *scores, float *out) {
    size_t r = rh / H, g = rh % H / (H / Hkv), ko = g * qd, vo = v0 + g * vd, pos = s->pos[r];
    size_t first = window && pos + 1 > window ? pos + 1 - window : 0;
    const kv_span *spans = s->spans[r];
    size_t ns = s->n_spans[r];
    float cap = s->cfg->attn_softcap, mx = -INFINITY;
    for (size_t i = 0; i < ns; i++) {   // the scaled (and capped) scores
        size_t j0 = spans[i].pos0 < first ? first - spans[i].pos0 : 0;
        if (j0 >= spans[i].n) continue;
        dot_keys(spans[i].n - j0, q, spans[i].rows + j0 * row_floats + ko, row_floats, qd, scores + spans[i].pos0 + j0);
        for (size_t j = j0; j < spans[i].n; j++) {
            size_t p = spans[i].pos0 + j;
            float z = scores[p] * scale;
            if (cap > 0) z = cap * tanhf(z / cap);
            scores[p] = z;
        }
    }
    for (size_t p = first; p <= pos; p++) mx = scores[p] > mx ? scores[p] : mx;   // apart: mx stays in a register
    double sum = 0;
    for (size_t p = first; p <= pos; p++) sum += (scores[p] = expf(scores[p] - mx));
    for (size_t p = first; p <= pos; p++) scores[p] = (float)(scores[p] / sum);   // the weights, a vector loop
    weigh_values(s, r, first, row_floats, vo, vd, scores, out);
}

void attn_cached_forward(const decode_shape *s, size_t H, size_t Hkv, size_t row_floats, size_t qd, size_t vd,
                         size_t v0, float scale, const float *q, float *scores, float *out) {
    const model_config *c = s->cfg;
    size_t window = model_config_layer_is_local(c, s->layer) ? c->window : 0;
#define ATTEND(rh) attend_head(s, rh, H, Hkv, window, row_floats, qd, vd, v0, scale, q + (rh) * qd, \
                               scores + (rh) * s->max_ctx, out + (rh) * vd)
    if (!threads_split(s->n * H > 8)) {
        for (size_t rh = 0; rh < s->n * H; rh++) ATTEND(rh);
        return;
    }
    #pragma omp parallel for schedule(dynamic, 1)
    for (size_t rh = 0; rh < s->n * H; rh++) ATTEND(rh);
#undef ATTEND
}

void attn_rope_at(const decode_shape *s, size_t heads, size_t dim, size_t rot, size_t pos, float *x) {
    size_t half = s->cfg->rope_dim / 2;
    rope_forward(1, 1, heads, dim, rot, s->rope_cos + pos * half, s->rope_sin + pos * half, x);
}
