// ffn_moe: mixture-of-experts FFN. Router logits u = h·routerᵀ (E); scores s = softmax(u) or sigmoid(u);
// each token picks the top-k experts by s + b (b: selection bias, only with balance=bias, no gradient) — or,
// with balance=qb, by the logits u + b — and weighs them by s renormalised over the chosen k;
// out += Σ_j w_j·expert_j(h) + shared(h). No token is
// dropped: tokens are counting-sorted by expert, each expert runs its GEMMs on its contiguous block, and
// outputs are scatter-added back. Optional Switch auxiliary loss coef·E·Σ_e f_e·P_e (f_e = fraction of routed
// slots, constant; P_e = mean normalised score). Top-k indices are constants in backward.
// Not responsible for the optimizer's treatment of the tensors (their groups say it), for logging, or for the
// balancing formulas (model/moe_balance.c; this module feeds them statistics and applies them after a step).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "model/block.h"
#include "model/linear.h"
#include "model/mlp.h"
#include "model/moe_balance.h"

enum { W_ROUTER = 0 };

typedef struct {
    float *hdr;        // [aux loss, tokens per expert (E), with balance=qb the batch's QB prices (E)]
    float *s;          // (BT, E) scores
    int32_t *idx;      // (BT, K) chosen experts
    float *wts;        // (BT, K) combine weights
    int32_t *order;    // (BT·K) slot ids t·K+j grouped by expert, ascending within an expert
    int32_t *offset;   // (E+1) first row of each expert in order
    float *mlp;        // expert MLP saved block over the BT·K sorted rows
    float *ys;         // (BT·K, C) expert outputs, sorted rows
    float *shared;     // shared expert's saved block (BT rows)
} saved_views;

static size_t shared_width(const model_config *c) { return c->n_shared * c->expert_hidden; }
static bool has_bias(const model_config *c) { return c->bias_balance || c->qb_balance; }
static size_t first_expert(const model_config *c) { return 1 + (has_bias(c) ? 1 : 0); }
static size_t al(size_t n) { return (n + 15) & ~(size_t)15; }

static size_t carve(const model_config *c, size_t BT, float *p, saved_views *v) {
    size_t E = c->n_expert, K = c->top_k, C = c->width, off = 0;
    const size_t sizes[] = {1 + E + (c->qb_balance ? E : 0), BT * E, BT * K, BT * K, BT * K, E + 1,
                            mlp_saved_floats(c->mlp, BT * K, c->expert_hidden), BT * K * C,
                            mlp_saved_floats(c->mlp, BT, shared_width(c))};
    saved_views unused;   // sizing only (v == NULL, p == NULL): the views go nowhere
    if (!v) v = &unused;
    void **dst[] = {(void **)&v->hdr, (void **)&v->s, (void **)&v->idx, (void **)&v->wts, (void **)&v->order,
                    (void **)&v->offset, (void **)&v->mlp, (void **)&v->ys, (void **)&v->shared};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        *dst[i] = p ? p + off : NULL;
        off += al(sizes[i]);
    }
    return off;
}

static size_t saved_floats(const model_config *c, size_t BT) { return carve(c, BT, NULL, NULL); }

// Backward scratch: gathered inputs, output grads and input grads of the sorted rows (3·BT·K·C), the MLP
// scratch (max of experts and shared), slot-weight grads (BT·K) and score grads (BT·E).
static size_t scratch_floats(const model_config *c, size_t BT) {
    size_t K = c->top_k, a = mlp_saved_floats(c->mlp, BT * K, c->expert_hidden);
    size_t b = mlp_saved_floats(c->mlp, BT, shared_width(c));
    return al(3 * BT * K * c->width) + al(a > b ? a : b) + al(BT * K) + al(BT * c->n_expert);
}

static sx_status declare(const model_config *c, size_t layer, param_table *t) {
    char name[48];
    float std = 1.0f / sqrtf((float)c->width);
    size_t C = c->width;
    snprintf(name, sizeof name, "l%zu.router", layer);
    sx_status s = param_table_add(t, name, c->n_expert, C, INIT_NORMAL, std, PGROUP_EMBED);
    if (!s && has_bias(c)) {
        snprintf(name, sizeof name, "l%zu.router_bias", layer);
        s = param_table_add(t, name, 1, c->n_expert, INIT_ZERO, 0, PGROUP_GAIN);
    }
    for (size_t e = 0; e <= c->n_expert && !s; e++) {
        char prefix[24];
        size_t F = c->expert_hidden;
        if (e == c->n_expert) {
            if (!c->n_shared) break;
            snprintf(prefix, sizeof prefix, "shared");
            F = shared_width(c);
        } else {
            snprintf(prefix, sizeof prefix, "e%zu", e);
        }
        if (c->mlp == MLP_SWIGLU) {
            snprintf(name, sizeof name, "l%zu.%s.w_gate", layer, prefix);
            s = param_table_add(t, name, F, C, INIT_NORMAL, std, PGROUP_MATRIX);
        }
        snprintf(name, sizeof name, "l%zu.%s.w_up", layer, prefix);
        if (!s) s = param_table_add(t, name, F, C, INIT_NORMAL, std, PGROUP_MATRIX);
        snprintf(name, sizeof name, "l%zu.%s.w_down", layer, prefix);
        if (!s) s = param_table_add(t, name, C, F, INIT_ZERO, 0, PGROUP_MATRIX);
    }
    return s;
}

// Scores in place: softmax over each row, or elementwise sigmoid.
static void scores(const model_config *c, size_t BT, float *s) {
    size_t E = c->n_expert;
    for (size_t t = 0; t < BT; t++) {
        float *r = s + t * E;
        if (c->router_sigmoid) {
            for (size_t e = 0; e < E; e++) r[e] = 1.0f / (1.0f + expf(-r[e]));
            continue;
        }
        float mx = r[0];
        for (size_t e = 1; e < E; e++) mx = fmaxf(mx, r[e]);
        double z = 0;
        for (size_t e = 0; e < E; e++) z += r[e] = expf(r[e] - mx);
        for (size_t e = 0; e < E; e++) r[e] = (float)(r[e] / z);
    }
}

// The chosen experts' combine weights (scores renormalised over the K), tokens per expert, and the counting
// sort of slots by expert.
static void combine(const model_config *c, size_t BT, const saved_views *v) {
    size_t E = c->n_expert, K = c->top_k;
    float *counts = v->hdr + 1;
    memset(counts, 0, E * sizeof *counts);
    for (size_t t = 0; t < BT; t++) {
        const float *s = v->s + t * E;
        const int32_t *idx = v->idx + t * K;
        double sum = 0;
        for (size_t j = 0; j < K; j++) sum += s[idx[j]], counts[idx[j]] += 1;
        for (size_t j = 0; j < K; j++) v->wts[t * K + j] = (float)(s[idx[j]] / sum);
    }
    v->offset[0] = 0;
    for (size_t e = 0; e < E; e++) v->offset[e + 1] = v->offset[e] + (int32_t)counts[e];
    int32_t next[4097];
    memcpy(next, v->offset, E * sizeof *next);
    for (size_t slot = 0; slot < BT * K; slot++) v->order[next[v->idx[slot]]++] = (int32_t)slot;
}

// Rows of the sorted slot list: dst[r] = src[token of slot order[r]] (each C floats).
static void gather(const model_config *c, size_t rows, const int32_t *order, const float *src, float *dst) {
    size_t C = c->width, K = c->top_k;
    for (size_t r = 0; r < rows; r++) memcpy(dst + r * C, src + (size_t)(order[r] / (int32_t)K) * C, C * sizeof *dst);
}

// P_e = mean over tokens of the normalised score (s itself for softmax, s/Σs for sigmoid), f_e = counts/(K·BT).
static double aux_value(const model_config *c, size_t BT, const saved_views *v) {
    size_t E = c->n_expert;
    double total = 0;
    for (size_t t = 0; t < BT; t++) {
        const float *s = v->s + t * E;
        double z = 0;
        for (size_t e = 0; e < E; e++) z += s[e];
        for (size_t e = 0; e < E; e++) total += v->hdr[1 + e] / (double)(c->top_k * BT) * s[e] / z;
    }
    return c->aux_coef * (double)E * total / (double)BT;
}

static void forward(const block_shape *s, float *const *w, const float *h, float *out, float *saved, float *scratch) {
    const model_config *c = s->cfg;
    size_t BT = s->B * s->T, E = c->n_expert, K = c->top_k, C = c->width, F = c->expert_hidden;
    size_t nt = mlp_tensor_count(c->mlp), first = first_expert(c);
    saved_views v;
    carve(c, BT, saved, &v);
    linear_forward(BT, C, E, h, w[W_ROUTER], v.s, false);   // u; the scores replace it below
    if (c->qb_balance) {   // QB selects on u + b, and prices this batch's experts from u (scratch: 2·BT floats)
        float *alpha = scratch, *col = scratch + BT;
        moe_choose(BT, E, K, v.s, w[1], v.idx, alpha);
        moe_qb_prices(BT, E, K, v.s, alpha, col, v.hdr + 1 + E);
    }
    scores(c, BT, v.s);
    if (!c->qb_balance) moe_choose(BT, E, K, v.s, c->bias_balance ? w[1] : NULL, v.idx, NULL);
    combine(c, BT, &v);
    float *xs = scratch;
    gather(c, BT * K, v.order, h, xs);
    for (size_t e = 0; e < E; e++) {
        size_t r0 = (size_t)v.offset[e], n = (size_t)v.offset[e + 1] - r0;
        mlp_forward(c->mlp, n, C, F, xs + r0 * C, w + first + e * nt, v.mlp + r0 * F * nt, v.ys + r0 * C, false);
    }
    for (size_t r = 0; r < BT * K; r++) {
        size_t slot = (size_t)v.order[r];
        float wt = v.wts[slot], *o = out + slot / K * C;
        const float *y = v.ys + r * C;
        for (size_t i = 0; i < C; i++) o[i] += wt * y[i];
    }
    if (c->n_shared) mlp_forward(c->mlp, BT, C, shared_width(c), h, w + first + E * nt, v.shared, out, true);
    v.hdr[0] = c->aux_coef > 0 ? (float)aux_value(c, BT, &v) : 0.0f;
}

// Router backward: ds from the combine weights (through the renormalisation) and the auxiliary loss, then
// through the scores to du (BT,E) (overwritten).
static void router_backward(const block_shape *sh, const saved_views *v, const float *dwts, float *du) {
    const model_config *c = sh->cfg;
    size_t BT = sh->B * sh->T, E = c->n_expert, K = c->top_k;
    for (size_t t = 0; t < BT; t++) {
        const float *s = v->s + t * E, *wt = v->wts + t * K, *dw = dwts + t * K;
        const int32_t *idx = v->idx + t * K;
        float *ds = du + t * E;
        memset(ds, 0, E * sizeof *ds);
        double S = 0, m = 0;
        for (size_t j = 0; j < K; j++) S += s[idx[j]], m += (double)dw[j] * wt[j];
        for (size_t j = 0; j < K; j++) ds[idx[j]] = (float)((dw[j] - m) / S);
        if (c->aux_coef > 0) {   // ∂aux/∂p_e = coef·E·f_e/BT, p = s/Σs
            double z = 0, pg = 0, gp[4096];
            for (size_t e = 0; e < E; e++) z += s[e];
            for (size_t e = 0; e < E; e++) {
                gp[e] = sh->grad_scale * c->aux_coef * (double)E * v->hdr[1 + e] / (double)(K * BT) / (double)BT;
                pg += gp[e] * s[e] / z;
            }
            for (size_t e = 0; e < E; e++) ds[e] += (float)((gp[e] - pg) / z);
        }
        if (c->router_sigmoid) {
            for (size_t e = 0; e < E; e++) ds[e] *= s[e] * (1.0f - s[e]);
        } else {
            double sd = 0;
            for (size_t e = 0; e < E; e++) sd += (double)s[e] * ds[e];
            for (size_t e = 0; e < E; e++) ds[e] = s[e] * (float)(ds[e] - sd);
        }
    }
}

static void backward(const block_shape *s, float *const *w, float *const *dw, const float *h, const float *dout,
                     float *dh, const float *saved, float *scratch) {
    const model_config *c = s->cfg;
    size_t BT = s->B * s->T, E = c->n_expert, K = c->top_k, C = c->width, F = c->expert_hidden, R = BT * K;
    size_t nt = mlp_tensor_count(c->mlp), first = first_expert(c);
    saved_views v;
    carve(c, BT, (float *)saved, &v);
    size_t a = mlp_saved_floats(c->mlp, R, F), b = mlp_saved_floats(c->mlp, BT, shared_width(c));
    float *xs = scratch, *dys = xs + R * C, *dxs = dys + R * C, *mlp_scratch = scratch + al(3 * R * C);
    float *dwts = mlp_scratch + al(a > b ? a : b), *du = dwts + al(R);
    if (c->n_shared)
        mlp_backward(c->mlp, BT, C, shared_width(c), h, w + first + E * nt, dw + first + E * nt, v.shared, dout, dh,
                     false, mlp_scratch);
    else
        memset(dh, 0, BT * C * sizeof *dh);
    for (size_t r = 0; r < R; r++) {
        size_t slot = (size_t)v.order[r];
        const float *g = dout + slot / K * C, *y = v.ys + r * C;
        double d = 0;
        for (size_t i = 0; i < C; i++) d += (double)g[i] * y[i], dys[r * C + i] = v.wts[slot] * g[i];
        dwts[slot] = (float)d;
    }
    gather(c, R, v.order, h, xs);
    for (size_t e = 0; e < E; e++) {
        size_t r0 = (size_t)v.offset[e], n = (size_t)v.offset[e + 1] - r0;
        mlp_backward(c->mlp, n, C, F, xs + r0 * C, w + first + e * nt, dw + first + e * nt, v.mlp + r0 * F * nt,
                     dys + r0 * C, dxs + r0 * C, false, mlp_scratch);
    }
    for (size_t r = 0; r < R; r++) {
        float *o = dh + (size_t)v.order[r] / K * C;
        for (size_t i = 0; i < C; i++) o[i] += dxs[r * C + i];
    }
    router_backward(s, &v, dwts, du);
    linear_backward(BT, C, E, h, w[W_ROUTER], du, dw[W_ROUTER], dh, true);
}

// Per layer: tokens per expert (E); with balance=qb also the QB prices summed over forwards (E) and the
// number of forwards (1) — summed over micro-batches and ranks, their mean is the step's price.
static size_t n_stats(const model_config *c) { return c->n_expert * (c->qb_balance ? 2 : 1) + (c->qb_balance ? 1 : 0); }

static void stats(const model_config *c, size_t BT, const float *saved, float *acc) {
    saved_views v;
    carve(c, BT, (float *)saved, &v);
    size_t E = c->n_expert;
    for (size_t e = 0; e < E; e++) acc[e] += v.hdr[1 + e];
    if (!c->qb_balance) return;
    for (size_t e = 0; e < E; e++) acc[E + e] += v.hdr[1 + E + e];
    acc[2 * E] += 1;
}

static double aux_loss(const model_config *c, size_t BT, const float *saved) {
    saved_views v;
    carve(c, BT, (float *)saved, &v);
    return v.hdr[0];
}

// The selection bias after an optimizer step (model/moe_balance.h): DeepSeek's sign step from the loads, or
// QB's prices.
static void after_step(const model_config *c, float *const *w, const float *acc) {
    size_t E = c->n_expert;
    if (c->bias_balance) moe_bias_sign_update(E, c->bias_rate, acc, w[1]);
    if (c->qb_balance && acc[2 * E] > 0) moe_qb_bias(E, acc + E, acc[2 * E], w[1]);
}

const block_module ffn_moe_module = {
    .name = "moe", .declare = declare, .saved_floats = saved_floats, .scratch_floats = scratch_floats,
    .forward = forward, .backward = backward, .n_stats = n_stats, .stats = stats, .aux_loss = aux_loss,
    .after_step = after_step,
};
