// attention_bf16: the tile products of attention.c on bf16 operands (vdpbf16ps, fp32 accumulation), for
// GEMM_BF16 training on CPUs with AVX-512 BF16, and the conversions that lay the fp32 tiles out for them.
// An operand is a matrix of 32-bit words, each a pair of bf16 values adjacent along the product's k, as
// vdpbf16ps reads them (first of the pair in the low half). See attention_bf16.h for the layouts.
#include "kernels/attention_bf16.h"

#include <immintrin.h>
#include <string.h>

#include "kernels/gemm.h"
#include "kernels/gemm_ukernel.h"

#define ATT_INLINE static inline __attribute__((always_inline))

// Columns [0, 16·NV) of R rows of C (+)= A·B over kw words of k, the last vector masked to `last` columns.
ATT_INLINE void mm_block(int R, int NV, __mmask16 last, size_t kw, const uint32_t *A, size_t ars, size_t acs,
                         const uint32_t *B, size_t ldb, float *C, size_t ldc, bool accumulate) {
    __m512 acc[16][4];
    for (int r = 0; r < R; r++)
        for (int v = 0; v < NV; v++)
            acc[r][v] = accumulate ? _mm512_maskz_loadu_ps(v == NV - 1 ? last : 0xffff, C + r * ldc + 16 * v)
                                   : _mm512_setzero_ps();
    for (size_t w = 0; w < kw; w++) {
        __m512bh b[4];
        for (int v = 0; v < NV; v++) b[v] = (__m512bh)_mm512_loadu_si512(B + w * ldb + 16 * v);
        for (int r = 0; r < R; r++) {
            const __m512bh a = (__m512bh)_mm512_set1_epi32((int)A[r * ars + w * acs]);
            for (int v = 0; v < NV; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], a, b[v]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int v = 0; v < NV; v++)
            _mm512_mask_storeu_ps(C + r * ldc + 16 * v, v == NV - 1 ? last : 0xffff, acc[r][v]);
}

// About 16 accumulators whatever the panel width: R rows of NV vectors, R a power of two <= 16 / NV.
ATT_INLINE void mm_rows(int R, int NV, __mmask16 last, size_t kw, const uint32_t *A, size_t ars, size_t acs,
                        const uint32_t *B, size_t ldb, float *C, size_t ldc, bool accumulate) {
#define ATT_BF16_CASE(RR) \
    case RR: mm_block(RR, NV, last, kw, A, ars, acs, B, ldb, C, ldc, accumulate); break;
    switch (R) {
    ATT_BF16_CASE(16) ATT_BF16_CASE(8) ATT_BF16_CASE(4) ATT_BF16_CASE(2)
    default: mm_block(1, NV, last, kw, A, ars, acs, B, ldb, C, ldc, accumulate); break;
    }
#undef ATT_BF16_CASE
}

void attn_bf16_mm(size_t m, size_t n, size_t kw, const uint32_t *A, size_t ars, size_t acs, const uint32_t *B,
                  size_t ldb, float *C, size_t ldc, bool accumulate) {
    for (size_t j = 0; j < n; j += 64) { // panels of up to 64 columns: 4 vectors
        const size_t w = n - j < 64 ? n - j : 64, nv = (w + 15) / 16;
        const __mmask16 last = (__mmask16)(w % 16 ? (1u << (w % 16)) - 1 : 0xffff);
        const size_t rmax = 16 / (nv == 3 ? 4 : nv);
        for (size_t i = 0, R; i < m; i += R) {
            for (R = rmax; R > m - i;) R /= 2;
            const uint32_t *Ai = A + i * ars;
            float *Ci = C + i * ldc + j;
            switch (nv) {
            case 4: mm_rows((int)R, 4, last, kw, Ai, ars, acs, B + j, ldb, Ci, ldc, accumulate); break;
            case 3: mm_rows((int)R, 3, last, kw, Ai, ars, acs, B + j, ldb, Ci, ldc, accumulate); break;
            case 2: mm_rows((int)R, 2, last, kw, Ai, ars, acs, B + j, ldb, Ci, ldc, accumulate); break;
            default: mm_rows((int)R, 1, last, kw, Ai, ars, acs, B + j, ldb, Ci, ldc, accumulate); break;
            }
        }
    }
}

void attn_bf16_rows(uint32_t *dst, size_t dld, const float *src, size_t sld, size_t rows, size_t cols) {
    for (size_t r = 0; r < rows; r++) {
        uint16_t *d = (uint16_t *)(dst + r * dld);
        gemm_bf16_convert_avx512.row(d, src + r * sld, cols);
        if (cols % 2) d[cols] = 0; // the odd last value pairs with zero
    }
}

void attn_bf16_pairs(uint32_t *dst, size_t dld, const float *src, size_t sld, size_t rows, size_t cols) {
    for (size_t r = 0; r < rows; r += 2)
        gemm_bf16_convert_avx512.pair_rows((unsigned char *)(dst + r / 2 * dld), dld * sizeof *dst, src + r * sld,
                                           r + 1 < rows ? src + (r + 1) * sld : NULL, cols, dld);
}

void attn_bf16_rows_transposed(uint32_t *dst, size_t dld, const float *src, size_t sld, size_t rows, size_t cols,
                               uint32_t *tmp) {
    const size_t words = (cols + 1) / 2;
    attn_bf16_rows(tmp, words, src, sld, rows, cols);
    gemm_transpose(tmp, words, dst, dld, rows, words);
    for (size_t w = 0; w < words; w++) memset(dst + w * dld + rows, 0, (dld - rows) * sizeof *dst);
}
