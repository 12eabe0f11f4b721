#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "infer/decode.h"
#include "kernels/embedding.h"
#include "kernels/gemm.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "model/attn_common.h"
#include "model/linear.h"
#include "scale/flops.h"

#define NORM_EPS 1e-5f
#define QK_NORM_EPS 1e-6f
#define LATENT_NORM_EPS 1e-6f
#define MAX_SPANS 4096

// What the mixer caches and how its attention reads the cache. GQA: row = [k (Hkv·hd) ; v (Hkv·hd)], query head
// h reads KV head h/(H/Hkv). MLA (absorbed): row = [k_rope (d_R) ; c_kv (d_c)] shared by all heads, keys are the
// whole row, values its latent part.
typedef struct {
    bool mla;
    size_t H, Hkv, hd;           // query heads, cached heads, value head dim of the model
    size_t row, qd, vd;          // cached floats per position; per-head query/key dim and value dim in the cache
    size_t rd, nd, dc, dcq, dqk; // MLA dims
    float scale;
} mixer_dims;

static mixer_dims dims_of(const model_config *c) {
    mixer_dims d = {.H = c->n_head, .hd = c->head_dim};
    if (c->mixer == MIXER_MLA) {
        d.mla = true;
        d.Hkv = 1;
        d.rd = c->mla_rope, d.nd = c->mla_nope, d.dc = c->mla_dc, d.dcq = c->mla_dcq, d.dqk = d.rd + d.nd;
        d.row = d.qd = d.rd + d.dc;
        d.vd = d.dc;
        d.scale = 1.0f / sqrtf((float)d.dqk);
    } else {
        d.Hkv = c->n_kv_head;
        d.qd = d.vd = d.hd;
        d.row = 2 * d.Hkv * d.hd;
        d.scale = 1.0f / sqrtf((float)d.hd);
    }
    return d;
}

static size_t key_off(const mixer_dims *d, size_t kvh) { return d->mla ? 0 : kvh * d->hd; }
static size_t val_off(const mixer_dims *d, size_t kvh) { return d->mla ? d->rd : (d->Hkv + kvh) * d->hd; }

// Scratch views for n rows.
typedef struct {
    float *x, *hn, *rstd, *q, *raw, *rstd2, *knew, *att, *a, *gate, *att_g, *cq, *cq_raw, *scores, *ffn_saved,
        *ffn_scratch;
} scratch;

static size_t carve(const decoder *d, size_t n, float *base, scratch *s) {
    const model *m = d->m;
    const model_config *c = &m->cfg;
    mixer_dims md = dims_of(c);
    size_t C = c->width, H = md.H, qraw = md.mla ? H * md.dqk : H * md.hd;
    const size_t sizes[] = {n * C, n * C, n * H, n * H * md.qd, n * (qraw + md.Hkv * md.hd + md.dc), n * (H + md.Hkv),
                            n * md.row, n * H * md.vd, n * H * md.hd, n * H, n * H * md.hd, n * md.dcq, n * md.dcq,
                            n * H * d->max_ctx, m->ffn->saved_floats(c, n), m->ffn->scratch_floats(c, n)};
    float **dst[] = {&s->x, &s->hn, &s->rstd, &s->q, &s->raw, &s->rstd2, &s->knew, &s->att, &s->a, &s->gate,
                     &s->att_g, &s->cq, &s->cq_raw, &s->scores, &s->ffn_saved, &s->ffn_scratch};
    size_t off = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        *dst[i] = base ? base + off : NULL;
        off += (sizes[i] + 15) & ~(size_t)15;
    }
    return off;
}

sx_status decoder_init(decoder *d, model *m, size_t max_ctx) {
    memset(d, 0, sizeof *d);
    d->m = m;
    d->max_ctx = max_ctx;
    mixer_dims md = dims_of(&m->cfg);
    kvcache_init(&d->cache, m->cfg.n_layer, md.row);
    size_t half = m->cfg.rope_dim / 2;
    if (half) {
        d->cos = malloc(max_ctx * half * sizeof *d->cos);
        d->sin = malloc(max_ctx * half * sizeof *d->sin);
        if (!d->cos || !d->sin) { decoder_free(d); return sx_fail(SX_ERR_NOMEM, "out of memory for RoPE tables"); }
        rope_tables(max_ctx, m->cfg.rope_dim, m->cfg.rope_base, d->cos, d->sin);
    }
    return SX_OK;
}

void decoder_free(decoder *d) {
    kvcache_free(&d->cache);
    free(d->cos);
    free(d->sin);
    sx_free(d->buf);
    memset(d, 0, sizeof *d);
}

static sx_status reserve(decoder *d, size_t n) {
    if (n <= d->cap_rows) return SX_OK;
    size_t rows = n > 2 * d->cap_rows ? n : 2 * d->cap_rows;
    scratch s;
    size_t floats = carve(d, rows, NULL, &s);
    sx_free(d->buf);
    d->buf = sx_alloc(floats * sizeof(float), "decoder scratch");
    d->cap_rows = d->buf ? rows : 0;
    return d->buf ? SX_OK : SX_ERR_NOMEM;
}

static void rope_at(size_t heads, size_t dim, size_t rot, const decoder *d, size_t pos, float *x) {
    size_t half = d->m->cfg.rope_dim / 2;
    rope_forward(1, 1, heads, dim, rot, d->cos + pos * half, d->sin + pos * half, x);
}

// Queries (n, H, qd) and the new cache rows (n, row) for GQA.
static void project_gqa(const decoder *d, float *const *w, size_t n, const size_t *pos, scratch *s) {
    const model_config *c = &d->m->cfg;
    mixer_dims md = dims_of(c);
    size_t C = c->width, qdim = md.H * md.hd, kdim = md.Hkv * md.hd;
    float *k = s->raw + n * qdim;   // (n, kdim) projected keys before they go into the row
    if (c->qk_norm) {
        linear_forward(n, C, qdim, s->hn, w[0], s->raw, false);
        rmsnorm_forward(n * md.H, md.hd, s->raw, NULL, QK_NORM_EPS, s->q, s->rstd2);
        linear_forward(n, C, kdim, s->hn, w[1], s->att, false);
        rmsnorm_forward(n * md.Hkv, md.hd, s->att, NULL, QK_NORM_EPS, k, s->rstd2);
    } else {
        linear_forward(n, C, qdim, s->hn, w[0], s->q, false);
        linear_forward(n, C, kdim, s->hn, w[1], k, false);
    }
    linear_forward(n, C, kdim, s->hn, w[2], s->att, false);   // v, staged in att
    for (size_t r = 0; r < n; r++) {
        if (c->rope_dim) {
            rope_at(md.H, md.hd, c->rope_dim, d, pos[r], s->q + r * qdim);
            rope_at(md.Hkv, md.hd, c->rope_dim, d, pos[r], k + r * kdim);
        }
        memcpy(s->knew + r * md.row, k + r * kdim, kdim * sizeof(float));
        memcpy(s->knew + r * md.row + kdim, s->att + r * kdim, kdim * sizeof(float));
    }
}

// MLA tensor indices within the module's list, as attn_mla.c declares them.
typedef struct { int wdq, q_norm, wq, wdkv, kv_norm, wkr, wuk, wuv, wo, wg; } mla_ids;
static mla_ids mla_ids_of(const model_config *c) {
    mla_ids t = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    int n = 0;
    if (c->mla_dcq) { t.wdq = n++; if (c->mla_latent_norm) t.q_norm = n++; }
    t.wq = n++;
    t.wdkv = n++;
    if (c->mla_latent_norm) t.kv_norm = n++;
    if (c->mla_rope) t.wkr = n++;
    if (c->mla_nope) t.wuk = n++;
    t.wuv = n++;
    t.wo = n++;
    if (c->attn_gate) t.wg = n;
    return t;
}

// Absorbed queries q̃ (n, H, d_R + d_c) and the new cache rows [k_rope ; c_kv] (n, row) for MLA.
static void project_mla(const decoder *d, float *const *w, size_t n, const size_t *pos, scratch *s) {
    const model_config *c = &d->m->cfg;
    mixer_dims md = dims_of(c);
    mla_ids id = mla_ids_of(c);
    size_t C = c->width, H = md.H, qf_w = H * md.dqk;
    float *qf = s->raw, *ckv_raw = qf + n * qf_w, *kr = ckv_raw + n * md.dc;   // kr uses the hd slot (rd ≤ hd)
    if (md.dcq) {
        linear_forward(n, C, md.dcq, s->hn, w[id.wdq], c->mla_latent_norm ? s->cq_raw : s->cq, false);
        if (c->mla_latent_norm) rmsnorm_forward(n, md.dcq, s->cq_raw, w[id.q_norm], LATENT_NORM_EPS, s->cq, s->rstd2);
        linear_forward(n, md.dcq, qf_w, s->cq, w[id.wq], qf, false);
    } else {
        linear_forward(n, C, qf_w, s->hn, w[id.wq], qf, false);
    }
    float *ckv = s->att;   // (n, dc) staged
    linear_forward(n, C, md.dc, s->hn, w[id.wdkv], c->mla_latent_norm ? ckv_raw : ckv, false);
    if (c->mla_latent_norm) rmsnorm_forward(n, md.dc, ckv_raw, w[id.kv_norm], LATENT_NORM_EPS, ckv, s->rstd2);
    if (md.rd) linear_forward(n, C, md.rd, s->hn, w[id.wkr], kr, false);
    for (size_t r = 0; r < n; r++) {
        if (md.rd) {
            rope_at(H, md.dqk, md.rd, d, pos[r], qf + r * qf_w);
            rope_at(1, md.rd, md.rd, d, pos[r], kr + r * md.rd);
        }
        memcpy(s->knew + r * md.row, kr + r * md.rd, md.rd * sizeof(float));
        memcpy(s->knew + r * md.row + md.rd, ckv + r * md.dc, md.dc * sizeof(float));
        for (size_t h = 0; h < H; h++)
            memcpy(s->q + (r * H + h) * md.qd, qf + r * qf_w + h * md.dqk, md.rd * sizeof(float));
    }
    // Content part: q̃_h = q_nope,h · wuk_h (d_nope, d_c), for all rows at once per head.
    for (size_t h = 0; h < H; h++) {
        float *dst = s->q + h * md.qd + md.rd;
        if (md.nd)
            gemm(false, false, n, md.dc, md.nd, qf + h * md.dqk + md.rd, qf_w, w[id.wuk] + h * md.nd * md.dc, md.dc,
                 dst, H * md.qd, false);
        else
            for (size_t r = 0; r < n; r++) memset(dst + r * H * md.qd, 0, md.dc * sizeof(float));
    }
}

// One query head of one row against the cache: overwrites out (vd) with softmax(scale·q·k)·v.
static void attend(const decoder *d, const mixer_dims *md, int seq, size_t layer, size_t pos, size_t h,
                   const float *q, float *scores, float *out) {
    const model_config *c = &d->m->cfg;
    kv_span spans[MAX_SPANS];
    size_t ns = kvcache_spans(&d->cache, seq, layer, pos + 1, spans, MAX_SPANS);
    size_t window = model_config_layer_is_local(c, layer) ? c->window : 0;
    size_t first = window && pos + 1 > window ? pos + 1 - window : 0, kvh = h / (md->H / md->Hkv);
    size_t ko = key_off(md, kvh), vo = val_off(md, kvh);
    float cap = c->attn_softcap, mx = -INFINITY;
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < spans[i].n; j++) {
            size_t p = spans[i].pos0 + j;
            if (p < first) continue;
            const float *k = spans[i].rows + j * md->row + ko;
            float dot = 0;
            for (size_t e = 0; e < md->qd; e++) dot += q[e] * k[e];
            float z = dot * md->scale;
            if (cap > 0) z = cap * tanhf(z / cap);
            scores[p] = z;
            mx = z > mx ? z : mx;
        }
    double sum = 0;
    for (size_t p = first; p <= pos; p++) sum += (scores[p] = expf(scores[p] - mx));
    memset(out, 0, md->vd * sizeof *out);
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < spans[i].n; j++) {
            size_t p = spans[i].pos0 + j;
            if (p < first) continue;
            float wgt = (float)(scores[p] / sum);
            const float *v = spans[i].rows + j * md->row + vo;
            for (size_t e = 0; e < md->vd; e++) out[e] += wgt * v[e];
        }
}

static void mixer_forward(decoder *d, size_t layer, float *const *w, size_t n, const int *seq, const size_t *pos,
                          scratch *s) {
    const model_config *c = &d->m->cfg;
    mixer_dims md = dims_of(c);
    size_t H = md.H, C = c->width;
    if (md.mla) project_mla(d, w, n, pos, s);
    else project_gqa(d, w, n, pos, s);
    for (size_t r = 0; r < n; r++)
        memcpy(kvcache_row(&d->cache, seq[r], layer, pos[r]), s->knew + r * md.row, md.row * sizeof(float));
    #pragma omp parallel for schedule(dynamic, 1) if (n * H > 8)
    for (size_t rh = 0; rh < n * H; rh++) {
        size_t r = rh / H, h = rh % H;
        attend(d, &md, seq[r], layer, pos[r], h, s->q + rh * md.qd, s->scores + rh * d->max_ctx,
               s->att + rh * md.vd);
    }
    float *a = s->att;
    int wo = 3, wg = 4;
    if (md.mla) {
        mla_ids id = mla_ids_of(c);
        for (size_t h = 0; h < H; h++)
            gemm(false, true, n, md.hd, md.dc, s->att + h * md.dc, H * md.dc, w[id.wuv] + h * md.hd * md.dc, md.dc,
                 s->a + h * md.hd, H * md.hd, false);
        a = s->a;
        wo = id.wo, wg = id.wg;
    }
    if (c->attn_gate) {
        attn_gate_forward(n, C, H, md.hd, s->hn, w[wg], a, s->gate, s->att_g);
        a = s->att_g;
    }
    linear_forward(n, H * md.hd, C, a, w[wo], s->x, true);
}

sx_status decoder_forward(decoder *d, size_t n, const int *seq, const int32_t *tok, float *logits) {
    model *m = d->m;
    const model_config *c = &m->cfg;
    size_t C = c->width, V = c->vocab;
    if (n == 0) return SX_OK;
    sx_status st = reserve(d, n);
    if (st) return st;
    size_t *pos = malloc(n * sizeof *pos);
    if (!pos) return sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t r = 0; r < n; r++) {
        if (kvcache_len(&d->cache, seq[r]) >= d->max_ctx) {
            free(pos);
            return sx_fail(SX_ERR_ARG, "sequence %d is full (context %zu)", seq[r], d->max_ctx);
        }
        pos[r] = kvcache_append(&d->cache, seq[r]);
        if (pos[r] == (size_t)-1) { free(pos); return SX_ERR_NOMEM; }
        assert(tok[r] >= 0 && (size_t)tok[r] < V);
    }
    scratch s;
    carve(d, d->cap_rows, d->buf, &s);
    embedding_forward(n, C, tok, m->p[m->emb], s.x);
    block_shape bs = {.cfg = c, .B = n, .T = 1, .grad_scale = 1.0f};
    for (size_t l = 0; l < c->n_layer; l++) {
        size_t first = m->layer_first[l];
        rmsnorm_forward(n, C, s.x, m->p[first], NORM_EPS, s.hn, s.rstd);
        mixer_forward(d, l, m->p + first + 1, n, seq, pos, &s);
        size_t f = first + 1 + m->mixer_tensors;
        rmsnorm_forward(n, C, s.x, m->p[f], NORM_EPS, s.hn, s.rstd);
        bs.layer = l;
        m->ffn->forward(&bs, m->p + f + 1, s.hn, s.x, s.ffn_saved, s.ffn_scratch);
    }
    double flops = 0;
    for (size_t r = 0; r < n; r++) flops += decoder_flops_per_token(m, pos[r] + 1);
    d->flops += flops;
    d->tokens += n;
    free(pos);
    if (!logits) return SX_OK;
    rmsnorm_forward(n, C, s.x, m->p[m->norm_f], NORM_EPS, s.hn, s.rstd);
    linear_forward(n, C, V, s.hn, m->p[m->head], logits, false);
    if (c->softcap > 0)
        for (size_t i = 0; i < n * V; i++) logits[i] = c->softcap * tanhf(logits[i] / c->softcap);
    return SX_OK;
}

sx_status decoder_prefill(decoder *d, int seq, const int32_t *tokens, size_t n, float *last_logits) {
    size_t V = d->m->cfg.vocab;
    int *seqs = calloc(n ? n : 1, sizeof *seqs);
    float *logits = malloc(n * V * sizeof *logits);
    sx_status st = seqs && logits ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !st; i++) seqs[i] = seq;
    if (!st) st = decoder_forward(d, n, seqs, tokens, logits);
    if (!st && n) memcpy(last_logits, logits + (n - 1) * V, V * sizeof *logits);
    free(seqs);
    free(logits);
    return st;
}

double decoder_flops_per_token(const model *m, size_t ctx) {
    const model_config *c = &m->cfg;
    model_flops f = model_flops_count(c, 1);
    size_t qk = c->mixer == MIXER_MLA ? c->mla_rope + c->mla_nope : c->head_dim;
    double attn = 0;
    for (size_t l = 0; l < c->n_layer; l++) {
        size_t keys = model_config_layer_is_local(c, l) && ctx > c->window ? c->window : ctx;
        attn += 2.0 * (double)keys * (double)c->n_head * (double)(qk + c->head_dim);
    }
    return f.fwd_matmul_per_token + attn;
}
