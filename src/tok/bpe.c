#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "tok/bpe.h"

enum { CACHE_MAX_ENTRIES = 1 << 20, NAIVE_MAX_BYTES = 256 };

sx_status tok_ids_push(tok_ids *v, uint32_t id) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 1024;
        uint32_t *p = sx_realloc(v->ids, cap * sizeof *p, "bpe p");
        if (!p) return sx_fail(SX_ERR_NOMEM, "cannot grow a token buffer to %zu ids", cap);
        v->ids = p;
        v->cap = cap;
    }
    v->ids[v->n++] = id;
    return SX_OK;
}

void tok_ids_free(tok_ids *v) { free(v->ids); memset(v, 0, sizeof *v); }

sx_status tok_bytes_append(tok_bytes *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        uint8_t *d = sx_realloc(b->data, cap, "bpe d");
        if (!d) return sx_fail(SX_ERR_NOMEM, "cannot grow a byte buffer to %zu bytes", cap);
        b->data = d;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->n, p, n);
    b->n += n;
    return SX_OK;
}

void tok_bytes_free(tok_bytes *b) { free(b->data); memset(b, 0, sizeof *b); }

sx_status bpe_vocab_create(bpe_vocab **out, const char *name, pretok_kind pretok, size_t n_ids_hint) {
    bpe_vocab *v = sx_calloc_n(1, sizeof *v, "bpe v");
    if (!v) return sx_fail(SX_ERR_NOMEM, "cannot allocate a vocabulary");
    snprintf(v->name, sizeof v->name, "%s", name);
    v->pretok = pretok;
    v->eot = TOK_NONE;
    sx_status st = bytemap_init(&v->ranks, n_ids_hint);
    if (!st) st = bytemap_init(&v->cache, 1 << 16);
    if (st) { bpe_vocab_free(v); return st; }
    *out = v;
    return SX_OK;
}

void bpe_vocab_free(bpe_vocab *v) {
    if (!v) return;
    free(v->kind); free(v->off); free(v->len); free(v->blob);
    free(v->special_ids); free(v->cache_ids);
    bytemap_free(&v->ranks);
    bytemap_free(&v->cache);
    free(v);
}

// Makes ids 0..n_ids-1 addressable (new ones are holes); capacity grows geometrically.
static sx_status ensure_ids(bpe_vocab *v, size_t n_ids) {
    if (n_ids <= v->n_ids) return SX_OK;
    if (n_ids > v->ids_cap) {
        size_t cap = v->ids_cap ? v->ids_cap : 1024;
        while (cap < n_ids) cap *= 2;
        uint8_t *k = sx_realloc(v->kind, cap, "bpe k");
        if (k) v->kind = k;
        uint64_t *o = sx_realloc(v->off, cap * sizeof *o, "bpe o");
        if (o) v->off = o;
        uint32_t *l = sx_realloc(v->len, cap * sizeof *l, "bpe l");
        if (l) v->len = l;
        if (!k || !o || !l) return sx_fail(SX_ERR_NOMEM, "cannot grow a vocabulary to %zu ids", n_ids);
        v->ids_cap = cap;
    }
    for (size_t i = v->n_ids; i < n_ids; i++) { v->kind[i] = TOK_KIND_HOLE; v->off[i] = 0; v->len[i] = 0; }
    v->n_ids = n_ids;
    return SX_OK;
}

sx_status bpe_vocab_add(bpe_vocab *v, uint32_t id, const uint8_t *bytes, size_t n, int kind) {
    if (id == TOK_NONE || n == 0 || n > UINT32_MAX)
        return sx_fail(SX_ERR_FORMAT, "token %u has an invalid length %zu", id, n);
    sx_status st = ensure_ids(v, (size_t)id + 1);
    if (st) return st;
    if (v->blob_len + n > v->blob_cap) {
        size_t cap = v->blob_cap ? v->blob_cap : 1 << 16;
        while (cap < v->blob_len + n) cap *= 2;
        uint8_t *b = sx_realloc(v->blob, cap, "bpe b");
        if (!b) return sx_fail(SX_ERR_NOMEM, "cannot grow vocabulary storage to %zu bytes", cap);
        v->blob = b;
        v->blob_cap = cap;
    }
    memcpy(v->blob + v->blob_len, bytes, n);
    v->kind[id] = (uint8_t)kind;
    v->off[id] = v->blob_len;
    v->len[id] = (uint32_t)n;
    v->blob_len += n;
    return SX_OK;
}

sx_status bpe_vocab_finish(bpe_vocab *v) {
    bytemap_clear(&v->ranks);
    free(v->special_ids);
    v->special_ids = NULL;
    v->n_special = 0;
    v->eot = TOK_NONE;
    for (size_t id = 0; id < v->n_ids; id++) {
        if (v->kind[id] == TOK_KIND_SPECIAL) v->n_special++;
        if (v->kind[id] != TOK_KIND_NORMAL) continue;
        const uint8_t *b = v->blob + v->off[id];
        int inserted;
        bytemap_slot *s = bytemap_upsert(&v->ranks, b, v->len[id], bytemap_hash(b, v->len[id]), &inserted);
        if (!s) return SX_ERR_NOMEM;   // bytemap_upsert said what
        if (inserted) s->value = id;
    }
    for (int byte = 0; byte < 256; byte++) {
        uint8_t c = (uint8_t)byte;
        if (bpe_rank(v, &c, 1) == TOK_NONE)
            return sx_fail(SX_ERR_FORMAT, "vocabulary %s has no token for byte 0x%02x (not byte-level BPE?)",
                           v->name, byte);
    }
    v->special_ids = sx_alloc((v->n_special ? v->n_special : 1) * sizeof *v->special_ids, "bpe v.special_ids");
    if (!v->special_ids) return sx_fail(SX_ERR_NOMEM, "cannot allocate special tokens");
    size_t k = 0;
    uint64_t h = 0xcbf29ce484222325ULL;
#define FNV(byte) (h = (h ^ (uint8_t)(byte)) * 0x100000001b3ULL)
    FNV(v->pretok);
    for (size_t id = 0; id < v->n_ids; id++) {
        const uint8_t *b = v->blob + v->off[id];
        FNV(v->kind[id]);
        for (int s = 0; s < 32; s += 8) FNV(v->len[id] >> s);
        for (uint32_t i = 0; i < v->len[id]; i++) FNV(b[i]);
        if (v->kind[id] != TOK_KIND_SPECIAL) continue;
        v->special_ids[k++] = (uint32_t)id;
        if (v->len[id] == 13 && !memcmp(b, "<|endoftext|>", 13)) v->eot = (uint32_t)id;
    }
#undef FNV
    v->hash = h;
    bytemap_clear(&v->cache);
    v->cache_len = 0;
    return SX_OK;
}

uint32_t bpe_rank(const bpe_vocab *v, const uint8_t *bytes, size_t n) {
    bytemap_slot *s = bytemap_find(&v->ranks, bytes, n, bytemap_hash(bytes, n));
    return s ? (uint32_t)s->value : TOK_NONE;
}

// tiktoken's merge loop over a short piece: bounds[0..m] are part boundaries, rank[k] the rank of
// bytes[bounds[k]..bounds[k+2]). O(n^2), fastest for short pieces.
static sx_status merge_naive(const bpe_vocab *v, const uint8_t *p, size_t n, tok_ids *out) {
    uint32_t bounds[NAIVE_MAX_BYTES + 1], rank[NAIVE_MAX_BYTES];
    size_t m = n;
    for (size_t k = 0; k <= n; k++) bounds[k] = (uint32_t)k;
    for (size_t k = 0; k + 1 < m; k++) rank[k] = bpe_rank(v, p + k, 2);
    while (m > 1) {
        size_t best = 0;
        uint32_t best_rank = TOK_NONE;
        for (size_t k = 0; k + 1 < m; k++)
            if (rank[k] < best_rank) { best_rank = rank[k]; best = k; }
        if (best_rank == TOK_NONE) break;
        // Remove boundary best+1, then refresh the ranks of the pairs touching the merged part.
        memmove(&bounds[best + 1], &bounds[best + 2], (m - best - 1) * sizeof *bounds);
        memmove(&rank[best + 1], &rank[best + 2], (m > best + 3 ? m - best - 3 : 0) * sizeof *rank);
        m--;
        if (best + 1 < m) rank[best] = bpe_rank(v, p + bounds[best], bounds[best + 2] - bounds[best]);
        if (best > 0) rank[best - 1] = bpe_rank(v, p + bounds[best - 1], bounds[best + 1] - bounds[best - 1]);
    }
    for (size_t k = 0; k < m; k++) {
        sx_status st = tok_ids_push(out, bpe_rank(v, p + bounds[k], bounds[k + 1] - bounds[k]));
        if (st) return st;
    }
    return SX_OK;
}

// The same merge order for long pieces in O(n log n): parts in a linked list, candidate pairs in a
// binary min-heap keyed by (rank, position), stale entries skipped when popped.
typedef struct { uint32_t rank, pos, left, right_end; } heap_entry;

static int heap_less(const heap_entry *a, const heap_entry *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void heap_push(heap_entry *h, size_t *n, heap_entry e) {
    size_t i = (*n)++;
    while (i > 0 && heap_less(&e, &h[(i - 1) / 2])) { h[i] = h[(i - 1) / 2]; i = (i - 1) / 2; }
    h[i] = e;
}

static heap_entry heap_pop(heap_entry *h, size_t *n) {
    heap_entry top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && heap_less(&h[c + 1], &h[c])) c++;
        if (!heap_less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = last;
    return top;
}

static sx_status merge_heap(const bpe_vocab *v, const uint8_t *p, size_t n, tok_ids *out) {
    // Part k starts at byte start[k] (== k initially) and ends at start[next[k]]; next == n ends the list.
    uint32_t *next = sx_alloc((n + 1) * sizeof *next, "bpe next"), *prev = sx_alloc((n + 1) * sizeof *prev, "bpe prev");
    heap_entry *heap = sx_alloc(2 * (n + 1) * sizeof *heap, "bpe heap");
    if (!next || !prev || !heap) {
        free(next); free(prev); free(heap);
        return sx_fail(SX_ERR_NOMEM, "cannot allocate BPE state for a %zu-byte piece", n);
    }
    size_t hn = 0;
    for (size_t k = 0; k < n; k++) { next[k] = (uint32_t)(k + 1); prev[k] = (uint32_t)(k - 1); }
    // A part absorbed by its left neighbour gets next = 0 (live parts always have next > start).
#define END(k) (next[k])
#define PUSH_PAIR(l) do { \
        uint32_t r_ = next[l]; \
        if (r_ < n) { \
            uint32_t rk_ = bpe_rank(v, p + (l), END(r_) - (l)); \
            if (rk_ != TOK_NONE) heap_push(heap, &hn, (heap_entry){ rk_, (l), (l), END(r_) }); \
        } } while (0)
    for (uint32_t k = 0; k + 1 < n; k++) PUSH_PAIR(k);
    while (hn) {
        heap_entry e = heap_pop(heap, &hn);
        uint32_t l = e.left;
        if (next[l] == 0 || next[l] >= n) continue;       // dead, or now the last part
        uint32_t r = next[l];
        if (END(r) != e.right_end) continue;              // the right part has grown since
        next[l] = next[r];                                // l absorbs r
        if (next[r] < n) prev[next[r]] = l;
        next[r] = 0;
        PUSH_PAIR(l);
        if (l > 0) PUSH_PAIR(prev[l]);
    }
#undef PUSH_PAIR
#undef END
    sx_status st = SX_OK;
    for (uint32_t k = 0; k < n && !st; k = next[k])
        st = tok_ids_push(out, bpe_rank(v, p + k, next[k] - k));
    free(next); free(prev); free(heap);
    return st;
}

sx_status bpe_encode_piece(const bpe_vocab *v, const uint8_t *piece, size_t n, tok_ids *out) {
    if (n == 0) return SX_OK;
    if (n == 1) return tok_ids_push(out, bpe_rank(v, piece, 1));
    return n <= NAIVE_MAX_BYTES ? merge_naive(v, piece, n, out) : merge_heap(v, piece, n, out);
}

// Encodes one piece through the single-token map and the cache.
static sx_status encode_cached(bpe_vocab *v, const uint8_t *p, size_t n, tok_ids *out) {
    uint64_t h = bytemap_hash(p, n);
    bytemap_slot *s = bytemap_find(&v->ranks, p, n, h);
    if (s) return tok_ids_push(out, (uint32_t)s->value);
    s = bytemap_find(&v->cache, p, n, h);
    if (s) {
        size_t off = s->value >> 16, cnt = s->value & 0xFFFF;
        for (size_t i = 0; i < cnt; i++) {
            sx_status st = tok_ids_push(out, v->cache_ids[off + i]);
            if (st) return st;
        }
        return SX_OK;
    }
    size_t first = out->n;
    sx_status st = bpe_encode_piece(v, p, n, out);
    size_t cnt = out->n - first;
    if (st || n > 64 || cnt > 0xFFFF) return st;
    if (v->cache.count >= CACHE_MAX_ENTRIES) { bytemap_clear(&v->cache); v->cache_len = 0; }
    if (v->cache_len + cnt > v->cache_cap) {
        size_t cap = v->cache_cap ? v->cache_cap * 2 : 1 << 16;
        uint32_t *c = sx_realloc(v->cache_ids, cap * sizeof *c, "bpe c");
        if (!c) return SX_OK; // the cache is an optimisation; skip it when memory is short
        v->cache_ids = c;
        v->cache_cap = cap;
    }
    int inserted;
    s = bytemap_upsert(&v->cache, p, n, h, &inserted);
    if (!s) return SX_OK;
    memcpy(v->cache_ids + v->cache_len, out->ids + first, cnt * sizeof(uint32_t));
    s->value = ((uint64_t)v->cache_len << 16) | cnt;
    v->cache_len += cnt;
    return SX_OK;
}

static sx_status encode_ordinary(bpe_vocab *v, const uint8_t *t, size_t n, tok_ids *out) {
    for (size_t pos = 0; pos < n;) {
        size_t end = pretok_next(v->pretok, t, n, pos);
        sx_status st = encode_cached(v, t + pos, end - pos, out);
        if (st) return st;
        pos = end;
    }
    return SX_OK;
}

sx_status bpe_encode(bpe_vocab *v, const uint8_t *text, size_t n, bool allow_special, tok_ids *out) {
    if (!allow_special || v->n_special == 0) return encode_ordinary(v, text, n, out);
    // next_at[k]: the next occurrence of special k at or after pos (n if none), refreshed once passed.
    size_t *next_at = sx_alloc(v->n_special * sizeof *next_at, "bpe next_at");
    if (!next_at) return sx_fail(SX_ERR_NOMEM, "cannot allocate special-token search state");
    for (size_t k = 0; k < v->n_special; k++) next_at[k] = SIZE_MAX;
    sx_status st = SX_OK;
    for (size_t pos = 0; pos < n && !st;) {
        size_t best_at = n;
        uint32_t best = TOK_NONE;
        for (size_t k = 0; k < v->n_special; k++) {
            uint32_t id = v->special_ids[k];
            if (next_at[k] == SIZE_MAX || next_at[k] < pos) {
                const uint8_t *hit = memmem(text + pos, n - pos, v->blob + v->off[id], v->len[id]);
                next_at[k] = hit ? (size_t)(hit - text) : n;
            }
            size_t at = next_at[k];
            if (at < n && (at < best_at || (at == best_at && v->len[id] > v->len[best]))) {
                best_at = at;
                best = id;
            }
        }
        st = encode_ordinary(v, text + pos, best_at - pos, out);
        if (st || best == TOK_NONE) break;
        st = tok_ids_push(out, best);
        pos = best_at + v->len[best];
    }
    free(next_at);
    return st;
}

sx_status bpe_decode(const bpe_vocab *v, const uint32_t *ids, size_t n, tok_bytes *out) {
    for (size_t i = 0; i < n; i++) {
        uint32_t id = ids[i];
        if (id >= v->n_ids || v->kind[id] == TOK_KIND_HOLE)
            return sx_fail(SX_ERR_ARG, "token id %u at position %zu is not in vocabulary %s (%zu ids)", id, i,
                           v->name, v->n_ids);
        sx_status st = tok_bytes_append(out, v->blob + v->off[id], v->len[id]);
        if (st) return st;
    }
    return SX_OK;
}
