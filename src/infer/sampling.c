#include <math.h>
#include <stdlib.h>
#include "core/status.h"
#include "infer/sampling.h"

int32_t sampler_argmax(const float *logits, size_t V) {
    size_t best = 0;
    for (size_t i = 1; i < V; i++)
        if (logits[i] > logits[best]) best = i;
    return (int32_t)best;
}

typedef struct { double p; int32_t id; } ranked;
static int by_prob_desc(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return x->id - y->id;
}

void sampler_probs(const sampler_config *c, const float *logits, size_t V, double *probs, void *scratch) {
    if (c->temperature <= 0) {
        for (size_t i = 0; i < V; i++) probs[i] = 0;
        probs[sampler_argmax(logits, V)] = 1;
        return;
    }
    double mx = -INFINITY, sum = 0;
    for (size_t i = 0; i < V; i++) mx = fmax(mx, logits[i] / c->temperature);
    for (size_t i = 0; i < V; i++) sum += (probs[i] = exp(logits[i] / c->temperature - mx));
    for (size_t i = 0; i < V; i++) probs[i] /= sum;
    size_t k = c->top_k && c->top_k < V ? c->top_k : V;
    if (k == V && c->top_p >= 1) return;
    ranked *r = scratch;
    for (size_t i = 0; i < V; i++) r[i] = (ranked){probs[i], (int32_t)i};
    qsort(r, V, sizeof *r, by_prob_desc);
    double kept = 0;
    size_t keep = 0;
    while (keep < k && (keep == 0 || kept < c->top_p)) kept += r[keep++].p;
    for (size_t i = keep; i < V; i++) probs[r[i].id] = 0;
    for (size_t i = 0; i < keep; i++) probs[r[i].id] /= kept;
}

int32_t sampler_pick(const double *probs, size_t V, double u) {
    double acc = 0;
    for (size_t i = 0; i < V; i++)
        if (u < (acc += probs[i])) return (int32_t)i;
    for (size_t i = V; i-- > 0;)   // rounding left u above the last cumulative sum: take the last kept token
        if (probs[i] > 0) return (int32_t)i;
    return 0;
}

int32_t sampler_draw(const sampler_config *c, const float *logits, size_t V, rng_state *rng) {
    if (c->temperature <= 0) return sampler_argmax(logits, V);
    double *probs = sx_alloc(V * sizeof *probs, "sampling probs");
    void *order = sx_alloc(V * SAMPLER_SCRATCH_BYTES, "sampling order");
    if (!probs || !order) { free(probs); free(order); return sampler_argmax(logits, V); }
    sampler_probs(c, logits, V, probs, order);
    int32_t tok = sampler_pick(probs, V, rng_uniform(rng));
    free(probs);
    free(order);
    return tok;
}
