// gemm_ukernel_bf16: bf16 micro-kernel for AVX-512 BF16 (see gemm_ukernel.h for the pair-interleaved
// packed layouts). 12 x 32 tile, 24 zmm fp32 accumulators; per pair of k, two B vectors (16 columns x 2 k
// each) are loaded and each row's (k, k+1) pair of A is broadcast as one 32-bit lane into vdpbf16ps.
#include "kernels/gemm_ukernel.h"

#include <immintrin.h>
#include <stdint.h>

enum { MR = 12, NR = 32 };

// The (k, k+1) pair of row r of the A panel is the int32 a[r*rs + k/2*ks]; inlined with rs = 1 or ks = 1.
static inline __attribute__((always_inline)) void body(size_t kc, const int32_t *a, size_t rs, size_t ks,
                                                       const __m512bh *b, float *c, size_t ldc,
                                                       bool accumulate) {
    __m512 c0[MR], c1[MR];
    gemm_prefetch_c(c, ldc, MR, NR);   // the C tile is touched only after the k loop
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) c0[r] = c1[r] = _mm512_setzero_ps();
    const size_t refetch = kc > 2 * GEMM_C_REFETCH_STEPS ? kc - 2 * GEMM_C_REFETCH_STEPS : kc; // steps of 2 k
    for (size_t k = 0; k < kc; k += 2) {
        if (k == refetch) gemm_prefetch_c(c, ldc, MR, NR);
        __m512bh b0 = b[0], b1 = b[1];
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            __m512bh ar = (__m512bh)_mm512_set1_epi32(a[r * rs]);
            c0[r] = _mm512_dpbf16_ps(c0[r], ar, b0);
            c1[r] = _mm512_dpbf16_ps(c1[r], ar, b1);
        }
        a += ks;
        b += 2;
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

static void ukernel_bf16(size_t kc, const void *a, size_t a_rs, size_t a_ks, const void *b, float *c,
                         size_t ldc, bool accumulate) {
    if (a_rs == 1)
        body(kc, a, 1, a_ks, b, c, ldc, accumulate);
    else
        body(kc, a, a_rs, 1, b, c, ldc, accumulate);
}

const gemm_ukernel gemm_ukernel_bf16 = {MR, NR, 2, ukernel_bf16, NULL};
