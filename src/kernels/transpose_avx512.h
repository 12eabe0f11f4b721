// transpose_avx512: a 16 x 16 block of 32-bit values transposed in registers (four shuffle stages), for the
// AVX-512 packing (gemm_pack_avx512.c) and the small-head attention (attention_small.c). Values are moved bit
// for bit. Include only from code compiled or attributed for avx512f.
#ifndef SEXTANT_KERNELS_TRANSPOSE_AVX512_H
#define SEXTANT_KERNELS_TRANSPOSE_AVX512_H
#include <immintrin.h>

// On entry r[i] is row i; on exit r[c] is column c.
__attribute__((target("avx512f"), always_inline)) static inline void transpose16x16_avx512(__m512 r[16]) {
    __m512 t[16];
    // Rows 2i and 2i+1 interleaved a value at a time, within each 128-bit lane.
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    // r[g + c], lane L: column 4L + c of rows g..g+3.
    for (int g = 0; g < 16; g += 4) {
        r[g] = _mm512_shuffle_ps(t[g], t[g + 2], 0x44);
        r[g + 1] = _mm512_shuffle_ps(t[g], t[g + 2], 0xee);
        r[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0x44);
        r[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0xee);
    }
    // t[c]: columns c, 8+c of rows 0..7 (lanes: c rows 0-3, 8+c rows 0-3, c rows 4-7, 8+c rows 4-7);
    // t[4+c] the same for columns 4+c, 12+c; t[8+c], t[12+c] the same for rows 8..15.
    for (int c = 0; c < 4; c++) {
        t[c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
        t[4 + c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
        t[8 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        t[12 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
    }
    for (int c = 0; c < 4; c++) {
        r[c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0x88);
        r[8 + c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0xdd);
        r[4 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0xdd);
    }
}
#endif
