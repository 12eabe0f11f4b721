// speculative: draft proposals, one target forward per round, exact acceptance. See speculative.h.
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "infer/speculative.h"

size_t spec_verify(size_t k, size_t V, const double *p, const double *q, const int32_t *x, rng_state *rng,
                   double *resid, int32_t *next) {
    for (size_t i = 0; i < k; i++) {
        double px = p[i * V + x[i]], qx = q[i * V + x[i]];
        if (rng_uniform(rng) * qx < px) continue;   // kept with probability min(1, px / qx)
        // Rejected: draw from the part of p the draft under-proposes, max(0, p − q) normalised. Its mass is
        // sum max(0, q − p) ≥ qx − px > 0; should rounding still leave none, p itself is the right law.
        const double *pi = p + i * V, *qi = q + i * V;
        double mass = 0;
        for (size_t j = 0; j < V; j++) mass += (resid[j] = pi[j] > qi[j] ? pi[j] - qi[j] : 0);
        if (mass > 0)
            for (size_t j = 0; j < V; j++) resid[j] /= mass;
        *next = sampler_pick(mass > 0 ? resid : pi, V, rng_uniform(rng));
        return i;
    }
    *next = sampler_pick(p + k * V, V, rng_uniform(rng));
    return k;
}

size_t spec_verify_greedy(size_t k, size_t V, const float *logits, const int32_t *x, int32_t *next) {
    size_t n = 0;
    while (n < k && sampler_argmax(logits + n * V, V) == x[n]) n++;
    *next = sampler_argmax(logits + n * V, V);
    return n;
}

void spec_result_free(spec_result *r) {
    free(r->tok);
    memset(r, 0, sizeof *r);
}

// A decoder's side of the generation: its sequence, how many of the committed tokens its cache holds, and
// the logits of its last forward.
typedef struct {
    decoder *d;
    int seq;
    float *logits;   // (k + 1, V)
} side;

// Feeds the committed tokens s[have..len) the side's cache lacks, then extra (n_extra), in one forward;
// the logits of the last 1 + n_extra rows land in side->logits (the earlier rows' are not computed).
static sx_status feed(side *sd, const int32_t *s, size_t len, const int32_t *extra, size_t n_extra, int32_t *rows,
                      int *seqs) {
    size_t have = kvcache_len(&sd->d->cache, sd->seq);
    sx_status st = SX_OK;
    for (size_t i = 0; i + 1 < len - have; i++) seqs[i] = sd->seq;   // all but the last: no logits needed
    if (len - have > 1) st = decoder_forward(sd->d, len - have - 1, seqs, s + have, NULL);
    if (st) return st;
    rows[0] = s[len - 1];
    if (n_extra) memcpy(rows + 1, extra, n_extra * sizeof *rows);   // extra may be NULL when empty
    for (size_t i = 0; i <= n_extra; i++) seqs[i] = sd->seq;
    return decoder_forward(sd->d, 1 + n_extra, seqs, rows, sd->logits);
}

sx_status spec_generate(decoder *target, decoder *draft, const int32_t *prompt, size_t np, const spec_config *c,
                        rng_state *rng, spec_result *out) {
    memset(out, 0, sizeof *out);
    size_t V = target->m->cfg.vocab, K = c->k, max_new = c->gen.max_new;
    if (draft->m->cfg.vocab != V)
        return sx_fail(SX_ERR_MISMATCH, "the draft model's vocabulary has %zu tokens, the target's %zu: the draft "
                       "must be trained with the target's tokenizer (a smaller rung of the same ladder)",
                       draft->m->cfg.vocab, V);
    if (np == 0 || K == 0) return sx_fail(SX_ERR_ARG, "speculative decoding needs a prompt and k >= 1");
    size_t ctx = target->max_ctx < draft->max_ctx ? target->max_ctx : draft->max_ctx;
    if (np > ctx) return sx_fail(SX_ERR_ARG, "the prompt (%zu tokens) exceeds the context (%zu)", np, ctx);
    size_t cap = np + max_new + 1;
    int32_t *s = sx_alloc(cap * sizeof *s, "spec tokens"), *x = sx_alloc((K + 1) * sizeof *x, "spec x");
    int32_t *rows = sx_alloc((np + K + 1) * sizeof *rows, "spec rows");
    int *seqs = sx_alloc((np + K + 1) * sizeof *seqs, "spec seqs");
    double *p = sx_alloc((K + 1) * V * sizeof *p, "spec p"), *q = sx_alloc(K * V * sizeof *q, "spec q");
    double *resid = sx_alloc(V * sizeof *resid, "spec resid");
    void *order = sx_alloc(V * SAMPLER_SCRATCH_BYTES, "spec order");
    side t = {.d = target, .seq = kvcache_new_seq(&target->cache), .logits = sx_alloc((K + 1) * V * sizeof(float), "spec t")};
    side dr = {.d = draft, .seq = kvcache_new_seq(&draft->cache), .logits = sx_alloc(V * sizeof(float), "spec d")};
    sx_status st = s && x && rows && seqs && p && q && resid && order && t.logits && dr.logits && t.seq >= 0 && dr.seq >= 0
                   ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory for speculative decoding");
    if (!st) memcpy(s, prompt, np * sizeof *s);
    size_t len = np;
    const sampler_config *sc = &c->gen.sampler;
    const bool greedy = sc->temperature <= 0;   // argmaxes only: no distributions, no draws (as plain greedy)
    while (!st && out->len < max_new && !out->stopped) {
        // As plain generation: the context ends a sample once it is full, though a prompt that fills it still
        // gets one token.
        if (len >= ctx && out->len > 0) { out->full = true; break; }
        // At most the tokens still wanted and the context allow: a round emits up to k + 1.
        size_t k = K, left = max_new - out->len - 1, room = len < ctx ? ctx - len - 1 : 0;
        if (k > left) k = left;
        if (k > room) k = room;
        for (size_t i = 0; i < k && !st; i++) {   // the draft proposes x_1..x_k, feeding all but x_k
            st = i == 0 ? feed(&dr, s, len, NULL, 0, rows, seqs) : decoder_forward(draft, 1, &dr.seq, &x[i - 1], dr.logits);
            if (st) break;
            if (greedy) { x[i] = sampler_argmax(dr.logits, V); continue; }
            sampler_probs(sc, dr.logits, V, q + i * V, order);
            x[i] = sampler_pick(q + i * V, V, rng_uniform(rng));
        }
        if (!st) st = feed(&t, s, len, x, k, rows, seqs);
        if (st) break;
        for (size_t i = 0; i <= k && !greedy; i++) sampler_probs(sc, t.logits + i * V, V, p + i * V, order);
        size_t n = greedy ? spec_verify_greedy(k, V, t.logits, x, &x[k]) : spec_verify(k, V, p, q, x, rng, resid, &x[k]);
        x[n] = x[k];   // the emitted tokens: the n kept proposals and the one after them
        // Roll back: each cache keeps only what agrees with the new committed tokens.
        for (side *sd = &t; sd; sd = sd == &t ? &dr : NULL) {
            size_t keep = len + n, have = kvcache_len(&sd->d->cache, sd->seq);
            if (have > keep) kvcache_truncate(&sd->d->cache, sd->seq, keep);
        }
        out->rounds++;
        out->proposed += k;
        out->accepted += n;
        out->rejected += n < k;
        for (size_t i = 0; i <= n && !out->stopped; i++) {
            s[len++] = x[i];
            out->len++;
            out->stopped = gen_is_stop(&c->gen, x[i]);
        }
        if (c->gen.progress) c->gen.progress(c->gen.progress_ctx, out->len, 1);   // one stream: this sample
    }
    if (!st && out->len) {
        out->tok = sx_alloc(out->len * sizeof *out->tok, "spec out");
        if (out->tok) memcpy(out->tok, s + np, out->len * sizeof *out->tok);
        else st = sx_fail(SX_ERR_NOMEM, "out of memory");
    }
    if (t.seq >= 0) kvcache_release(&target->cache, t.seq);
    if (dr.seq >= 0) kvcache_release(&draft->cache, dr.seq);
    free(s), free(x), free(rows), free(seqs), free(p), free(q), free(resid), free(order), free(t.logits), free(dr.logits);
    if (st) spec_result_free(out);
    return st;
}
