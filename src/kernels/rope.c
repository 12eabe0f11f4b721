// rope: rotary position embedding (half-split pairing, partial rotation), in place on (B,T,heads,hd).
// rope_forward_ref computes its angles itself in double and is the specification; the fast forward and
// backward read precomputed cos/sin tables. Not responsible for which tensors are rotated (the model).
#include "core/status.h"
#include "core/threads.h"
#include "kernels/rope.h"

#include <math.h>

#include "kernels/vecmath_avx512.h"

void rope_tables(size_t T, size_t rot_dim, double base, float *cos_t, float *sin_t) {
    SX_CHECK(rot_dim % 2 == 0 && rot_dim > 0, "rope: the rotated dimension is even and positive (model_config_parse checks it)");
    size_t half = rot_dim / 2;
    for (size_t t = 0; t < T; t++)
        for (size_t j = 0; j < half; j++) {
            double ang = (double)t * pow(base, -2.0 * (double)j / (double)rot_dim);
            cos_t[t * half + j] = (float)cos(ang);
            sin_t[t * half + j] = (float)sin(ang);
        }
}

void rope_forward_ref(size_t B, size_t T, size_t n_heads, size_t hd, size_t rot_dim, double base, float *x) {
    SX_CHECK(rot_dim % 2 == 0 && rot_dim > 0 && rot_dim <= hd, "rope: the rotated dimension is even, positive and at most the head dimension");
    size_t half = rot_dim / 2;
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++)
            for (size_t h = 0; h < n_heads; h++) {
                float *xh = x + ((b * T + t) * n_heads + h) * hd;
                for (size_t j = 0; j < half; j++) {
                    double ang = (double)t * pow(base, -2.0 * (double)j / (double)rot_dim);
                    double c = cos(ang), s = sin(ang), x0 = xh[j], x1 = xh[j + half];
                    xh[j] = (float)(x0 * c - x1 * s);
                    xh[j + half] = (float)(x0 * s + x1 * c);
                }
            }
}

// Below this many values a rotation runs on the calling thread.
enum { ROPE_PARALLEL_MIN = 1 << 16 };

// Rotates every head of row `row` (of T positions each) by +θ (sign = 1) or −θ (sign = −1).
static inline __attribute__((always_inline)) void rope_row(size_t row, size_t T, size_t n_heads, size_t hd,
                                                           size_t half, const float *cos_t, const float *sin_t,
                                                           float sign, float *x) {
    const size_t t = row % T;
    const float *ct = cos_t + t * half, *st = sin_t + t * half;
    for (size_t h = 0; h < n_heads; h++) {
        float *x0 = x + (row * n_heads + h) * hd, *x1 = x0 + half;
#pragma omp simd
        for (size_t j = 0; j < half; j++) {
            float a = x0[j], c = x1[j], s = sign * st[j];
            x0[j] = a * ct[j] - c * s;
            x1[j] = a * s + c * ct[j];
        }
    }
}

// Head dimension 8 or 16 rotated whole (the KV and MLA studies' rungs): two heads or one fill 16 lanes, and each
// value's partner, the other half of its pair, is a lane permutation away, so the rows at position t rotate 16
// values at a time (rope_row's inner loop runs only hd/2 = 4 or 8 iterations a head). The lane tables depend on
// the position alone and serve the B rows at it.
__attribute__((target("avx512f"))) static void rope_position_avx512(size_t t, size_t B, size_t T, size_t n_heads,
                                                                     size_t hd, const float *cos_t,
                                                                     const float *sin_t, float sign, float *x) {
    const size_t half = hd / 2, n = n_heads * hd;
    float c[16], s[16];
    int32_t partner[16];
    for (size_t k = 0; k < 16; k++) {
        size_t j = k & (hd - 1), i = j & (half - 1);   // hd is 8 or 16
        c[k] = cos_t[t * half + i];
        s[k] = (j < half ? -sign : sign) * sin_t[t * half + i];
        partner[k] = (int32_t)(k - j + (j + half) % hd);
    }
    const __m512 vc = _mm512_loadu_ps(c), vs = _mm512_loadu_ps(s);
    const __m512i vp = _mm512_loadu_si512(partner);
    for (size_t b = 0; b < B; b++) {
        float *row = x + (b * T + t) * n;
        for (size_t i = 0; i < n; i += 16) {
            const __mmask16 in = vm512_lanes(i, 0, n);
            __m512 v = _mm512_maskz_loadu_ps(in, row + i);
            _mm512_mask_storeu_ps(row + i, in, _mm512_fmadd_ps(v, vc, _mm512_mul_ps(_mm512_permutexvar_ps(vp, v), vs)));
        }
    }
}

// Rotates every head of the B·T rows; rows are split over the threads (run serially, the rotation of q and k
// left the other threads idle between two GEMMs). Cloned per ISA so that the inner loop uses wide vectors.
__attribute__((target_clones("avx512f", "avx2", "default")))
static void rope_apply(size_t B, size_t T, size_t n_heads, size_t hd, size_t rot_dim, const float *cos_t,
                       const float *sin_t, float sign, float *x) {
    SX_CHECK(rot_dim % 2 == 0 && rot_dim > 0 && rot_dim <= hd, "rope: the rotated dimension is even, positive and at most the head dimension");
    const size_t half = rot_dim / 2, rows = B * T;
    if (rot_dim == hd && (hd == 8 || hd == 16) && vm512_available()) {
#pragma omp parallel for schedule(static) if (threads_split(rows * n_heads * hd >= ROPE_PARALLEL_MIN))
        for (size_t t = 0; t < T; t++) rope_position_avx512(t, B, T, n_heads, hd, cos_t, sin_t, sign, x);
        return;
    }
    if (!threads_split(rows * n_heads * hd >= ROPE_PARALLEL_MIN)) {
        for (size_t row = 0; row < rows; row++) rope_row(row, T, n_heads, hd, half, cos_t, sin_t, sign, x);
        return;
    }
#pragma omp parallel for schedule(static)
    for (size_t row = 0; row < rows; row++) rope_row(row, T, n_heads, hd, half, cos_t, sin_t, sign, x);
}

void rope_forward(size_t B, size_t T, size_t n_heads, size_t hd, size_t rot_dim, const float *cos_t,
                  const float *sin_t, float *x) {
    rope_apply(B, T, n_heads, hd, rot_dim, cos_t, sin_t, 1.0f, x);
}

void rope_backward(size_t B, size_t T, size_t n_heads, size_t hd, size_t rot_dim, const float *cos_t,
                   const float *sin_t, float *d) {
    rope_apply(B, T, n_heads, hd, rot_dim, cos_t, sin_t, -1.0f, d);
}
