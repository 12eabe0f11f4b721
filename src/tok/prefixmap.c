// prefixmap: see prefixmap.h. One hash lookup per proper prefix length, longest first: O(Σ token lengths)
// lookups, a fraction of a second for o200k_base.
#include "tok/prefixmap.h"

size_t tok_prefix_map(const bpe_vocab *v, size_t V, int32_t *out) {
    size_t found = 0;
    for (size_t id = 0; id < V; id++) {
        out[id] = -1;
        if (id >= v->n_ids || v->kind[id] != TOK_KIND_NORMAL) continue;
        const uint8_t *bytes = v->blob + v->off[id];
        for (size_t n = v->len[id]; n-- > 1;) {
            uint32_t p = bpe_rank(v, bytes, n);
            if (p != TOK_NONE && p < V) {
                out[id] = (int32_t)p;
                found++;
                break;
            }
        }
    }
    return found;
}
