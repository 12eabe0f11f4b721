// gemm_pack_bf16: the AVX-512 BF16 conversions behind gemm.c's bf16 panels. vcvtne2ps2bf16 rounds 32 fp32
// values to bf16 in one instruction, where the portable code needs a dozen integer operations per vector;
// packing converts every operand value once per product, so in bf16 this is a large part of the packing cost.
// The rounding is gemm.c's bf16_bits (nearest, ties to even, NaN stays NaN) except that fp32 subnormals
// become zero, as vdpbf16ps treats them anyway.
#include "kernels/gemm_ukernel.h"

#include <immintrin.h>
#include <stdint.h>

// Mask of the first n (< 16 when partial) of 16 lanes.
static inline __mmask16 first_lanes(size_t n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1); }

static void row(uint16_t *dst, const float *s, size_t n) {
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + i + 16), _mm512_loadu_ps(s + i));
        _mm512_storeu_si512(dst + i, (__m512i)v);
    }
    for (; i < n; i += 16) {
        const __mmask16 m = first_lanes(n - i);
        __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, s + i));
        _mm256_mask_storeu_epi16(dst + i, m, (__m256i)v);
    }
}

static void pair_rows(unsigned char *dst, size_t panel_bytes, const float *s0, const float *s1, size_t n,
                      size_t W) {
    // Word 2i of the result is s0[i], word 2i + 1 is s1[i]: cvtne2ps2bf16 puts s0 in words 0..15 and s1 in
    // 16..31.
    const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23,
                                                7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    for (size_t q = 0; q * W < n; q++) {
        const size_t i0 = q * W, w = n - i0 < W ? n - i0 : W;
        uint32_t *d = (uint32_t *)(dst + q * panel_bytes);
        for (size_t j = 0; j < W; j += 16) {
            const __mmask16 load = j < w ? first_lanes(w - j) : 0, store = first_lanes(W - j);
            const __m512 lo = _mm512_maskz_loadu_ps(load, s0 + i0 + j);
            const __m512 hi = s1 ? _mm512_maskz_loadu_ps(load, s1 + i0 + j) : _mm512_setzero_ps();
            const __m512i pairs = _mm512_permutexvar_epi16(interleave, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
            _mm512_mask_storeu_epi32(d + j, store, pairs);
        }
    }
}

const gemm_bf16_convert gemm_bf16_convert_avx512 = {.row = row, .pair_rows = pair_rows};
