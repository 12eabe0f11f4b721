// gemm_ukernel_avx2: fp32 micro-kernel for AVX2 + FMA (see gemm_ukernel.h for the packed layouts).
// 6 x 16 tile: 12 ymm accumulators, two B vectors per k, each A value broadcast into the FMA.
#include "kernels/gemm_ukernel.h"

#include <immintrin.h>

enum { MR = 6, NR = 16 };

// Element (r, k) of A is a[r*rs + k*ks]; inlined with rs = 1 (k-major) or ks = 1 (row-major) constant.
static inline __attribute__((always_inline)) void body(size_t kc, const float *a, size_t rs, size_t ks,
                                                       const float *b, float *c, size_t ldc, bool accumulate) {
    __m256 c0[MR], c1[MR];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) c0[r] = c1[r] = _mm256_setzero_ps();
    for (size_t k = 0; k < kc; k++) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            __m256 ar = _mm256_broadcast_ss(a + r * rs);
            c0[r] = _mm256_fmadd_ps(ar, b0, c0[r]);
            c1[r] = _mm256_fmadd_ps(ar, b1, c1[r]);
        }
        a += ks;
        b += NR;
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
        float *cr = c + (size_t)r * ldc;
        if (accumulate) {
            c0[r] = _mm256_add_ps(c0[r], _mm256_loadu_ps(cr));
            c1[r] = _mm256_add_ps(c1[r], _mm256_loadu_ps(cr + 8));
        }
        _mm256_storeu_ps(cr, c0[r]);
        _mm256_storeu_ps(cr + 8, c1[r]);
    }
}

static void ukernel_avx2(size_t kc, const void *a, size_t a_rs, size_t a_ks, const void *b, float *c,
                         size_t ldc, bool accumulate) {
    if (a_rs == 1)
        body(kc, a, 1, a_ks, b, c, ldc, accumulate);
    else
        body(kc, a, a_rs, 1, b, c, ldc, accumulate);
}

const gemm_ukernel gemm_ukernel_avx2 = {MR, NR, 1, ukernel_avx2, NULL};
