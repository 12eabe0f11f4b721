#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "infer/generate.h"

bool gen_is_stop(const gen_config *g, int32_t tok) {
    for (size_t i = 0; i < g->n_stop; i++)
        if (g->stop[i] == tok) return true;
    return false;
}

static sx_status push(gen_stream *s, int32_t tok) {
    if (s->len == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 32;
        int32_t *t = sx_realloc(s->tok, cap * sizeof *t, "generate t");
        if (!t) return sx_fail(SX_ERR_NOMEM, "out of memory");
        s->tok = t;
        s->cap = cap;
    }
    s->tok[s->len++] = tok;
    return SX_OK;
}

sx_status generate_streams(decoder *d, gen_stream *s, size_t n, const gen_config *g, rng_state *rng) {
    size_t V = d->m->cfg.vocab;
    int *seq = sx_alloc(n * sizeof *seq, "generate seq");
    int32_t *tok = sx_alloc(n * sizeof *tok, "generate tok");
    size_t *idx = sx_alloc(n * sizeof *idx, "generate idx");
    float *logits = sx_alloc(n * V * sizeof *logits, "generate logits");
    bool *live = sx_alloc(n * sizeof *live, "generate live");
    sx_status st = seq && tok && idx && logits && live ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !st; i++) {
        s[i].new_in_call = 0;
        s[i].stopped = false;
        live[i] = !s[i].full && g->max_new > 0;
    }
    for (size_t step = 1; !st; step++) {
        size_t rows = 0, alive = 0;
        for (size_t i = 0; i < n && !st; i++) {
            if (!live[i]) continue;
            int32_t t = sampler_draw(&g->sampler, s[i].logits, V, rng);
            if ((st = push(&s[i], t))) break;
            s[i].new_in_call++;
            s[i].stopped = gen_is_stop(g, t);
            if (kvcache_len(&d->cache, s[i].seq) + 1 >= d->max_ctx) s[i].full = true;
            if (s[i].stopped || s[i].full || s[i].new_in_call >= g->max_new) live[i] = false;
            alive += live[i];
            if (kvcache_len(&d->cache, s[i].seq) < d->max_ctx) {
                seq[rows] = s[i].seq;
                tok[rows] = t;
                idx[rows++] = i;
            }
        }
        if (st || rows == 0) break;
        if ((st = decoder_forward(d, rows, seq, tok, logits))) break;
        for (size_t r = 0; r < rows; r++) memcpy(s[idx[r]].logits, logits + r * V, V * sizeof *logits);
        if (g->progress) g->progress(g->progress_ctx, step, alive);
    }
    free(seq);
    free(tok);
    free(idx);
    free(logits);
    free(live);
    return st;
}

static sx_status stream_new(decoder *d, int seq, const float *logits, gen_stream *s) {
    size_t V = d->m->cfg.vocab;
    memset(s, 0, sizeof *s);
    s->seq = seq;
    s->logits = sx_alloc(V * sizeof *s->logits, "generate s.logits");
    if (seq < 0 || !s->logits) return sx_fail(SX_ERR_NOMEM, "out of memory");
    memcpy(s->logits, logits, V * sizeof *logits);
    return SX_OK;
}

sx_status gen_stream_fork(decoder *d, const gen_stream *src, gen_stream *dst) {
    sx_status st = stream_new(d, kvcache_fork(&d->cache, src->seq), src->logits, dst);
    for (size_t i = 0; i < src->len && !st; i++) st = push(dst, src->tok[i]);
    dst->full = src->full;
    return st;
}

sx_status generate_samples(decoder *d, const int32_t *prompt, size_t np, size_t n, const gen_config *g,
                           rng_state *rng, gen_stream **out) {
    size_t V = d->m->cfg.vocab;
    *out = sx_calloc_n(n ? n : 1, sizeof **out, "generate out");
    float *last = sx_alloc(V * sizeof *last, "generate last");
    int root = kvcache_new_seq(&d->cache);
    sx_status st = *out && last && root >= 0 ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    if (!st) st = decoder_prefill(d, root, prompt, np, last);
    for (size_t i = 0; i < n && !st; i++) st = stream_new(d, kvcache_fork(&d->cache, root), last, &(*out)[i]);
    if (root >= 0) kvcache_release(&d->cache, root);
    free(last);
    if (!st) st = generate_streams(d, *out, n, g, rng);
    if (st && *out) {
        gen_streams_free(d, *out, n);
        *out = NULL;
    }
    return st;
}

void gen_streams_free(decoder *d, gen_stream *s, size_t n) {
    if (!s) return;
    for (size_t i = 0; i < n; i++) {
        if (s[i].logits) kvcache_release(&d->cache, s[i].seq);
        free(s[i].logits);
        free(s[i].tok);
    }
    free(s);
}
