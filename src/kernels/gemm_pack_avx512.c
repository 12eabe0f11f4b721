// gemm_pack_avx512: the AVX-512 packing helper behind gemm.c's transposed B panels (x·Wᵀ packs W across
// its rows) and gemm_transpose. A block of up to 16 x 16 32-bit values goes through registers in four shuffle
// stages instead of 256 scattered stores; masked loads and stores keep a smaller block (the edges, and
// attention's 64 x 8 tiles at head dimension 8) inside its rectangles. Values are moved bit for bit (fp32,
// or pairs of bf16).
#include "kernels/gemm_ukernel.h"

#include <immintrin.h>

static void transpose16(const void *src, size_t sld, void *dst, size_t dld, size_t rows, size_t cols) {
    const float *s = src;
    float *d = dst;
    const __mmask16 in = (__mmask16)((1u << cols) - 1), out = (__mmask16)((1u << rows) - 1);
    __m512 r[16], t[16];
    for (size_t i = 0; i < 16; i++) r[i] = i < rows ? _mm512_maskz_loadu_ps(in, s + i * sld) : _mm512_setzero_ps();
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
    for (size_t c = 0; c < 4; c++) {
        r[c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0x88);
        r[8 + c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0xdd);
        r[4 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0xdd);
    }
    for (size_t c = 0; c < cols; c++) _mm512_mask_storeu_ps(d + c * dld, out, r[c]);
}

const gemm_transpose_fn gemm_transpose16_avx512 = transpose16;
