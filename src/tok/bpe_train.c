#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "tok/bpe_train.h"

typedef struct { uint32_t *w; uint32_t n, cap; } word_list;

typedef struct {
    uint32_t a, b;      // left and right token ids
    int64_t count;      // frequency-weighted occurrences
    uint32_t mark;      // last merge id that counted this pair up (dedupes the touched list)
    word_list words;    // words that contained the pair when it was counted up (may hold stale entries)
} pair_info;

typedef struct { int64_t count; uint32_t a, b, pair; } heap_entry;

struct bpe_trainer {
    pretok_kind pretok;
    bytemap words;      // word bytes -> frequency
    uint64_t total;
    // Merge state, built by bpe_trainer_run.
    uint32_t *sym;      // symbols of all words, word w at sym[start[w] .. start[w] + len[w])
    uint64_t *start;
    uint32_t *len, *stamp;
    uint64_t *freq;
    size_t n_words;
    pair_info *pairs;
    size_t n_pairs, cap_pairs;
    uint64_t *pkey;     // open-addressing map (a << 32 | b) + 1 -> pair index; 0 = empty
    uint32_t *pval;
    size_t pcap, pcount;
    heap_entry *heap;
    size_t heap_n, heap_cap;
    uint32_t *touched;  // pairs counted up during the current merge
    size_t n_touched, cap_touched;
};

sx_status bpe_trainer_create(bpe_trainer **out, pretok_kind pretok) {
    bpe_trainer *t = sx_calloc_n(1, sizeof *t, "bpe_train t");
    if (!t) return sx_fail(SX_ERR_NOMEM, "cannot allocate a BPE trainer");
    t->pretok = pretok;
    sx_status st = bytemap_init(&t->words, 1 << 16);
    if (st) { free(t); return st; }
    *out = t;
    return SX_OK;
}

void bpe_trainer_free(bpe_trainer *t) {
    if (!t) return;
    bytemap_free(&t->words);
    for (size_t i = 0; i < t->n_pairs; i++) free(t->pairs[i].words.w);
    free(t->pairs); free(t->pkey); free(t->pval); free(t->heap); free(t->touched);
    free(t->sym); free(t->start); free(t->len); free(t->stamp); free(t->freq);
    free(t);
}

sx_status bpe_trainer_add_text(bpe_trainer *t, const uint8_t *text, size_t n) {
    for (size_t pos = 0; pos < n;) {
        size_t end = pretok_next(t->pretok, text, n, pos);
        int inserted;
        bytemap_slot *s = bytemap_upsert(&t->words, text + pos, end - pos, bytemap_hash(text + pos, end - pos),
                                         &inserted);
        if (!s) return SX_ERR_NOMEM;   // bytemap_upsert said what
        s->value++;
        t->total++;
        pos = end;
    }
    return SX_OK;
}

void bpe_trainer_stats(const bpe_trainer *t, size_t *unique_words, uint64_t *total_words) {
    *unique_words = t->words.count;
    *total_words = t->total;
}

#define OOM(what) sx_fail(SX_ERR_NOMEM, "BPE training: out of memory for %s", what)

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 1;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = sx_realloc(*p, c * elem, "bpe_train q");
    if (!q) return 0;
    *p = q;
    *cap = c;
    return 1;
}

static uint64_t mix(uint64_t k) {
    k ^= k >> 33; k *= 0xff51afd7ed558ccdULL; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ULL; k ^= k >> 33;
    return k;
}

static int pair_map_grow(bpe_trainer *t) {
    size_t cap = t->pcap ? t->pcap * 2 : 1 << 16;
    uint64_t *keys = sx_calloc_n(cap, sizeof *keys, "bpe_train keys");
    uint32_t *vals = sx_alloc(cap * sizeof *vals, "bpe_train vals");
    if (!keys || !vals) { free(keys); free(vals); return 0; }
    for (size_t i = 0; i < t->pcap; i++) {
        if (!t->pkey[i]) continue;
        size_t j = mix(t->pkey[i]) & (cap - 1);
        while (keys[j]) j = (j + 1) & (cap - 1);
        keys[j] = t->pkey[i];
        vals[j] = t->pval[i];
    }
    free(t->pkey); free(t->pval);
    t->pkey = keys; t->pval = vals; t->pcap = cap;
    return 1;
}

// Index of pair (a, b), created with count 0 if new; UINT32_MAX on OOM.
static uint32_t pair_get(bpe_trainer *t, uint32_t a, uint32_t b) {
    if ((t->pcount + 1) * 2 > t->pcap && !pair_map_grow(t)) return UINT32_MAX;
    uint64_t key = ((uint64_t)a << 32 | b) + 1;
    size_t i = mix(key) & (t->pcap - 1);
    while (t->pkey[i]) {
        if (t->pkey[i] == key) return t->pval[i];
        i = (i + 1) & (t->pcap - 1);
    }
    if (!grow((void **)&t->pairs, &t->cap_pairs, t->n_pairs + 1, sizeof *t->pairs)) return UINT32_MAX;
    t->pkey[i] = key;
    t->pval[i] = (uint32_t)t->n_pairs;
    t->pcount++;
    t->pairs[t->n_pairs] = (pair_info){ a, b, 0, 0, { 0 } };
    return (uint32_t)t->n_pairs++;
}

// Adds delta (weighted by the word's frequency) to pair (a, b) occurring in word w.
// With track != 0 (the id of the token being created) the pair is remembered for re-insertion in the heap.
static sx_status pair_add(bpe_trainer *t, uint32_t a, uint32_t b, int64_t delta, uint32_t w, uint32_t track) {
    uint32_t p = pair_get(t, a, b);
    if (p == UINT32_MAX) return OOM("pairs");
    pair_info *pi = &t->pairs[p];
    pi->count += delta;
    if (delta <= 0) return SX_OK;
    word_list *wl = &pi->words;
    if (!wl->n || wl->w[wl->n - 1] != w) {
        size_t cap = wl->cap;
        if (!grow((void **)&wl->w, &cap, (size_t)wl->n + 1, sizeof *wl->w)) return OOM("pair word lists");
        wl->cap = (uint32_t)cap;
        wl->w[wl->n++] = w;
    }
    if (track && pi->mark != track) {
        pi->mark = track;
        if (!grow((void **)&t->touched, &t->cap_touched, t->n_touched + 1, sizeof *t->touched)) return OOM("pairs");
        t->touched[t->n_touched++] = p;
    }
    return SX_OK;
}

// Max-heap order: larger count first, then smaller (a, b).
static int heap_above(const heap_entry *x, const heap_entry *y) {
    if (x->count != y->count) return x->count > y->count;
    return x->a != y->a ? x->a < y->a : x->b < y->b;
}

static sx_status heap_push(bpe_trainer *t, uint32_t p) {
    if (!grow((void **)&t->heap, &t->heap_cap, t->heap_n + 1, sizeof *t->heap)) return OOM("the pair heap");
    heap_entry e = { t->pairs[p].count, t->pairs[p].a, t->pairs[p].b, p };
    size_t i = t->heap_n++;
    while (i > 0 && heap_above(&e, &t->heap[(i - 1) / 2])) { t->heap[i] = t->heap[(i - 1) / 2]; i = (i - 1) / 2; }
    t->heap[i] = e;
    return SX_OK;
}

static heap_entry heap_pop(bpe_trainer *t) {
    heap_entry top = t->heap[0], last = t->heap[--t->heap_n];
    size_t i = 0, n = t->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && heap_above(&t->heap[c + 1], &t->heap[c])) c++;
        if (!heap_above(&t->heap[c], &last)) break;
        t->heap[i] = t->heap[c];
        i = c;
    }
    t->heap[i] = last;
    return top;
}

// Lays the counted words out as symbol arrays and counts every adjacent pair.
static sx_status setup_words(bpe_trainer *t) {
    size_t nw = t->words.count, total = t->words.arena_len;
    t->sym = sx_alloc((total ? total : 1) * sizeof *t->sym, "bpe_train t.sym");
    t->start = sx_alloc((nw ? nw : 1) * sizeof *t->start, "bpe_train t.start");
    t->len = sx_alloc((nw ? nw : 1) * sizeof *t->len, "bpe_train t.len");
    t->stamp = sx_calloc_n(nw ? nw : 1, sizeof *t->stamp, "bpe_train t.stamp");
    t->freq = sx_alloc((nw ? nw : 1) * sizeof *t->freq, "bpe_train t.freq");
    if (!t->sym || !t->start || !t->len || !t->stamp || !t->freq) return OOM("words");
    size_t w = 0, off = 0;
    for (size_t i = 0; i < t->words.capacity; i++) {
        const bytemap_slot *s = &t->words.slots[i];
        if (!s->hash) continue;
        const uint8_t *k = bytemap_key(&t->words, s);
        t->start[w] = off;
        t->len[w] = s->key_len;
        t->freq[w] = s->value;
        for (uint32_t j = 0; j < s->key_len; j++) t->sym[off + j] = k[j];
        off += s->key_len;
        w++;
    }
    t->n_words = nw;
    for (w = 0; w < nw; w++) {
        const uint32_t *s = t->sym + t->start[w];
        for (uint32_t j = 0; j + 1 < t->len[w]; j++) {
            sx_status st = pair_add(t, s[j], s[j + 1], (int64_t)t->freq[w], (uint32_t)w, 0);
            if (st) return st;
        }
    }
    for (size_t p = 0; p < t->n_pairs; p++) {
        sx_status st = heap_push(t, (uint32_t)p);
        if (st) return st;
    }
    return SX_OK;
}

// Replaces every (a, b) in word w by z, updating the counts of the neighbouring pairs.
static sx_status merge_word(bpe_trainer *t, uint32_t w, uint32_t a, uint32_t b, uint32_t z) {
    uint32_t *s = t->sym + t->start[w], n = t->len[w], out = 0;
    int64_t f = (int64_t)t->freq[w];
    sx_status st = SX_OK;
    for (uint32_t i = 0; i < n && !st; i++) {
        if (i + 1 < n && s[i] == a && s[i + 1] == b) {
            if (out > 0) {
                st = pair_add(t, s[out - 1], a, -f, w, 0);
                if (!st) st = pair_add(t, s[out - 1], z, f, w, z);
            }
            if (!st && i + 2 < n) {
                st = pair_add(t, b, s[i + 2], -f, w, 0);
                if (!st) st = pair_add(t, z, s[i + 2], f, w, z);
            }
            s[out++] = z;
            i++;
        } else {
            s[out++] = s[i];
        }
    }
    t->len[w] = out;
    return st;
}

sx_status bpe_trainer_run(bpe_trainer *t, size_t vocab_size, const char *name, bpe_vocab **out,
                          uint32_t (*merges)[2], size_t *n_merges) {
    if (vocab_size < 257 || vocab_size > (1u << 24))
        return sx_fail(SX_ERR_ARG, "vocabulary size %zu must be between 257 and 16777216", vocab_size);
    sx_status st = setup_words(t);
    if (st) return st;
    size_t want = vocab_size - 257, done = 0;
    // Token bytes, built as merges are made: (vocab_size) ids, byte strings in a growing blob.
    bpe_vocab *v = NULL;
    if ((st = bpe_vocab_create(&v, name, t->pretok, vocab_size))) return st;
    for (uint32_t i = 0; i < 256 && !st; i++) {
        uint8_t c = (uint8_t)i;
        st = bpe_vocab_add(v, i, &c, 1, TOK_KIND_NORMAL);
    }
    uint8_t *buf = NULL;
    size_t buf_cap = 0;
    while (!st && done < want && t->heap_n) {
        heap_entry e = heap_pop(t);
        pair_info *pi = &t->pairs[e.pair];
        if (pi->count <= 0) continue;
        if (pi->count != e.count) { st = heap_push(t, e.pair); continue; }
        uint32_t a = pi->a, b = pi->b, z = (uint32_t)(256 + done);
        size_t la = v->len[a], lb = v->len[b];
        if (!grow((void **)&buf, &buf_cap, la + lb, 1)) { st = OOM("token bytes"); break; }
        memcpy(buf, v->blob + v->off[a], la);
        memcpy(buf + la, v->blob + v->off[b], lb);
        if ((st = bpe_vocab_add(v, z, buf, la + lb, TOK_KIND_NORMAL))) break;
        if (merges) { merges[done][0] = a; merges[done][1] = b; }
        done++;
        t->n_touched = 0;
        // The pair's word list may grow while we walk it (only pairs with z are added), so index it.
        for (uint32_t k = 0; k < t->pairs[e.pair].words.n && !st; k++) {
            uint32_t w = t->pairs[e.pair].words.w[k];
            if (t->stamp[w] == z) continue;
            t->stamp[w] = z;
            st = merge_word(t, w, a, b, z);
        }
        pi = &t->pairs[e.pair];
        pi->count = 0;
        free(pi->words.w);
        pi->words = (word_list){ 0 };
        for (size_t k = 0; k < t->n_touched && !st; k++) {
            uint32_t p = t->touched[k];
            if (t->pairs[p].count > 0) st = heap_push(t, p);
        }
    }
    free(buf);
    if (!st) st = bpe_vocab_add(v, (uint32_t)(256 + done), (const uint8_t *)"<|endoftext|>", 13, TOK_KIND_SPECIAL);
    if (!st) st = bpe_vocab_finish(v);
    if (st) { bpe_vocab_free(v); return st; }
    if (n_merges) *n_merges = done;
    *out = v;
    return SX_OK;
}
