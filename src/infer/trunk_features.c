// trunk_features: see trunk_features.h.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "infer/trunk_features.h"

void trunk_reader_init(trunk_reader *t, decoder *d) {
    memset(t, 0, sizeof *t);
    t->d = d;
}

void trunk_reader_free(trunk_reader *t) {
    for (size_t i = 0; i < t->cap; i++) free(t->seq[i].prev);
    free(t->seq);
    memset(t, 0, sizeof *t);
}

size_t trunk_feature_dim(const trunk_reader *t) { return t->d->m->cfg.width + TRUNK_EXTRA; }

// The state of sequence id s, grown on demand; NULL when out of memory.
static trunk_seq *state(trunk_reader *t, int s) {
    if ((size_t)s >= t->cap) {
        size_t cap = (size_t)s + 1 > 2 * t->cap ? (size_t)s + 1 : 2 * t->cap;
        trunk_seq *n = sx_realloc(t->seq, cap * sizeof *n, "trunk states");
        if (!n) return NULL;
        memset(n + t->cap, 0, (cap - t->cap) * sizeof *n);
        t->seq = n, t->cap = cap;
    }
    trunk_seq *q = &t->seq[s];
    if (!q->prev) q->prev = sx_alloc(t->d->m->cfg.vocab * sizeof *q->prev, "trunk log-probabilities");
    return q->prev ? q : NULL;
}

static void reset_step(trunk_seq *q) { q->step_sum = 0, q->step_min = 0, q->step_n = 0; }

int trunk_new_seq(trunk_reader *t) {
    int s = kvcache_new_seq(&t->d->cache);
    trunk_seq *q = s >= 0 ? state(t, s) : NULL;
    if (!q) { if (s >= 0) kvcache_release(&t->d->cache, s); return -1; }
    q->have_prev = false, q->path_min = 0, q->lines = 0;
    reset_step(q);
    return s;
}

int trunk_fork(trunk_reader *t, int src) {
    int s = kvcache_fork(&t->d->cache, src);
    trunk_seq *q = s >= 0 ? state(t, s) : NULL;
    if (!q) { if (s >= 0) kvcache_release(&t->d->cache, s); return -1; }
    const trunk_seq *p = &t->seq[src];
    float *keep = q->prev;
    *q = *p;
    q->prev = keep;
    if (p->have_prev) memcpy(q->prev, p->prev, t->d->m->cfg.vocab * sizeof *q->prev);
    return s;
}

void trunk_release(trunk_reader *t, int seq) { kvcache_release(&t->d->cache, seq); }

sx_status trunk_forward(trunk_reader *t, size_t n, const int *seq, const int32_t *tok, float *feats) {
    size_t C = t->d->m->cfg.width, V = t->d->m->cfg.vocab, F = C + TRUNK_EXTRA;
    float *h = sx_alloc((n ? n : 1) * C * sizeof *h, "trunk hidden"), *logits = sx_alloc((n ? n : 1) * V * sizeof *logits, "trunk logits");
    sx_status st = h && logits ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    if (!st) st = decoder_forward_features(t->d, n, seq, tok, h, logits);
    for (size_t r = 0; r < n && !st; r++) {
        trunk_seq *q = state(t, seq[r]);
        if (!q) { st = sx_fail(SX_ERR_NOMEM, "out of memory"); break; }
        if (q->have_prev) {   // log p(this token | the sequence before it)
            double lp = q->prev[tok[r]];
            q->step_sum += lp, q->step_min = q->step_n ? fmin(q->step_min, lp) : lp, q->step_n++;
        }
        float *f = feats + r * F;
        memcpy(f, h + r * C, C * sizeof *f);
        double path = q->lines ? fmin(q->path_min, q->step_min) : q->step_min;   // line 0 is the problem
        f[C] = (float)q->step_min, f[C + 1] = (float)(q->step_n ? q->step_sum / (double)q->step_n : 0), f[C + 2] = (float)path;
        if (tok[r] == '\n') {
            if (q->lines++) q->path_min = path;
            reset_step(q);
        }
        // This position's log-softmax, for the next token.
        const float *z = logits + r * V;
        double m = z[0], s = 0;
        for (size_t v = 1; v < V; v++) m = fmax(m, z[v]);
        for (size_t v = 0; v < V; v++) s += exp(z[v] - m);
        double lse = m + log(s);
        for (size_t v = 0; v < V; v++) q->prev[v] = (float)(z[v] - lse);
        q->have_prev = true;
    }
    free(h), free(logits);
    return st;
}
