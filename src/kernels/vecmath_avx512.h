// vecmath_avx512: vecmath.h's exponential on 16 lanes, for the hot loops written with AVX-512 intrinsics.
// The same Cody-Waite reduction and Cephes polynomial as vm_expf, so the same accuracy (~2 ulp on
// [-87.3, 88], 0 below -87.3, so exp(-inf) = 0, saturating at exp(88)); the exponent goes in with vscalefps
// and the flush with its zero-mask, where the portable form needs a conversion, integer add, shift, multiply
// and blends: about half the instructions. Include only from code compiled or attributed for avx512f.
#ifndef SEXTANT_KERNELS_VECMATH_AVX512_H
#define SEXTANT_KERNELS_VECMATH_AVX512_H
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>

// Whether this CPU runs the functions below (callers keep a portable path for the others).
static inline bool vm512_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}

__attribute__((target("avx512f"))) static inline __m512 vm512_expf(__m512 x) {
    const __mmask16 kept = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_GE_OQ);
    __m512 xc = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_maskz_scalef_ps(kept, p, n);
}

// Lanes k of the 16 starting at element i whose index i + k lies in [a, b).
static inline __mmask16 vm512_lanes(size_t i, size_t a, size_t b) {
    unsigned lo = a > i ? (a - i < 16 ? (unsigned)(a - i) : 16) : 0, hi = b > i ? (b - i < 16 ? (unsigned)(b - i) : 16) : 0;
    return hi > lo ? (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1)) : 0;
}

#endif
