// attn_gqa: grouped-query self-attention (MHA when kv heads = heads, MQA when 1) with optional QK-norm and
// partial RoPE. q = h·wqᵀ, k = h·wkᵀ, v = h·wvᵀ [+ the layer's value embedding (model/value_embed.h)];
// [qknorm]; rope; a = attention(q, k, v) (sliding window and logit soft-cap per attn_common); [a += DC-MHA on
// the last layer (model/dcmha.h)]; [a = xsa(a, v) (kernels/xsa.h)]; [a = σ(h·wgᵀ) ⊙ a per head or channel];
// out += a·woᵀ.
// Cached decode keeps k and v (after QK-norm and RoPE, v with its value embedding): a cache row is
// [k (Hkv·hd) ; v (Hkv·hd)], and query head h reads KV head h/(H/Hkv).
#include <math.h>
#include <string.h>
#include "kernels/attention.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/xsa.h"
#include "model/attn_common.h"
#include "model/block.h"
#include "model/dcmha.h"
#include "model/linear.h"
#include "model/value_embed.h"

enum { WQ, WK, WV, WO, WG };
#define QK_NORM_EPS 1e-6f

typedef struct {          // views into one layer's saved block; shapes with BT = B·T rows
    float *q, *k, *v;     // (BT, H·hd), (BT, Hkv·hd) x2: q and k after QK-norm and RoPE
    float *q_raw, *k_raw; // before QK-norm (only with qk_norm)
    float *q_rstd, *k_rstd; // (BT·H), (BT·Hkv)
    float *att;           // (BT, H·hd) attention output
    float *lse;           // (B, H, T)
    float *att_x;         // with xsa: (BT, H·hd) its output
    float *att_g, *gate;  // with the gate: (BT, H·hd) gated output fed to wo, (BT, G) gate values
    float *dc_u, *att_dc; // with dcmha (used by the last layer only): (2, BT, H) its mixing weights, (BT, H·hd) att
                          // plus its output
} saved_views;

static size_t q_dim(const model_config *c) { return c->n_head * c->head_dim; }
static size_t kv_dim(const model_config *c) { return c->n_kv_head * c->head_dim; }

static saved_views views(const model_config *c, size_t BT, float *p) {
    saved_views v = {0};
    size_t qd = q_dim(c), kd = kv_dim(c);
    v.q = p; p += BT * qd;
    v.k = p; p += BT * kd;
    v.v = p; p += BT * kd;
    v.att = p; p += BT * qd;
    v.lse = p; p += BT * c->n_head;
    if (c->qk_norm) {
        v.q_raw = p; p += BT * qd;
        v.k_raw = p; p += BT * kd;
        v.q_rstd = p; p += BT * c->n_head;
        v.k_rstd = p; p += BT * c->n_kv_head;
    }
    if (c->xsa) {
        v.att_x = p; p += BT * qd;
    }
    if (c->attn_gate) {
        v.att_g = p; p += BT * qd;
        v.gate = p; p += BT * attn_gate_count(c);
    }
    if (c->dc_window) {
        v.dc_u = p; p += 2 * BT * c->n_head;
        v.att_dc = p;
    }
    return v;
}

static size_t saved_floats(const model_config *c, size_t BT) {
    size_t qd = q_dim(c), kd = kv_dim(c);
    size_t n = BT * (2 * qd + 2 * kd + c->n_head);
    if (c->qk_norm) n += BT * (qd + kd + c->n_head + c->n_kv_head);
    if (c->xsa) n += BT * qd;
    if (c->attn_gate) n += BT * (qd + attn_gate_count(c));
    if (c->dc_window) n += BT * (2 * c->n_head + qd);
    return n;
}

static size_t scratch_floats(const model_config *c, size_t BT) {
    return BT * (2 * q_dim(c) + 2 * kv_dim(c)) + (c->qk_norm ? BT * (q_dim(c) + kv_dim(c)) : 0) +
           (c->attn_gate ? BT * (q_dim(c) + attn_gate_count(c)) : 0) + (c->xsa ? BT * q_dim(c) : 0) +
           value_embed_scratch_floats(c, BT) + dcmha_scratch_floats(c, BT);
}

// After attention (forward and decode): a (N, H·hd) -> [xsa against the rows' own values v (N, Hkv·hd), into
// x] -> [gate: values into gate (N, G), output into g] -> out (N, C) += ·woᵀ. h (N, C): the mixer's input.
static void output_forward(const model_config *c, size_t N, float *const *w, const float *h, const float *v,
                           const float *a, float *x, float *gate, float *g, float *out) {
    if (c->xsa) {
        xsa_forward(&(xsa_shape){N, c->n_head, c->n_kv_head, c->head_dim, kv_dim(c), c->head_dim}, a, v, x);
        a = x;
    }
    if (c->attn_gate) {
        size_t G = attn_gate_count(c);
        attn_gate_forward(N, c->width, G, q_dim(c) / G, h, w[WG], a, gate, g);
        a = g;
    }
    linear_forward(N, q_dim(c), c->width, a, w[WO], out, true);
}

static sx_status declare(const model_config *c, size_t layer, param_table *t) {
    char name[48];
    float std = 1.0f / sqrtf((float)c->width);
    const struct { const char *n; size_t rows, cols; param_init init; } tensors[] = {
        {"wq", q_dim(c), c->width, INIT_NORMAL}, {"wk", kv_dim(c), c->width, INIT_NORMAL},
        {"wv", kv_dim(c), c->width, INIT_NORMAL}, {"wo", c->width, q_dim(c), INIT_ZERO},
    };
    for (size_t i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "l%zu.%s", layer, tensors[i].n);
        sx_status s = param_table_add(t, name, tensors[i].rows, tensors[i].cols, tensors[i].init, std, PGROUP_MATRIX);
        if (s) return s;
    }
    return attn_gate_declare(c, layer, t);
}

static attn_shape shape_of(const block_shape *s) {
    const model_config *c = s->cfg;
    return attn_layer_shape(s, c->n_head, c->n_kv_head, c->head_dim, 1.0f / sqrtf((float)c->head_dim));
}

// Projects h to one of q or k and applies QK-norm and RoPE.
static void project_qk(const block_shape *s, const float *h, const float *W, size_t heads, float *raw, float *rstd,
                       float *out) {
    const model_config *c = s->cfg;
    size_t BT = s->B * s->T, dim = heads * c->head_dim;
    if (c->qk_norm) {
        linear_forward(BT, c->width, dim, h, W, raw, false);
        rmsnorm_forward(BT * heads, c->head_dim, raw, NULL, QK_NORM_EPS, out, rstd);
    } else {
        linear_forward(BT, c->width, dim, h, W, out, false);
    }
    if (c->rope_dim)
        rope_forward(s->B, s->T, heads, c->head_dim, c->rope_dim, s->rope_cos, s->rope_sin, out);
}

static void forward(const block_shape *s, float *const *w, const float *h, float *out, float *saved, float *scratch) {
    const model_config *c = s->cfg;
    size_t BT = s->B * s->T;
    saved_views a = views(c, BT, saved);
    project_qk(s, h, w[WQ], c->n_head, a.q_raw, a.q_rstd, a.q);
    project_qk(s, h, w[WK], c->n_kv_head, a.k_raw, a.k_rstd, a.k);
    linear_forward(BT, c->width, kv_dim(c), h, w[WV], a.v, false);
    if (s->ve) value_embed_forward(c, BT, s->ve, h, a.v);
    attn_shape as = shape_of(s);
    attention_forward(&as, a.q, a.k, a.v, a.att, a.lse);
    if (s->dc) {
        dcmha_mix_weights(c, BT, s->dc, h, a.dc_u);
        memcpy(a.att_dc, a.att, BT * q_dim(c) * sizeof(float));
        dcmha_forward(c, s->B, s->T, a.q, a.k, a.v, a.dc_u, a.att_dc, scratch);
    }
    output_forward(c, BT, w, h, a.v, s->dc ? a.att_dc : a.att, a.att_x, a.gate, a.att_g, out);
}

// Undoes RoPE and QK-norm on the gradient d (of q or k after both); returns the gradient of the projection.
static float *unproject_qk(const block_shape *s, size_t heads, const float *raw, const float *rstd, float *d,
                           float *d_raw) {
    const model_config *c = s->cfg;
    if (c->rope_dim)
        rope_backward(s->B, s->T, heads, c->head_dim, c->rope_dim, s->rope_cos, s->rope_sin, d);
    if (!c->qk_norm) return d;
    rmsnorm_backward(s->B * s->T * heads, c->head_dim, raw, NULL, rstd, d, d_raw, NULL, false);
    return d_raw;
}

static void backward(const block_shape *s, float *const *w, float *const *dw, const float *h, const float *dout,
                     float *dh, const float *saved, float *scratch) {
    const model_config *c = s->cfg;
    size_t BT = s->B * s->T, qd = q_dim(c), kd = kv_dim(c), C = c->width;
    saved_views a = views(c, BT, (float *)saved);
    size_t G = attn_gate_count(c);
    float *d_att = scratch, *dq = d_att + BT * qd, *dk = dq + BT * qd, *dv = dk + BT * kd;
    float *dq_raw = dv + BT * kd, *dk_raw = c->qk_norm ? dq_raw + BT * qd : NULL;
    float *d_att_g = dq_raw + (c->qk_norm ? BT * (qd + kd) : 0), *d_gate = d_att_g + (c->attn_gate ? BT * qd : 0);
    float *d_att_x = d_gate + BT * G, *ve_scratch = d_att_x + (c->xsa ? BT * qd : 0);
    float *dc_scratch = ve_scratch + value_embed_scratch_floats(c, BT);
    // Back through output_forward's chain: wo's input, [the gate], [xsa], to the attention output [+ DC-MHA's].
    const float *att = s->dc ? a.att_dc : a.att;             // what xsa or the gate received
    const float *x_out = c->xsa ? a.att_x : att;            // xsa's output = the gate's input
    float *d_x = c->xsa ? d_att_x : d_att;                  // its gradient
    float *d_wo = c->attn_gate ? d_att_g : d_x;             // gradient of wo's input
    linear_backward(BT, qd, C, c->attn_gate ? a.att_g : x_out, w[WO], dout, dw[WO], d_wo, false);
    if (c->attn_gate) attn_gate_backward(BT, G, qd / G, x_out, a.gate, d_wo, d_x, d_gate);
    xsa_shape xs = {BT, c->n_head, c->n_kv_head, c->head_dim, kd, c->head_dim};
    if (c->xsa) xsa_backward(&xs, att, a.v, d_x, d_att, NULL);
    attn_shape as = shape_of(s);
    attention_backward(&as, a.q, a.k, a.v, a.att, a.lse, d_att, dq, dk, dv);
    if (c->xsa) xsa_backward(&xs, att, a.v, d_x, NULL, dv);
    if (s->dc) dcmha_backward(c, s->B, s->T, s->dc, h, a.q, a.k, a.v, a.dc_u, d_att, dq, dk, dv, dc_scratch);
    float *gq = unproject_qk(s, c->n_head, a.q_raw, a.q_rstd, dq, dq_raw);
    float *gk = unproject_qk(s, c->n_kv_head, a.k_raw, a.k_rstd, dk, dk_raw);
    linear_backward(BT, C, qd, h, w[WQ], gq, dw[WQ], dh, false);
    linear_backward(BT, C, kd, h, w[WK], gk, dw[WK], dh, true);
    linear_backward(BT, C, kd, h, w[WV], dv, dw[WV], dh, true);
    if (c->attn_gate) linear_backward(BT, C, G, h, w[WG], d_gate, dw[WG], dh, true);
    if (s->ve) value_embed_backward(c, BT, s->ve, h, dv, dh, ve_scratch);
    if (s->dc) dcmha_backward_input(c, BT, s->dc, dc_scratch, dh);
}

static size_t qk_dim(const model_config *c) { return c->head_dim; }
static size_t cache_floats(const model_config *c) { return 2 * kv_dim(c); }

// Decode scratch for n rows: q (n, H·hd), raw (n, H·hd + Hkv·hd) (q before QK-norm, then the projected keys),
// rstd (n·max(H, Hkv)), stage (n, H·hd) (k before QK-norm, then the attention output), v (n, Hkv·hd),
// xsa (n, H·hd), gate (n, G), gated (n, H·hd), scores (n·H, max_ctx), with dcmha its mixing weights (2, n, H)
// and one row's maps.
typedef struct { float *q, *raw, *rstd, *stage, *v, *xsa, *gate, *gated, *scores, *dc_u, *dc_row; } decode_views;

static size_t decode_carve(const model_config *c, size_t n, size_t max_ctx, float *p, decode_views *v) {
    size_t qd = q_dim(c), H = c->n_head, rs = H > c->n_kv_head ? H : c->n_kv_head;
    const size_t sizes[] = {n * qd, n * (qd + kv_dim(c)), n * rs, n * qd, n * kv_dim(c), c->xsa ? n * qd : 0,
                            n * attn_gate_count(c), c->attn_gate ? n * qd : 0, n * H * max_ctx,
                            c->dc_window ? 2 * n * H : 0, dcmha_row_scratch_floats(c)};
    float **dst[] = {&v->q, &v->raw, &v->rstd, &v->stage, &v->v, &v->xsa, &v->gate, &v->gated, &v->scores,
                     &v->dc_u, &v->dc_row};
    return block_carve(p, sizes, dst, sizeof sizes / sizeof *sizes, 1);
}

static size_t decode_scratch_floats(const model_config *c, size_t n, size_t max_ctx) {
    return decode_carve(c, n, max_ctx, NULL, &(decode_views){0});
}

// DC-MHA of each row over its last W cached positions (keys and values straight from the cache rows), added to
// the attention output in a.stage.
static void dc_decode(const decode_shape *s, const float *h, const float *q, decode_views *a) {
    const model_config *c = s->cfg;
    size_t n = s->n, H = c->n_head, W = c->dc_window, kd = kv_dim(c), qd = q_dim(c), row = cache_floats(c);
    dcmha_mix_weights(c, n, s->dc, h, a->dc_u);
    const float *kp[DCMHA_MAX_WINDOW], *vp[DCMHA_MAX_WINDOW];
    for (size_t r = 0; r < n; r++) {
        size_t pos = s->pos[r], first = pos + 1 > W ? pos + 1 - W : 0, m = 0;
        for (size_t i = 0; i < s->n_spans[r]; i++)
            for (size_t j = 0; j < s->spans[r][i].n; j++)
                if (s->spans[r][i].pos0 + j >= first) {
                    kp[m] = s->spans[r][i].rows + j * row;
                    vp[m] = kp[m] + kd;
                    m++;
                }
        dcmha_row(c, m, q + r * qd, kp, vp, a->dc_u + r * H, a->dc_u + (n + r) * H, a->dc_row, a->dc_row + H * W,
                  a->stage + r * qd);
    }
}

static void decode(const decode_shape *s, float *const *w, const float *h, float *out, float *scratch) {
    const model_config *c = s->cfg;
    size_t n = s->n, C = c->width, H = c->n_head, Hkv = c->n_kv_head, hd = c->head_dim;
    size_t qd = q_dim(c), kd = kv_dim(c);
    decode_views a;
    decode_carve(c, n, s->max_ctx, scratch, &a);
    float *k = a.raw + n * qd;   // (n, kd) keys, roped in place before they go into the slots
    if (c->qk_norm) {
        linear_forward(n, C, qd, h, w[WQ], a.raw, false);
        rmsnorm_forward(n * H, hd, a.raw, NULL, QK_NORM_EPS, a.q, a.rstd);
        linear_forward(n, C, kd, h, w[WK], a.stage, false);
        rmsnorm_forward(n * Hkv, hd, a.stage, NULL, QK_NORM_EPS, k, a.rstd);
    } else {
        linear_forward(n, C, qd, h, w[WQ], a.q, false);
        linear_forward(n, C, kd, h, w[WK], k, false);
    }
    linear_forward(n, C, kd, h, w[WV], a.v, false);
    if (s->ve) value_embed_forward(c, n, s->ve, h, a.v);
    for (size_t r = 0; r < n; r++) {
        if (c->rope_dim) {
            attn_rope_at(s, H, hd, c->rope_dim, s->pos[r], a.q + r * qd);
            attn_rope_at(s, Hkv, hd, c->rope_dim, s->pos[r], k + r * kd);
        }
        memcpy(s->slot[r], k + r * kd, kd * sizeof(float));
        memcpy(s->slot[r] + kd, a.v + r * kd, kd * sizeof(float));
    }
    attn_cached_forward(s, H, Hkv, cache_floats(c), hd, hd, kd, 1.0f / sqrtf((float)hd), a.q, a.scores, a.stage);
    if (s->dc) dc_decode(s, h, a.q, &a);
    output_forward(c, n, w, h, a.v, a.stage, a.xsa, a.gate, a.gated, out);
}

const block_module attn_gqa_module = {
    .name = "gqa", .declare = declare, .saved_floats = saved_floats, .scratch_floats = scratch_floats,
    .forward = forward, .backward = backward, .qk_dim = qk_dim, .cache_floats = cache_floats,
    .decode_scratch_floats = decode_scratch_floats, .decode = decode,
};
