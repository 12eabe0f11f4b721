// gemm_ukernel_avx512: fp32 micro-kernel for AVX-512F (see gemm_ukernel.h for the packed layouts).
// 12 x 32 tile: 24 zmm accumulators cover the FMA latency on both FMA pipes; per k, two B vectors are
// loaded and each of the 12 A values is broadcast straight into the FMA. The same body with fewer rows
// (1..11, each a constant) serves the last rows of a product: one decoded row costs 2 FMAs per k, not 24.
#include "kernels/gemm_ukernel.h"

#include <immintrin.h>

enum { MR = 12, NR = 32 };

// Rows 0..m of the tile (m <= MR). Element (r, k) of A is a[r*rs + k*ks]; inlined with m constant and rs = 1
// (k-major) or ks = 1 (row-major) constant.
static inline __attribute__((always_inline)) void body(int m, size_t kc, const float *a, size_t rs, size_t ks,
                                                       const float *b, float *c, size_t ldc, bool accumulate) {
    __m512 c0[MR], c1[MR];
    gemm_prefetch_c(c, ldc, m, NR);   // the C tile is touched only after the k loop
#pragma GCC unroll 12
    for (int r = 0; r < m; r++) c0[r] = c1[r] = _mm512_setzero_ps();
    const size_t refetch = kc > GEMM_C_REFETCH_STEPS ? kc - GEMM_C_REFETCH_STEPS : kc;   // kc: not needed
    for (size_t k = 0; k < kc; k++) {
        if (k == refetch) gemm_prefetch_c(c, ldc, m, NR);
        __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
        for (int r = 0; r < m; r++) {
            __m512 ar = _mm512_set1_ps(a[r * rs]);
            c0[r] = _mm512_fmadd_ps(ar, b0, c0[r]);
            c1[r] = _mm512_fmadd_ps(ar, b1, c1[r]);
        }
        a += ks;
        b += NR;
    }
#pragma GCC unroll 12
    for (int r = 0; r < m; r++) {
        float *cr = c + (size_t)r * ldc;
        if (accumulate) {
            c0[r] = _mm512_add_ps(c0[r], _mm512_loadu_ps(cr));
            c1[r] = _mm512_add_ps(c1[r], _mm512_loadu_ps(cr + 16));
        }
        _mm512_storeu_ps(cr, c0[r]);
        _mm512_storeu_ps(cr + 16, c1[r]);
    }
}

// body for M rows, M a constant, at A's strides.
#define ROWS(M)                                                                                                 \
    if (a_rs == 1)                                                                                              \
        body(M, kc, a, 1, a_ks, b, c, ldc, accumulate);                                                        \
    else                                                                                                        \
        body(M, kc, a, a_rs, 1, b, c, ldc, accumulate)

static void ukernel_avx512(size_t kc, const void *a, size_t a_rs, size_t a_ks, const void *b, float *c,
                           size_t ldc, bool accumulate) {
    ROWS(MR);
}

static void ukernel_avx512_rows(size_t m, size_t kc, const void *a, size_t a_rs, size_t a_ks, const void *b,
                                float *c, size_t ldc, bool accumulate) {
    switch (m) {
    case 1: ROWS(1); break;
    case 2: ROWS(2); break;
    case 3: ROWS(3); break;
    case 4: ROWS(4); break;
    case 5: ROWS(5); break;
    case 6: ROWS(6); break;
    case 7: ROWS(7); break;
    case 8: ROWS(8); break;
    case 9: ROWS(9); break;
    case 10: ROWS(10); break;
    default: ROWS(11); break;   // m = 11: m < MR
    }
}

const gemm_ukernel gemm_ukernel_avx512 = {MR, NR, 1, ukernel_avx512, ukernel_avx512_rows};
