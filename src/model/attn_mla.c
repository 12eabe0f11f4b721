// attn_mla: multi-head latent attention (DeepSeek-V2/V3), trained in the naive (materialised K, V) form.
// Per token: c_kv = [rmsnorm](h·wdkvᵀ) (d_c); k_rope = RoPE(h·wkrᵀ) (d_rope, shared by all heads);
// k_h = [k_rope ; c_kv·wuk_hᵀ (d_nope)], v_h = c_kv·wuv_hᵀ (hd); q = h·wqᵀ, or q = ([rmsnorm](h·wdqᵀ))·wuqᵀ with a
// query latent d_cq; q_h = [RoPE(q_h[0:d_rope]) ; q_h[d_rope:]]. Attention with scale 1/sqrt(d_rope + d_nope)
// (window, soft-cap and output gate per attn_common; XSA against v_h, kernels/xsa.h); out += a·woᵀ. When d_rope + d_nope ≠ hd, q, k and v are
// zero-padded to D = max of the two inside the attention kernel (zeros change neither scores nor outputs).
// Cached decode runs the "absorbed" form: a cache row is [k_rope (d_rope) ; c_kv (d_c)] (d_rope + d_c floats
// per position and layer, shared by all heads); each head's query becomes q̃_h = [q_rope,h ; wuk_hᵀ·q_nope,h]
// against the whole row, its values are the latent part, and the output wuv_h·Σ p·c_kv is projected after
// (XSA recomputes the new position's own v_h = c_kv·wuv_hᵀ).
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "kernels/attention.h"
#include "kernels/gemm.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/xsa.h"
#include "model/attn_common.h"
#include "model/block.h"
#include "model/linear.h"

#define LATENT_NORM_EPS 1e-6f

typedef struct { long wdq, q_norm, wq, wdkv, kv_norm, wkr, wuk, wuv, wo, wg; } tensor_ids;
typedef struct { size_t H, hd, rd, nd, dqk, D, dc, dcq; bool norm; } dims;

static dims dims_of(const model_config *c) {
    dims d = {.H = c->n_head, .hd = c->head_dim, .rd = c->mla_rope, .nd = c->mla_nope, .dc = c->mla_dc,
              .dcq = c->mla_dcq, .norm = c->mla_latent_norm};
    d.dqk = d.rd + d.nd;
    d.D = d.dqk > d.hd ? d.dqk : d.hd;
    return d;
}

// Tensor indices within the module's list (−1: absent), in declaration order.
static tensor_ids ids_of(const model_config *c) {
    dims d = dims_of(c);
    tensor_ids t = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    long n = 0;
    if (d.dcq) { t.wdq = n++; if (d.norm) t.q_norm = n++; }
    t.wq = n++;
    t.wdkv = n++;
    if (d.norm) t.kv_norm = n++;
    if (d.rd) t.wkr = n++;
    if (d.nd) t.wuk = n++;
    t.wuv = n++;
    t.wo = n++;
    if (c->attn_gate) t.wg = n;
    return t;
}

static sx_status declare(const model_config *c, size_t layer, param_table *t) {
    dims d = dims_of(c);
    size_t C = c->width, qin = d.dcq ? d.dcq : C;
    const struct { const char *n; size_t rows, cols; param_init init; param_group g; bool on; } tensors[] = {
        {"wdq", d.dcq, C, INIT_NORMAL, PGROUP_MATRIX, d.dcq > 0},
        {"q_norm", 1, d.dcq, INIT_ONES, PGROUP_GAIN, d.dcq > 0 && d.norm},
        {d.dcq ? "wuq" : "wq", d.H * d.dqk, qin, INIT_NORMAL, PGROUP_MATRIX, true},
        {"wdkv", d.dc, C, INIT_NORMAL, PGROUP_MATRIX, true},
        {"kv_norm", 1, d.dc, INIT_ONES, PGROUP_GAIN, d.norm},
        {"wkr", d.rd, C, INIT_NORMAL, PGROUP_MATRIX, d.rd > 0},
        {"wuk", d.H * d.nd, d.dc, INIT_NORMAL, PGROUP_MATRIX, d.nd > 0},
        {"wuv", d.H * d.hd, d.dc, INIT_NORMAL, PGROUP_MATRIX, true},
        {"wo", C, d.H * d.hd, INIT_ZERO, PGROUP_MATRIX, true},
    };
    char name[48];
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) {
        if (!tensors[i].on) continue;
        snprintf(name, sizeof name, "l%zu.%s", layer, tensors[i].n);
        sx_status s = param_table_add(t, name, tensors[i].rows, tensors[i].cols, tensors[i].init,
                                      1.0f / sqrtf((float)tensors[i].cols), tensors[i].g);
        if (s) return s;
    }
    return attn_gate_declare(c, layer, t);
}

typedef struct {
    float *cq_raw, *cq, *q_rstd;     // (BT,dcq) x2, (BT); cq_raw / q_rstd only with the latent norm
    float *ckv_raw, *ckv, *kv_rstd;  // (BT,dc) x2, (BT)
    float *Q, *K, *V, *att;          // (BT,H,D) each: attention inputs (padded) and output
    float *lse;                      // (B,H,T)
    float *att_c;                    // (BT,H·hd) attention output without padding
    float *att_x;                    // with xsa: (BT,H·hd) its output
    float *att_g, *gate;             // with the gate: (BT,H·hd), (BT,G)
} saved_views;

static size_t carve(const model_config *c, size_t BT, float *p, saved_views *v) {
    dims d = dims_of(c);
    size_t qkv = BT * d.H * d.D, off = 0;
    const size_t sizes[] = {d.norm ? BT * d.dcq : 0, BT * d.dcq, d.norm && d.dcq ? BT : 0,
                            d.norm ? BT * d.dc : 0, BT * d.dc, d.norm ? BT : 0, qkv, qkv, qkv, qkv, BT * d.H,
                            BT * d.H * d.hd, c->xsa ? BT * d.H * d.hd : 0, c->attn_gate ? BT * d.H * d.hd : 0,
                            BT * attn_gate_count(c)};
    saved_views unused;   // sizing only (v == NULL, p == NULL): the views go nowhere
    if (!v) v = &unused;
    float **dst[] = {&v->cq_raw, &v->cq, &v->q_rstd, &v->ckv_raw, &v->ckv, &v->kv_rstd, &v->Q, &v->K, &v->V,
                     &v->att, &v->lse, &v->att_c, &v->att_x, &v->att_g, &v->gate};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        *dst[i] = sizes[i] && p ? p + off : NULL;
        off += sizes[i];
    }
    return off;
}

static size_t saved_floats(const model_config *c, size_t BT) { return carve(c, BT, NULL, NULL); }

// Backward scratch, in order: d_attc, d_attg, d_gate (BT, G), d_attx, dATT, dQ, dK, dV, dqf, dkn, dv, dkr,
// dckv, dckv_raw, dcq, dcq_raw. The forward uses its head for the temporaries qf, kn, v, kr.
static size_t scratch_floats(const model_config *c, size_t BT) {
    dims d = dims_of(c);
    return BT * (d.H * d.hd * 3 + attn_gate_count(c) + 4 * d.H * d.D + d.H * (d.dqk + d.nd + d.hd) + d.rd +
                 2 * d.dc + 2 * d.dcq);
}

// The attention kernels' workspace, and the latent norms' partial gain gradients.
static size_t work_floats(const model_config *c, size_t B, size_t T, size_t threads) {
    dims d = dims_of(c);
    size_t attn = attn_kernel_work_floats(c, B, T, threads, d.H, d.H, d.D);
    size_t norm = d.norm ? rmsnorm_backward_workspace_floats(B * T, d.dc > d.dcq ? d.dc : d.dcq) : 0;
    return attn > norm ? attn : norm;
}

// After attention (forward and decode): a (N, H·hd) -> [xsa against each head's own value, v_h of row t at
// v + t·v_row + h·v_head, into x] -> [gate: values into gate (N, G), output into g] -> out (N, C) += ·woᵀ.
static void output_forward(const model_config *c, size_t N, float *const *w, const float *h, const float *v,
                           size_t v_row, size_t v_head, const float *a, float *x, float *gate, float *g, float *out) {
    dims d = dims_of(c);
    tensor_ids id = ids_of(c);
    if (c->xsa) {
        xsa_forward(&(xsa_shape){N, d.H, d.H, d.hd, v_row, v_head}, a, v, x);
        a = x;
    }
    if (c->attn_gate) {
        size_t G = attn_gate_count(c);
        attn_gate_forward(N, c->width, G, d.H * d.hd / G, h, w[id.wg], a, gate, g);
        a = g;
    }
    linear_forward(N, d.H * d.hd, c->width, a, w[id.wo], out, true);
}

// dst[r, 0:width] = src[r, 0:width] for rows r, with row strides; when add, dst += src.
static void copy_cols(size_t rows, size_t width, const float *src, size_t ss, float *dst, size_t ds, bool add) {
    for (size_t r = 0; r < rows; r++)
        for (size_t i = 0; i < width; i++) dst[r * ds + i] = (add ? dst[r * ds + i] : 0.0f) + src[r * ss + i];
}

static attn_shape shape_of(const block_shape *s) {
    dims d = dims_of(s->cfg);
    return attn_layer_shape(s, d.H, d.H, d.D, 1.0f / sqrtf((float)d.dqk));
}

static void forward(const block_shape *s, float *const *w, const float *h, float *out, float *saved, float *scratch) {
    const model_config *c = s->cfg;
    dims d = dims_of(c);
    tensor_ids id = ids_of(c);
    size_t BT = s->B * s->T, C = c->width, H = d.H, rows = BT * H;
    saved_views a;
    carve(c, BT, saved, &a);
    float *qf = scratch, *kn = qf + rows * d.dqk, *v = kn + rows * d.nd, *kr = v + rows * d.hd;
    // Queries.
    if (d.dcq) {
        linear_forward(BT, C, d.dcq, h, w[id.wdq], d.norm ? a.cq_raw : a.cq, false);
        if (d.norm) rmsnorm_forward(BT, d.dcq, a.cq_raw, w[id.q_norm], LATENT_NORM_EPS, a.cq, a.q_rstd);
        linear_forward(BT, d.dcq, H * d.dqk, a.cq, w[id.wq], qf, false);
    } else {
        linear_forward(BT, C, H * d.dqk, h, w[id.wq], qf, false);
    }
    // KV latent and its up-projections; the shared rope key.
    linear_forward(BT, C, d.dc, h, w[id.wdkv], d.norm ? a.ckv_raw : a.ckv, false);
    if (d.norm) rmsnorm_forward(BT, d.dc, a.ckv_raw, w[id.kv_norm], LATENT_NORM_EPS, a.ckv, a.kv_rstd);
    if (d.nd) linear_forward(BT, d.dc, H * d.nd, a.ckv, w[id.wuk], kn, false);
    linear_forward(BT, d.dc, H * d.hd, a.ckv, w[id.wuv], v, false);
    if (d.rd) {
        linear_forward(BT, C, d.rd, h, w[id.wkr], kr, false);
        rope_forward(s->B, s->T, 1, d.rd, d.rd, s->rope_cos, s->rope_sin, kr);
    }
    // Pack the padded per-head q, k, v.
    size_t qkv = rows * d.D;
    memset(a.Q, 0, 3 * qkv * sizeof *a.Q);
    copy_cols(rows, d.dqk, qf, d.dqk, a.Q, d.D, false);
    if (d.rd) rope_forward(s->B, s->T, H, d.D, d.rd, s->rope_cos, s->rope_sin, a.Q);
    for (size_t hh = 0; hh < H; hh++) {
        copy_cols(BT, d.rd, kr, d.rd, a.K + hh * d.D, H * d.D, false);
        copy_cols(BT, d.nd, kn + hh * d.nd, H * d.nd, a.K + hh * d.D + d.rd, H * d.D, false);
    }
    copy_cols(rows, d.hd, v, d.hd, a.V, d.D, false);
    attn_shape as = shape_of(s);
    attention_forward(&as, a.Q, a.K, a.V, a.att, a.lse, s->work, s->work_floats);
    copy_cols(rows, d.hd, a.att, d.D, a.att_c, d.hd, false);
    output_forward(c, BT, w, h, a.V, H * d.D, d.D, a.att_c, a.att_x, a.gate, a.att_g, out);
}

static void backward(const block_shape *s, float *const *w, float *const *dw, const float *h, const float *dout,
                     float *dh, const float *saved, float *scratch) {
    const model_config *c = s->cfg;
    dims d = dims_of(c);
    tensor_ids id = ids_of(c);
    size_t BT = s->B * s->T, C = c->width, H = d.H, rows = BT * H, qkv = rows * d.D;
    saved_views a;
    carve(c, BT, (float *)saved, &a);
    size_t G = attn_gate_count(c);
    float *d_attc = scratch, *d_attg = d_attc + rows * d.hd, *d_gate = d_attg + rows * d.hd;
    float *d_attx = d_gate + BT * G, *dATT = d_attx + rows * d.hd, *dQ = dATT + qkv, *dK = dQ + qkv, *dV = dK + qkv;
    float *dqf = dV + qkv;
    float *dkn = dqf + rows * d.dqk, *dv = dkn + rows * d.nd, *dkr = dv + rows * d.hd, *dckv = dkr + BT * d.rd;
    float *dckv_raw = dckv + BT * d.dc, *dcq = dckv_raw + BT * d.dc, *dcq_raw = dcq + BT * d.dcq;
    // Back through output_forward's chain: wo's input, [the gate], [xsa], to the attention output.
    const float *x_out = c->xsa ? a.att_x : a.att_c;        // xsa's output = the gate's input
    float *d_x = c->xsa ? d_attx : d_attc;                  // its gradient
    float *d_wo = c->attn_gate ? d_attg : d_x;              // gradient of wo's input
    linear_backward(BT, H * d.hd, C, c->attn_gate ? a.att_g : x_out, w[id.wo], dout, dw[id.wo], d_wo, false);
    if (c->attn_gate) attn_gate_backward(BT, G, H * d.hd / G, x_out, a.gate, d_wo, d_x, d_gate);
    xsa_shape xs = {BT, H, H, d.hd, H * d.D, d.D};
    if (c->xsa) xsa_backward(&xs, a.att_c, a.V, d_x, d_attc, NULL);
    memset(dATT, 0, qkv * sizeof *dATT);
    copy_cols(rows, d.hd, d_attc, d.hd, dATT, d.D, false);
    attn_shape as = shape_of(s);
    attention_backward(&as, a.Q, a.K, a.V, a.att, a.lse, dATT, dQ, dK, dV, s->work, s->work_floats);
    if (c->xsa) xsa_backward(&xs, a.att_c, a.V, d_x, NULL, dV);
    if (d.rd) rope_backward(s->B, s->T, H, d.D, d.rd, s->rope_cos, s->rope_sin, dQ);
    copy_cols(rows, d.dqk, dQ, d.D, dqf, d.dqk, false);
    for (size_t hh = 0; hh < H; hh++) {
        copy_cols(BT, d.rd, dK + hh * d.D, H * d.D, dkr, d.rd, hh > 0);
        copy_cols(BT, d.nd, dK + hh * d.D + d.rd, H * d.D, dkn + hh * d.nd, H * d.nd, false);
    }
    if (d.rd) rope_backward(s->B, s->T, 1, d.rd, d.rd, s->rope_cos, s->rope_sin, dkr);
    copy_cols(rows, d.hd, dV, d.D, dv, d.hd, false);
    // Latent.
    linear_backward(BT, d.dc, H * d.hd, a.ckv, w[id.wuv], dv, dw[id.wuv], dckv, false);
    if (d.nd) linear_backward(BT, d.dc, H * d.nd, a.ckv, w[id.wuk], dkn, dw[id.wuk], dckv, true);
    float *g_kv = dckv;
    if (d.norm) {
        rmsnorm_backward(BT, d.dc, a.ckv_raw, w[id.kv_norm], a.kv_rstd, dckv, dckv_raw, dw[id.kv_norm], false,
                         s->work);
        g_kv = dckv_raw;
    }
    // Queries (overwrite dh first), then the latent and rope-key projections.
    if (d.dcq) {
        linear_backward(BT, d.dcq, H * d.dqk, a.cq, w[id.wq], dqf, dw[id.wq], dcq, false);
        float *g_q = dcq;
        if (d.norm) {
            rmsnorm_backward(BT, d.dcq, a.cq_raw, w[id.q_norm], a.q_rstd, dcq, dcq_raw, dw[id.q_norm], false,
                             s->work);
            g_q = dcq_raw;
        }
        linear_backward(BT, C, d.dcq, h, w[id.wdq], g_q, dw[id.wdq], dh, false);
    } else {
        linear_backward(BT, C, H * d.dqk, h, w[id.wq], dqf, dw[id.wq], dh, false);
    }
    linear_backward(BT, C, d.dc, h, w[id.wdkv], g_kv, dw[id.wdkv], dh, true);
    if (d.rd) linear_backward(BT, C, d.rd, h, w[id.wkr], dkr, dw[id.wkr], dh, true);
    if (c->attn_gate) linear_backward(BT, C, G, h, w[id.wg], d_gate, dw[id.wg], dh, true);
}

static size_t qk_dim(const model_config *c) { return c->mla_rope + c->mla_nope; }
static size_t cache_floats(const model_config *c) { return c->mla_rope + c->mla_dc; }

// Decode scratch for n rows: qf (n, H·dqk) queries, ckv_raw (n, dc), ckv (n, dc), kr (n, d_rope), cq_raw and
// cq (n, dcq), rstd (n), q (n, H, d_rope + dc) absorbed queries, lat (n, H, dc) attention output in the latent,
// att (n, H·hd) after wuv, v (n, H·hd) the rows' own values and xsa (n, H·hd) (with xsa), gate (n, G),
// gated (n, H·hd), scores (n·H, max_ctx).
typedef struct {
    float *qf, *ckv_raw, *ckv, *kr, *cq_raw, *cq, *rstd, *q, *lat, *att, *v, *xsa, *gate, *gated, *scores;
} decode_views;

static size_t decode_carve(const model_config *c, size_t n, size_t max_ctx, float *p, decode_views *v) {
    dims d = dims_of(c);
    size_t H = d.H;
    const size_t sizes[] = {n * H * d.dqk, n * d.dc, n * d.dc, n * d.rd, n * d.dcq, n * d.dcq, n,
                            n * H * (d.rd + d.dc), n * H * d.dc, n * H * d.hd, c->xsa ? n * H * d.hd : 0, c->xsa ? n * H * d.hd : 0,
                            n * attn_gate_count(c), c->attn_gate ? n * H * d.hd : 0, n * H * max_ctx};
    float **dst[] = {&v->qf, &v->ckv_raw, &v->ckv, &v->kr, &v->cq_raw, &v->cq, &v->rstd, &v->q, &v->lat, &v->att,
                     &v->v, &v->xsa, &v->gate, &v->gated, &v->scores};
    return block_carve(p, sizes, dst, sizeof sizes / sizeof *sizes, 1);
}

static size_t decode_scratch_floats(const model_config *c, size_t n, size_t max_ctx) {
    return decode_carve(c, n, max_ctx, NULL, &(decode_views){0});
}

static void decode(const decode_shape *s, float *const *w, const float *h, float *out, float *scratch) {
    const model_config *c = s->cfg;
    dims d = dims_of(c);
    tensor_ids id = ids_of(c);
    size_t n = s->n, C = c->width, H = d.H, qf_w = H * d.dqk, qd = d.rd + d.dc;
    decode_views a;
    decode_carve(c, n, s->max_ctx, scratch, &a);
    // Queries, the latent and the rope key, as in forward.
    if (d.dcq) {
        linear_forward(n, C, d.dcq, h, w[id.wdq], d.norm ? a.cq_raw : a.cq, false);
        if (d.norm) rmsnorm_forward(n, d.dcq, a.cq_raw, w[id.q_norm], LATENT_NORM_EPS, a.cq, a.rstd);
        linear_forward(n, d.dcq, qf_w, a.cq, w[id.wq], a.qf, false);
    } else {
        linear_forward(n, C, qf_w, h, w[id.wq], a.qf, false);
    }
    linear_forward(n, C, d.dc, h, w[id.wdkv], d.norm ? a.ckv_raw : a.ckv, false);
    if (d.norm) rmsnorm_forward(n, d.dc, a.ckv_raw, w[id.kv_norm], LATENT_NORM_EPS, a.ckv, a.rstd);
    if (d.rd) linear_forward(n, C, d.rd, h, w[id.wkr], a.kr, false);
    // Cache rows [k_rope ; c_kv] and the rope part of each head's query.
    for (size_t r = 0; r < n; r++) {
        if (d.rd) {
            attn_rope_at(s, H, d.dqk, d.rd, s->pos[r], a.qf + r * qf_w);
            attn_rope_at(s, 1, d.rd, d.rd, s->pos[r], a.kr + r * d.rd);
        }
        memcpy(s->slot[r], a.kr + r * d.rd, d.rd * sizeof(float));
        memcpy(s->slot[r] + d.rd, a.ckv + r * d.dc, d.dc * sizeof(float));
        for (size_t hh = 0; hh < H; hh++)
            memcpy(a.q + (r * H + hh) * qd, a.qf + r * qf_w + hh * d.dqk, d.rd * sizeof(float));
    }
    // Content part: q̃_h = q_nope,h · wuk_h (d_nope, d_c), for all rows at once per head.
    for (size_t hh = 0; hh < H; hh++) {
        float *dst = a.q + hh * qd + d.rd;
        if (d.nd)
            gemm(false, false, n, d.dc, d.nd, a.qf + hh * d.dqk + d.rd, qf_w, w[id.wuk] + hh * d.nd * d.dc, d.dc,
                 dst, H * qd, false);
        else
            for (size_t r = 0; r < n; r++) memset(dst + r * H * qd, 0, d.dc * sizeof(float));
    }
    attn_cached_forward(s, H, 1, qd, qd, d.dc, d.rd, 1.0f / sqrtf((float)d.dqk), a.q, a.scores, a.lat);
    // Per head: a_h = lat_h · wuv_hᵀ (hd), then the gate and the output projection.
    for (size_t hh = 0; hh < H; hh++)
        gemm(false, true, n, d.hd, d.dc, a.lat + hh * d.dc, H * d.dc, w[id.wuv] + hh * d.hd * d.dc, d.dc,
             a.att + hh * d.hd, H * d.hd, false);
    if (c->xsa) linear_forward(n, d.dc, H * d.hd, a.ckv, w[id.wuv], a.v, false);
    output_forward(c, n, w, h, a.v, H * d.hd, d.hd, a.att, a.xsa, a.gate, a.gated, out);
}

const block_module attn_mla_module = {
    .name = "mla", .declare = declare, .saved_floats = saved_floats, .scratch_floats = scratch_floats,
    .work_floats = work_floats,
    .forward = forward, .backward = backward, .qk_dim = qk_dim, .cache_floats = cache_floats,
    .decode_scratch_floats = decode_scratch_floats, .decode = decode,
};
