// int8_tile_avx512: the AVX-512 tile of the weight-only int8 product (kernels/int8.c): up to 4 activation
// rows by 4 output channels, 16 fp32 accumulators in zmm registers; each step widens 16 int8 weights of a
// channel to fp32 once (vpmovsxbd + vcvtdq2ps) and uses them for every row. Compiled with AVX-512 flags;
// int8.c calls it only when the GEMM path is an AVX-512 one.
#include <immintrin.h>
#include "kernels/int8.h"
#include "kernels/int8_tile.h"

static inline __attribute__((always_inline)) void tile(size_t R, size_t in, const float *x, const int8_t *const w[4],
                                                       float sums[4][4]) {
    __m512 acc[4][4];
    for (size_t r = 0; r < R; r++)
        for (size_t c = 0; c < 4; c++) acc[r][c] = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= in; i += 16) {
        __m512 wf[4];
        for (size_t c = 0; c < 4; c++)
            wf[c] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(w[c] + i))));
        for (size_t r = 0; r < R; r++) {
            __m512 xv = _mm512_loadu_ps(x + r * in + i);
            for (size_t c = 0; c < 4; c++) acc[r][c] = _mm512_fmadd_ps(xv, wf[c], acc[r][c]);
        }
    }
    for (size_t r = 0; r < R; r++)
        for (size_t c = 0; c < 4; c++) {
            float s = _mm512_reduce_add_ps(acc[r][c]);
            for (size_t k = i; k < in; k++) s += x[r * in + k] * (float)w[c][k];
            sums[r][c] = s;
        }
}

void int8_tile_avx512(size_t R, size_t in, const float *x, const int8_t *const w[4], float sums[4][4]) {
    switch (R) {   // constant row counts: the loops unroll and the accumulators stay in registers
    case 1: tile(1, in, x, w, sums); break;
    case 2: tile(2, in, x, w, sums); break;
    case 3: tile(3, in, x, w, sums); break;
    default: tile(4, in, x, w, sums); break;
    }
}
