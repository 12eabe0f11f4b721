// adamw: see adamw.h.
#include "optim/adamw.h"

#include <assert.h>
#include <math.h>

typedef struct { float decay, b1, one_b1, b2, one_b2, step_size, bc2_sqrt, eps; } adamw_coef;

// The update on elements [lo, hi). sqrtf of v >= 0 never sets errno; without errno semantics the loop
// vectorises (this is not fast-math: every operation still rounds as IEEE requires).
__attribute__((optimize("no-math-errno"))) static void adamw_range(float *restrict p, const float *restrict g,
                                                                     float *restrict m, float *restrict v,
                                                                     size_t lo, size_t hi, adamw_coef c) {
    for (size_t i = lo; i < hi; i++) {
        float gi = g[i];
        float mi = c.b1 * m[i] + c.one_b1 * gi;
        float vi = c.b2 * v[i] + c.one_b2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float denom = sqrtf(vi) / c.bc2_sqrt + c.eps;
        p[i] = p[i] * c.decay - c.step_size * (mi / denom);
    }
}

void adamw_update(float *p, const float *g, float *m, float *v, size_t n, const adamw_step_args *a) {
    assert(a->t >= 1 && "adamw_update: step counter starts at 1 (did optimizer_step increment t?)");
    const adamw_coef c = {
        .decay = (float)(1.0 - a->lr * a->weight_decay),
        .b1 = (float)a->beta1,
        .one_b1 = (float)(1.0 - a->beta1),
        .b2 = (float)a->beta2,
        .one_b2 = (float)(1.0 - a->beta2),
        .step_size = (float)(a->lr / (1.0 - pow(a->beta1, (double)a->t))),
        .bc2_sqrt = (float)sqrt(1.0 - pow(a->beta2, (double)a->t)),
        .eps = (float)a->eps,
    };
    enum { BLOCK = 8192 };
    const size_t blocks = (n + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static) if (blocks >= 4)
    for (size_t b = 0; b < blocks; b++) {
        size_t lo = b * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
        adamw_range(p, g, m, v, lo, hi, c);
    }
}
