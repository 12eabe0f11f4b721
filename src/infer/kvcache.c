#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "infer/kvcache.h"

void kvcache_init(kvcache *kv, size_t n_layer, size_t row_floats) {
    memset(kv, 0, sizeof *kv);
    kv->n_layer = n_layer;
    kv->row = row_floats;
}

void kvcache_free(kvcache *kv) {
    for (size_t i = 0; i < kv->n_seg; i++) free(kv->seg[i].rows), free(kv->seg[i].tok);
    free(kv->seg);
    memset(kv, 0, sizeof *kv);
}

// A free slot (refs == 0) or a new one.
static int slot(kvcache *kv) {
    for (size_t i = 0; i < kv->n_seg; i++)
        if (kv->seg[i].refs == 0) return (int)i;
    if (kv->n_seg == kv->cap_seg) {
        size_t cap = kv->cap_seg ? 2 * kv->cap_seg : 16;
        kv_segment *s = sx_realloc(kv->seg, cap * sizeof *s, "kvcache s");
        if (!s) { sx_fail(SX_ERR_NOMEM, "out of memory for the KV cache"); return -1; }
        kv->seg = s;
        kv->cap_seg = cap;
    }
    memset(&kv->seg[kv->n_seg], 0, sizeof *kv->seg);
    return (int)kv->n_seg++;
}

int kvcache_new_seq(kvcache *kv) {
    int id = slot(kv);
    if (id < 0) return -1;
    kv->seg[id] = (kv_segment){.parent = -1, .refs = 1};
    return id;
}

int kvcache_fork(kvcache *kv, int src) {
    SX_CHECK(src >= 0 && (size_t)src < kv->n_seg && kv->seg[src].refs > 0, "fork a live sequence of this cache");
    int id = slot(kv);
    if (id < 0) return -1;
    kv->seg[src].refs++;
    kv->seg[id] = (kv_segment){.parent = src, .base = kvcache_len(kv, src), .refs = 1};
    return id;
}

void kvcache_release(kvcache *kv, int seq) {
    while (seq >= 0) {
        kv_segment *s = &kv->seg[seq];
        SX_CHECK(s->refs > 0, "release a sequence only once");
        if (--s->refs > 0) return;
        int parent = s->parent;
        free(s->rows);
        free(s->tok);
        memset(s, 0, sizeof *s);
        seq = parent;
    }
}

size_t kvcache_len(const kvcache *kv, int seq) { return kv->seg[seq].base + kv->seg[seq].len; }

size_t kvcache_depth(const kvcache *kv, int seq) {
    size_t d = 0;
    for (; seq >= 0; seq = kv->seg[seq].parent) d++;
    return d;
}

size_t kvcache_append(kvcache *kv, int seq, int32_t tok) {
    kv_segment *s = &kv->seg[seq];
    if (s->len == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16, L = kv->n_layer, R = kv->row;
        float *rows = sx_alloc(L * cap * R * sizeof *rows, "kvcache rows");
        int32_t *toks = sx_realloc(s->tok, cap * sizeof *toks, "kvcache tokens");
        if (toks) s->tok = toks;
        if (!rows || !toks) { sx_free(rows); sx_fail(SX_ERR_NOMEM, "out of memory for the KV cache"); return (size_t)-1; }
        for (size_t l = 0; l < L && s->len; l++)
            memcpy(rows + l * cap * R, s->rows + l * s->cap * R, s->len * R * sizeof *rows);
        free(s->rows);
        s->rows = rows;
        s->cap = cap;
    }
    s->tok[s->len] = tok;
    return s->base + s->len++;
}

void kvcache_truncate(kvcache *kv, int seq, size_t len) {
    kv_segment *s = &kv->seg[seq];
    SX_CHECK(s->refs == 1, "truncate a sequence no fork reads (release its forks first)");
    SX_CHECK(len >= s->base && len <= s->base + s->len, "truncate within the sequence's own positions");
    s->len = len - s->base;
}

int32_t kvcache_token(const kvcache *kv, int seq, size_t pos) {
    SX_CHECK(pos < kvcache_len(kv, seq), "the position lies within the sequence");
    while (pos < kv->seg[seq].base) seq = kv->seg[seq].parent;
    return kv->seg[seq].tok[pos - kv->seg[seq].base];
}

float *kvcache_row(kvcache *kv, int seq, size_t layer, size_t pos) {
    kv_segment *s = &kv->seg[seq];
    SX_CHECK(pos >= s->base && pos < s->base + s->len && layer < kv->n_layer, "the position and layer lie within the sequence");
    return s->rows + (layer * s->cap + pos - s->base) * kv->row;
}

size_t kvcache_spans(const kvcache *kv, int seq, size_t layer, size_t n_pos, kv_span *spans, size_t max_spans) {
    size_t n = 0, end = n_pos;
    // Walk leaf to root, then reverse so spans are ordered by position.
    for (int id = seq; id >= 0 && n < max_spans; id = kv->seg[id].parent) {
        const kv_segment *s = &kv->seg[id];
        size_t hi = end < s->base + s->len ? end : s->base + s->len;
        if (hi > s->base) {
            spans[n++] = (kv_span){.rows = s->rows + layer * s->cap * kv->row, .pos0 = s->base, .n = hi - s->base};
        }
        end = hi < s->base ? hi : s->base;
    }
    for (size_t i = 0; i < n / 2; i++) {
        kv_span t = spans[i];
        spans[i] = spans[n - 1 - i];
        spans[n - 1 - i] = t;
    }
    return n;
}

size_t kvcache_floats(const kvcache *kv) {
    size_t n = 0;
    for (size_t i = 0; i < kv->n_seg; i++)
        if (kv->seg[i].refs > 0) n += kv->seg[i].cap * kv->n_layer * kv->row;
    return n;
}
