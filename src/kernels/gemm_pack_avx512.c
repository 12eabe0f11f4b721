// gemm_pack_avx512: the AVX-512 packing helper behind gemm.c's transposed B panels (x·Wᵀ packs W across
// its rows) and gemm_transpose. A block of up to 16 x 16 32-bit values goes through registers (transpose_avx512.h)
// instead of 256 scattered stores; masked loads and stores keep a smaller block (the edges, and
// attention's 64 x 8 tiles at head dimension 8) inside its rectangles. Values are moved bit for bit (fp32,
// or pairs of bf16).
#include "kernels/gemm_ukernel.h"

#include <immintrin.h>

#include "kernels/transpose_avx512.h"

static void transpose16(const void *src, size_t sld, void *dst, size_t dld, size_t rows, size_t cols) {
    const float *s = src;
    float *d = dst;
    const __mmask16 in = (__mmask16)((1u << cols) - 1), out = (__mmask16)((1u << rows) - 1);
    __m512 r[16];
    for (size_t i = 0; i < 16; i++) r[i] = i < rows ? _mm512_maskz_loadu_ps(in, s + i * sld) : _mm512_setzero_ps();
    transpose16x16_avx512(r);
    for (size_t c = 0; c < cols; c++) _mm512_mask_storeu_ps(d + c * dld, out, r[c]);
}

const gemm_transpose_fn gemm_transpose16_avx512 = transpose16;
