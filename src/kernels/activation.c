// activation: ReLU², GELU (erf) and SwiGLU, forward and backward, elementwise.
// The *_ref functions are the specification (double arithmetic); the fast ones are vectorised and threaded
// over chunks of the array when it is large. Not responsible for the surrounding GEMMs.
// -std=c11 turns off FMA contraction; the exp/erf polynomials want it. Deterministic for a given build.
#pragma GCC optimize("fp-contract=fast")

#include "core/threads.h"
#include "kernels/activation.h"

#include <math.h>

#include "kernels/vecmath.h"

// ---------------------------------------------------------------------------------------------------------
// Reference (the specification).

void relu2_forward_ref(size_t n, const float *h, float *a) {
    for (size_t i = 0; i < n; i++) {
        double r = h[i] > 0 ? h[i] : 0.0;
        a[i] = (float)(r * r);
    }
}

void relu2_backward_ref(size_t n, const float *h, const float *da, float *dh) {
    for (size_t i = 0; i < n; i++) dh[i] = (float)((double)da[i] * 2.0 * (h[i] > 0 ? h[i] : 0.0));
}

void gelu_forward_ref(size_t n, const float *h, float *a) {
    for (size_t i = 0; i < n; i++) {
        double x = h[i];
        a[i] = (float)(x * 0.5 * (1.0 + erf(x / sqrt(2.0))));
    }
}

void gelu_backward_ref(size_t n, const float *h, const float *da, float *dh) {
    for (size_t i = 0; i < n; i++) {
        double x = h[i];
        double cdf = 0.5 * (1.0 + erf(x / sqrt(2.0)));
        double pdf = exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
        dh[i] = (float)((double)da[i] * (cdf + x * pdf));
    }
}

void swiglu_forward_ref(size_t n, const float *g, const float *u, float *m) {
    for (size_t i = 0; i < n; i++) {
        double x = g[i];
        double sig = 1.0 / (1.0 + exp(-x));
        m[i] = (float)(x * sig * (double)u[i]);
    }
}

void swiglu_backward_ref(size_t n, const float *g, const float *u, const float *dm, float *dg, float *du) {
    for (size_t i = 0; i < n; i++) {
        double x = g[i], sig = 1.0 / (1.0 + exp(-x));
        double d = dm[i];
        du[i] = (float)(d * x * sig);
        dg[i] = (float)(d * (double)u[i] * sig * (1.0 + x * (1.0 - sig)));
    }
}

// ---------------------------------------------------------------------------------------------------------
// Fast versions.

// Elementwise loops over [0, n), vectorised (cloned per ISA); the public functions split large arrays into
// chunks across threads.
#define ACT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
enum { ACT_CHUNK = 1 << 14 };

// Φ(h), the standard normal CDF, from Abramowitz & Stegun 7.1.26 for erfc (absolute error < 1.5e-7 in erf,
// so |ΔΦ| < 8e-8), branch-free so it vectorises.
static inline float act_phi(float h) {
    float x = fabsf(h) * 0.70710678118654752f;
    float t = 1.0f / (1.0f + 0.3275911f * x);
    float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    float half_erfc = 0.5f * poly * vm_expf(-x * x);
    return h >= 0 ? 1.0f - half_erfc : half_erfc;
}

static inline float act_sigmoid(float x) { return 1.0f / (1.0f + vm_expf(-x)); }

ACT_CLONES static void relu2_fwd_range(size_t n, const float *h, float *a) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        float r = h[i] > 0 ? h[i] : 0.0f;
        a[i] = r * r;
    }
}
ACT_CLONES static void relu2_bwd_range(size_t n, const float *h, const float *da, float *dh) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) dh[i] = da[i] * 2.0f * (h[i] > 0 ? h[i] : 0.0f);
}
ACT_CLONES static void gelu_fwd_range(size_t n, const float *h, float *a) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) a[i] = h[i] * act_phi(h[i]);
}
ACT_CLONES static void gelu_bwd_range(size_t n, const float *h, const float *da, float *dh) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        float x = h[i], pdf = 0.39894228040143268f * vm_expf(-0.5f * x * x);
        dh[i] = da[i] * (act_phi(x) + x * pdf);
    }
}
ACT_CLONES static void swiglu_fwd_range(size_t n, const float *g, const float *u, float *m) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) m[i] = g[i] * act_sigmoid(g[i]) * u[i];
}
ACT_CLONES static void swiglu_bwd_range(size_t n, const float *g, const float *u, const float *dm, float *dg,
                                        float *du) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        float x = g[i], sig = act_sigmoid(x);
        du[i] = dm[i] * x * sig;
        dg[i] = dm[i] * u[i] * sig * (1.0f + x * (1.0f - sig));
    }
}

// Runs STMT for chunk [i0, i0+len) of [0, n), in parallel when n is large (threads_split).
#define ACT_CHUNK_RUN(c_, n, STMT)                                                  \
    do {                                                                            \
        size_t i0 = (c_) * ACT_CHUNK, len = (n) - i0 < ACT_CHUNK ? (n) - i0 : ACT_CHUNK; \
        STMT;                                                                       \
    } while (0)
#define ACT_CHUNKED(n, STMT)                                                        \
    do {                                                                            \
        size_t nchunks_ = ((n) + ACT_CHUNK - 1) / ACT_CHUNK;                        \
        if (!threads_split(nchunks_ >= 4)) {                                        \
            for (size_t c_ = 0; c_ < nchunks_; c_++) ACT_CHUNK_RUN(c_, n, STMT);    \
            break;                                                                  \
        }                                                                           \
        _Pragma("omp parallel for schedule(static)")                                \
        for (size_t c_ = 0; c_ < nchunks_; c_++) ACT_CHUNK_RUN(c_, n, STMT);        \
    } while (0)

void relu2_forward(size_t n, const float *h, float *a) { ACT_CHUNKED(n, relu2_fwd_range(len, h + i0, a + i0)); }
void relu2_backward(size_t n, const float *h, const float *da, float *dh) {
    ACT_CHUNKED(n, relu2_bwd_range(len, h + i0, da + i0, dh + i0));
}
void gelu_forward(size_t n, const float *h, float *a) { ACT_CHUNKED(n, gelu_fwd_range(len, h + i0, a + i0)); }
void gelu_backward(size_t n, const float *h, const float *da, float *dh) {
    ACT_CHUNKED(n, gelu_bwd_range(len, h + i0, da + i0, dh + i0));
}
void swiglu_forward(size_t n, const float *g, const float *u, float *m) {
    ACT_CHUNKED(n, swiglu_fwd_range(len, g + i0, u + i0, m + i0));
}
void swiglu_backward(size_t n, const float *g, const float *u, const float *dm, float *dg, float *du) {
    ACT_CHUNKED(n, swiglu_bwd_range(len, g + i0, u + i0, dm + i0, dg + i0, du + i0));
}
