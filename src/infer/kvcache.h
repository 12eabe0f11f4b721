// kvcache: the per-layer key/value rows of many sequences that share prefixes. A sequence is a segment of
// positions plus a parent (the sequence it was forked from) and the parent's length at the fork: forking
// copies nothing, so N samples of one prompt, or the beams of a search, store the shared prefix once
// (the tree design of llama.cpp's cell tagging / vLLM's block sharing, without blocks). A row is whatever
// the attention mixer caches per position and layer (its block_module's cache_floats); each position also keeps
// its token id (what a model that looks back at tokens, like the bigram hash embedding, reads).
// Not responsible for computing the rows or for attention (the mixer's decode, model/block.h).
#ifndef SEXTANT_INFER_KVCACHE_H
#define SEXTANT_INFER_KVCACHE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/status.h"
#include "model/block.h"

typedef struct {
    int parent;          // -1 for a root sequence
    size_t base;         // absolute position of this segment's first row (= parent's length at the fork)
    size_t len, cap;     // rows stored here, rows allocated
    float *rows;         // (n_layer, cap, row) — layer l's rows at rows + l·cap·row
    int32_t *tok;        // (cap) the token at each position
    int refs;            // 1 while the sequence is held + 1 per live child segment
} kv_segment;

typedef struct {
    size_t n_layer, row;
    kv_segment *seg;
    size_t n_seg, cap_seg;
} kvcache;

void kvcache_init(kvcache *kv, size_t n_layer, size_t row_floats);
void kvcache_free(kvcache *kv);
// A new empty root sequence; returns its id (>= 0) or -1 when out of memory (message recorded).
int kvcache_new_seq(kvcache *kv);
// A new sequence that sees src's current rows without copying them; returns its id or -1.
int kvcache_fork(kvcache *kv, int src);
// Drops a sequence; its rows are freed once no forked child still sees them.
void kvcache_release(kvcache *kv, int seq);
// Positions visible to seq (its own rows plus its ancestors' rows before each fork point).
size_t kvcache_len(const kvcache *kv, int seq);
// Appends one position holding token tok to seq and returns its absolute index; the caller fills its row in
// every layer via kvcache_row. Returns (size_t)-1 when out of memory.
size_t kvcache_append(kvcache *kv, int seq, int32_t tok);
// Drops seq's positions from len on (a speculative decoder's rejected proposals): their rows are reused by the
// next appends. len must not reach below seq's own first position, and no live fork may read seq.
void kvcache_truncate(kvcache *kv, int seq, size_t len);
// The token at absolute position pos < kvcache_len(seq), its own or inherited from an ancestor.
int32_t kvcache_token(const kvcache *kv, int seq, size_t pos);
// Row of layer `layer` at absolute position pos, which must be one of seq's own (not inherited) rows.
float *kvcache_row(kvcache *kv, int seq, size_t layer, size_t pos);
// The rows of layer `layer` visible to seq at positions < n_pos, as spans (model/block.h) ordered by position
// (root first).
// Writes at most max_spans spans; returns how many.
size_t kvcache_spans(const kvcache *kv, int seq, size_t layer, size_t n_pos, kv_span *spans, size_t max_spans);
// Floats currently stored in rows (allocated capacity of live segments), for memory accounting.
size_t kvcache_floats(const kvcache *kv);
// Depth of seq's parent chain + 1 (an upper bound on kvcache_spans' count).
size_t kvcache_depth(const kvcache *kv, int seq);

#endif
