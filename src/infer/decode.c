#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "core/threads.h"
#include "infer/decode.h"
#include "kernels/embedding.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "model/bigram.h"
#include "model/linear.h"
#include "model/smear.h"
#include "model/flops.h"
#include "model/gatednorm.h"

// Scratch views for n rows: the residual stream, a norm's output and rstd, the mixer's decode scratch, the
// FFN's saved block and scratch (the FFN decodes through its training forward with B = n, T = 1), and with
// smear the previous positions' input embeddings; with gnorm<R> GatedNorm's saved block and scratch (empty
// otherwise).
typedef struct { float *x, *hn, *rstd, *mixer, *ffn_saved, *ffn_scratch, *prev, *gate_saved, *gate_scratch; } scratch;

static size_t carve(const decoder *d, size_t n, float *base, scratch *s) {
    const model *m = d->m;
    const model_config *c = &m->cfg;
    const size_t sizes[] = {n * c->width, n * c->width, n, m->mixer->decode_scratch_floats(c, n, d->max_ctx),
                            m->ffn->saved_floats(c, n), m->ffn->scratch_floats(c, n), c->smear ? n * c->width : 0,
                            c->gnorm_rank ? gatednorm_saved_floats(c, n) : 0,
                            c->gnorm_rank ? gatednorm_scratch_floats(c, n) : 0};
    float **dst[] = {&s->x, &s->hn, &s->rstd, &s->mixer, &s->ffn_saved, &s->ffn_scratch, &s->prev, &s->gate_saved,
                     &s->gate_scratch};
    return block_carve(base, sizes, dst, sizeof sizes / sizeof *sizes, 16);
}

// The weight matrices linear_forward multiplies: every 2-D tensor but the gains and the tables that are only
// looked up (the token and value embeddings, one row per token id, and the bigram table; the tied embedding
// is the head). None with int8 weights, whose products read the int8 copy.
static bool multiplied(const model *m, size_t i) {
    const param_spec *s = &m->table.v[i];
    if (m->q8 || s->rows < 2 || s->cols < 2 || s->group == PGROUP_GAIN) return false;
    bool table = s->rows == m->cfg.vocab || (m->cfg.bigram_rows && i == m->bigram);
    return s->group != PGROUP_EMBED || !table || i == m->head;
}

// Packs every multiplied weight W (out, in) as gemm() reads it in linear_forward (op(B) = Wᵀ) into one block
// of panels the decoder owns.
static sx_status pack_weights(decoder *d) {
    const model *m = d->m;
    size_t n = 0, bytes = 0;
    for (size_t i = 0; i < m->table.n; i++) {
        if (!multiplied(m, i)) continue;
        size_t b = gemm_packed_b_bytes(m->table.v[i].cols, m->table.v[i].rows);
        if (b == SIZE_MAX || __builtin_add_overflow(bytes, (b + 63) / 64 * 64, &bytes))
            return sx_fail(SX_ERR_ARG, "the model's weights are too large to pack");
        n++;
    }
    gemm_packed_b *v = sx_calloc_n(n ? n : 1, sizeof *v, "decode packed weights");
    d->panels = bytes ? sx_alloc_huge(bytes, "decode weight panels") : NULL;
    d->packed = (linear_packed_set){v, 0};
    if (!v || (bytes && !d->panels)) return sx_fail(SX_ERR_NOMEM, "out of memory for the packed weights");
    unsigned char *at = d->panels;
    for (size_t i = 0; i < m->table.n; i++) {
        if (!multiplied(m, i)) continue;
        const param_spec *s = &m->table.v[i];
        size_t b = (gemm_packed_b_bytes(s->cols, s->rows) + 63) / 64 * 64;
        gemm_pack_b(&v[d->packed.n++], at, b, true, s->cols, s->rows, m->p[i], s->cols);
        at += b;
    }
    return SX_OK;
}

sx_status decoder_init(decoder *d, model *m, size_t max_ctx) {
    memset(d, 0, sizeof *d);
    d->m = m;
    d->max_ctx = max_ctx;
    kvcache_init(&d->cache, m->cfg.n_layer, m->mixer->cache_floats(&m->cfg));
    size_t half = m->cfg.rope_dim / 2;
    if (half) {
        d->cos = sx_alloc(max_ctx * half * sizeof *d->cos, "decode d.cos");
        d->sin = sx_alloc(max_ctx * half * sizeof *d->sin, "decode d.sin");
        if (!d->cos || !d->sin) { decoder_free(d); return sx_fail(SX_ERR_NOMEM, "out of memory for RoPE tables"); }
        rope_tables(max_ctx, m->cfg.rope_dim, m->cfg.rope_base, d->cos, d->sin);
    }
    sx_status st = pack_weights(d);
    if (st) decoder_free(d);
    return st;
}

void decoder_free(decoder *d) {
    kvcache_free(&d->cache);
    free(d->cos);
    free(d->sin);
    sx_free(d->buf);
    sx_free(d->gemm_work.buf);
    free((void *)d->packed.v);
    sx_free(d->panels);
    sx_free(d->row_buf);
    sx_free(d->span_buf);
    memset(d, 0, sizeof *d);
}

static sx_status reserve(decoder *d, size_t n) {
    if (n <= d->cap_rows) return SX_OK;
    size_t rows = n > 2 * d->cap_rows ? n : 2 * d->cap_rows;
    scratch s;
    size_t floats = carve(d, rows, NULL, &s);
    const size_t gemm_bytes = model_gemm_work_bytes(d->m, rows, (size_t)threads_most());
    if (gemm_bytes == SIZE_MAX) return sx_fail(SX_ERR_ARG, "too many rows to decode at once (%zu)", n);
    sx_free(d->buf);
    sx_free(d->gemm_work.buf);
    d->buf = sx_alloc(floats * sizeof(float), "decoder scratch");
    d->gemm_work = (gemm_workspace){d->buf ? sx_alloc_huge(gemm_bytes, "decoder GEMM packing workspace") : NULL,
                                    gemm_bytes};
    d->cap_rows = d->gemm_work.buf ? rows : 0;
    return d->gemm_work.buf ? SX_OK : SX_ERR_NOMEM;
}

// Per call (carved from the decoder's row_buf and span_buf): each row's position, and per layer its cache slot
// and the spans it sees (at most its sequence's depth of them, all views into the cache).
typedef struct {
    size_t *pos, *n_spans;
    float **slot;
    kv_span **spans;
    kv_span *span_buf;
    int32_t *prev;        // with the bigram table or smear: (5, n) the tokens one and two positions back (−1:
                          // none), then the bigram rows and sign patterns of whichever embedding is computed
} row_cache;

// *buf made at least `bytes` (*cap: its size; grown to twice, its contents dropped): the per-call arrays reuse
// one block instead of allocating for every token.
static void *at_least(void **buf, size_t *cap, size_t bytes, const char *what) {
    if (bytes > *cap) {
        size_t grown = bytes > 2 * *cap ? bytes : 2 * *cap;
        sx_free(*buf);
        *buf = sx_alloc(grown, what);
        *cap = *buf ? grown : 0;
    }
    return *buf;
}

// Appends every row's position (and token) to its sequence; sizes the span lists.
static sx_status rows_append(decoder *d, size_t n, const int *seq, const int32_t *tok, row_cache *rc) {
    bool look_back = d->m->cfg.bigram_rows > 0 || d->m->cfg.smear;
    size_t per_row = 2 * sizeof(size_t) + sizeof(float *) + sizeof(kv_span *) + (look_back ? 5 * sizeof(int32_t) : 0);
    unsigned char *b = at_least(&d->row_buf, &d->row_buf_bytes, n * per_row, "decode row arrays");
    if (!b) return sx_fail(SX_ERR_NOMEM, "out of memory");
    rc->pos = (size_t *)b;
    rc->n_spans = rc->pos + n;
    rc->slot = (float **)(rc->n_spans + n);
    rc->spans = (kv_span **)(rc->slot + n);
    rc->prev = look_back ? (int32_t *)(rc->spans + n) : NULL;
    for (size_t r = 0; r < n; r++) {
        if (kvcache_len(&d->cache, seq[r]) >= d->max_ctx)
            return sx_fail(SX_ERR_ARG, "sequence %d is full (context %zu)", seq[r], d->max_ctx);
        rc->pos[r] = kvcache_append(&d->cache, seq[r], tok[r]);
        if (rc->pos[r] == (size_t)-1) return SX_ERR_NOMEM;   // kvcache_append said what
    }
    size_t total = 0;
    for (size_t r = 0; r < n; r++) total += kvcache_depth(&d->cache, seq[r]);
    rc->span_buf = at_least(&d->span_buf, &d->span_buf_bytes, total * sizeof *rc->span_buf, "decode spans");
    if (!rc->span_buf) return sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t r = 0, off = 0; r < n; off += kvcache_depth(&d->cache, seq[r]), r++) rc->spans[r] = rc->span_buf + off;
    for (size_t r = 0; r < n && look_back; r++) {   // appended above: the cache holds each row's earlier tokens
        size_t p = rc->pos[r];
        rc->prev[r] = p ? kvcache_token(&d->cache, seq[r], p - 1) : -1;
        rc->prev[n + r] = p > 1 ? kvcache_token(&d->cache, seq[r], p - 2) : -1;
    }
    return SX_OK;
}

// The input embedding of n tokens, as training computes it: x (n,C) = emb[tok] [+ the bigram hash embedding of
// (prev, tok), prev −1 at a sequence's first position]. idx: (2n) scratch for the bigram rows and patterns.
static void embed_rows(const model *m, size_t n, const int32_t *tok, const int32_t *prev, int32_t *idx, float *x) {
    const model_config *c = &m->cfg;
    embedding_forward(n, c->width, tok, m->p[m->emb], x);
    if (!c->bigram_rows) return;
    bigram_index(c, n, tok, prev, idx, idx + n);
    bigram_forward(n, c->width, c->bigram_signs, idx, idx + n, m->p[m->bigram], x);
}

// Smear of each row that has a previous position (model/smear.h): its embedding recomputed from the cached
// tokens (the one before it and the one before that), so forks read their parent's.
static void smear_rows(const model *m, size_t n, const size_t *pos, const int32_t *prev, int32_t *idx, float *e_prev,
                       float *x) {
    const model_config *c = &m->cfg;
    int32_t *tok = idx + 2 * n;   // the previous tokens, a placeholder 0 where a row has none
    for (size_t r = 0; r < n; r++) tok[r] = pos[r] ? prev[r] : 0;
    embed_rows(m, n, tok, prev + n, idx, e_prev);
    size_t C = c->width;
    for (size_t r = 0; r < n; r++)
        if (pos[r]) smear_row(C, m->p[m->smear], m->p[m->smear + 1][0], x + r * C, e_prev + r * C, x + r * C);
}

// Layer `layer`'s slots and spans (valid until the next append: the cache does not move rows meanwhile).
static void rows_at_layer(decoder *d, size_t n, const int *seq, size_t layer, row_cache *rc) {
    for (size_t r = 0; r < n; r++) {
        rc->slot[r] = kvcache_row(&d->cache, seq[r], layer, rc->pos[r]);
        rc->n_spans[r] = kvcache_spans(&d->cache, seq[r], layer, rc->pos[r] + 1, rc->spans[r],
                                       kvcache_depth(&d->cache, seq[r]));
    }
}

// The forward of n rows; with feats, overwrites it (n, C) with the final-normed hidden states (the head's input);
// with logits, overwrites it (n, V) with the scored logits.
static sx_status forward_rows(decoder *d, size_t n, const int *seq, const int32_t *tok, float *feats, float *logits) {
    model *m = d->m;
    const model_config *c = &m->cfg;
    size_t C = c->width, V = c->vocab;
    if (n == 0) return SX_OK;
    threads_recheck();   // --threads 0 of eval and sample: follow the cores other processes leave free
    sx_status st = reserve(d, n);
    if (st) return st;
    for (size_t r = 0; r < n; r++) SX_CHECK(tok[r] >= 0 && (size_t)tok[r] < V, "token ids lie within the vocabulary");
    row_cache rc = {0};
    st = rows_append(d, n, seq, tok, &rc);
    if (st) return st;
    scratch s;
    carve(d, d->cap_rows, d->buf, &s);
    const gemm_workspace *outer = gemm_bind_workspace(&d->gemm_work);
    const linear_packed_set *outer_packed = linear_bind_packed(&d->packed);
    embed_rows(m, n, tok, rc.prev, rc.prev ? rc.prev + 2 * n : NULL, s.x);
    if (c->smear) smear_rows(m, n, rc.pos, rc.prev, rc.prev + 2 * n, s.prev, s.x);
    block_shape bs = {.cfg = c, .B = n, .T = 1, .grad_scale = 1.0f};
    decode_shape ds = {.cfg = c, .n = n, .pos = rc.pos, .rope_cos = d->cos, .rope_sin = d->sin, .max_ctx = d->max_ctx,
                       .slot = rc.slot, .spans = (const kv_span *const *)rc.spans, .n_spans = rc.n_spans};
    for (size_t l = 0; l < c->n_layer; l++) {
        size_t first = m->layer_first[l], f = first + 1 + m->mixer_tensors;
        rows_at_layer(d, n, seq, l, &rc);
        ds.layer = bs.layer = l;
        layer_addons addons;
        model_layer_addons(m, l, tok, false, &addons, NULL, &ds);
        rmsnorm_forward(n, C, s.x, m->p[first], MODEL_NORM_EPS, s.hn, s.rstd);
        model_gate_norm(m, 2 * l, n, s.hn, s.gate_saved, s.gate_scratch);
        m->mixer->decode(&ds, m->p + first + 1, s.hn, s.x, s.mixer);
        rmsnorm_forward(n, C, s.x, m->p[f], MODEL_NORM_EPS, s.hn, s.rstd);
        model_gate_norm(m, 2 * l + 1, n, s.hn, s.gate_saved, s.gate_scratch);
        m->ffn->forward(&bs, m->p + f + 1, s.hn, s.x, s.ffn_saved, s.ffn_scratch);
    }
    double flops = 0;
    for (size_t r = 0; r < n; r++) flops += model_flops_decode_token(c, rc.pos[r] + 1);
    d->flops += flops;
    d->tokens += n;
    if (logits || feats) {
        rmsnorm_forward(n, C, s.x, m->p[m->norm_f], MODEL_NORM_EPS, s.hn, s.rstd);
        model_gate_norm(m, 2 * c->n_layer, n, s.hn, s.gate_saved, s.gate_scratch);
        if (feats) memcpy(feats, s.hn, n * C * sizeof *feats);
        if (logits) linear_forward(n, C, V, s.hn, m->p[m->head], logits, false);
    }
    gemm_bind_workspace(outer);
    linear_bind_packed(outer_packed);
    if (logits && c->softcap > 0)
        for (size_t i = 0; i < n * V; i++) logits[i] = c->softcap * tanhf(logits[i] / c->softcap);
    return SX_OK;
}

sx_status decoder_forward(decoder *d, size_t n, const int *seq, const int32_t *tok, float *logits) {
    return forward_rows(d, n, seq, tok, NULL, logits);
}

sx_status decoder_forward_features(decoder *d, size_t n, const int *seq, const int32_t *tok, float *feats, float *logits) {
    return forward_rows(d, n, seq, tok, feats, logits);
}

sx_status decoder_prefill(decoder *d, int seq, const int32_t *tokens, size_t n, float *last_logits) {
    size_t V = d->m->cfg.vocab;
    int *seqs = sx_calloc_n(n ? n : 1, sizeof *seqs, "decode seqs");
    float *logits = sx_alloc(n * V * sizeof *logits, "decode logits");
    sx_status st = seqs && logits ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !st; i++) seqs[i] = seq;
    if (!st) st = decoder_forward(d, n, seqs, tokens, logits);
    if (!st && n) memcpy(last_logits, logits + (n - 1) * V, V * sizeof *logits);
    free(seqs);
    free(logits);
    return st;
}
