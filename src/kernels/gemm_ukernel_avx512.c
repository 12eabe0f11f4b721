// gemm_ukernel_avx512: fp32 micro-kernel for AVX-512F (see gemm_ukernel.h for the packed layouts).
// 12 x 32 tile: 24 zmm accumulators cover the FMA latency on both FMA pipes; per k, two B vectors are
// loaded and each of the 12 A values is broadcast straight into the FMA.
#include "kernels/gemm_ukernel.h"

#include <immintrin.h>

enum { MR = 12, NR = 32 };

// Element (r, k) of A is a[r*rs + k*ks]; inlined with rs = 1 (k-major) or ks = 1 (row-major) constant.
static inline __attribute__((always_inline)) void body(size_t kc, const float *a, size_t rs, size_t ks,
                                                       const float *b, float *c, size_t ldc, bool accumulate) {
    __m512 c0[MR], c1[MR];
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
        // The C tile is touched only after the k loop: start fetching it now so the epilogue does not stall.
        _mm_prefetch((const char *)(c + (size_t)r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + (size_t)r * ldc + 16), _MM_HINT_T0);
        c0[r] = c1[r] = _mm512_setzero_ps();
    }
    for (size_t k = 0; k < kc; k++) {
        __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            __m512 ar = _mm512_set1_ps(a[r * rs]);
            c0[r] = _mm512_fmadd_ps(ar, b0, c0[r]);
            c1[r] = _mm512_fmadd_ps(ar, b1, c1[r]);
        }
        a += ks;
        b += NR;
    }
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
        float *cr = c + (size_t)r * ldc;
        if (accumulate) {
            c0[r] = _mm512_add_ps(c0[r], _mm512_loadu_ps(cr));
            c1[r] = _mm512_add_ps(c1[r], _mm512_loadu_ps(cr + 16));
        }
        _mm512_storeu_ps(cr, c0[r]);
        _mm512_storeu_ps(cr + 16, c1[r]);
    }
}

static void ukernel_avx512(size_t kc, const void *a, size_t a_rs, size_t a_ks, const void *b, float *c,
                           size_t ldc, bool accumulate) {
    if (a_rs == 1)
        body(kc, a, 1, a_ks, b, c, ldc, accumulate);
    else
        body(kc, a, a_rs, 1, b, c, ldc, accumulate);
}

const gemm_ukernel gemm_ukernel_avx512 = {MR, NR, 1, ukernel_avx512};
