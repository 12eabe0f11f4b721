// gemm_ukernel: the register-tiled micro-kernels behind gemm(), and the ISA-specific packing helpers
// (internal to src/kernels/gemm*.c; attention_bf16.c reuses the bf16 conversions).
// Each computes one MR x NR tile of C from a packed micro-panel of B and MR rows of A at the strides it is
// given, and knows nothing of transposes, edges (the framework zero-pads panels and writes partial tiles
// back) or threading.
//
// Layouts, for a depth of kc (the framework pads kc to a multiple of the kernel's k step):
//   fp32 kernels (k step 1):  B packed, b[k*NR + j] = op(B)(k, j); A at strides a[r*a_rs + k*a_ks] =
//     op(A)(r, k), either k-major (a_rs = 1) or row-major (a_ks = 1). The framework passes a packed panel
//     (k-major a_ks = MR, or row-major a_rs = kc: each a plain copy of one storage of A), or A itself when
//     packing would not pay (a_rs or a_ks = A's row stride).
//   bf16 kernels (k step 2, uint16_t bf16 bit patterns, K interleaved in pairs as vdpbf16ps reads them):
//     B packed, b[(k/2*NR + j)*2 + k%2] = op(B)(k, j); A always packed, its (k, k+1) pair of row r the 32-bit
//     word a32[r*a_rs + k/2*a_ks]: k-major (a_rs = 1, a_ks = MR: a[(k/2*MR + r)*2 + k%2] = op(A)(r, k)) or
//     row-major (a_rs = kc/2, a_ks = 1: a[r*kc + k] = op(A)(r, k), consecutive k already the pairs).
// B panels are 64-byte aligned (A is only read by broadcasts). C is a full MR x NR tile with row stride ldc:
// C = a·b (accumulate false) or C += a·b (accumulate true). kc may be 0.
#ifndef SEXTANT_KERNELS_GEMM_UKERNEL_H
#define SEXTANT_KERNELS_GEMM_UKERNEL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef void (*gemm_ukernel_fn)(size_t kc, const void *a, size_t a_rs, size_t a_ks, const void *b, float *c,
                                size_t ldc, bool accumulate);

// The same for only the first m < MR rows of the tile (A's other rows are not read, C's not written): each value
// of C computed exactly as fn computes it. For the few rows of decoding, where a whole tile would multiply
// MR − m rows of zero padding.
typedef void (*gemm_ukernel_rows_fn)(size_t m, size_t kc, const void *a, size_t a_rs, size_t a_ks, const void *b,
                                     float *c, size_t ldc, bool accumulate);

typedef struct {
    size_t mr, nr;   // tile shape
    size_t kstep;    // 1 for fp32 panels, 2 for bf16 pair-interleaved panels
    gemm_ukernel_fn fn;
    gemm_ukernel_rows_fn rows;   // or NULL: partial tiles run fn on the padded panel
} gemm_ukernel;

// Prefetches rows 0..m of an nr-wide tile of C (row stride ldc) into L1: every cache line the rows touch, as C
// need not be aligned (a misaligned row of 32 floats spans three lines, not two). The AVX-512 kernels call
// it before the k loop and again GEMM_C_REFETCH_STEPS steps before its end: over a long k loop the A and B
// streams evict the tile from L1, and an accumulating epilogue would then wait for memory (dW = dyᵀ·x:
// with C 16 bytes off alignment, 12% of the kernel's time before, 2% after).
enum { GEMM_C_REFETCH_STEPS = 32 };
static inline __attribute__((always_inline)) void gemm_prefetch_c(const float *c, size_t ldc, int m, int nr) {
#pragma GCC unroll 12
    for (int r = 0; r < m; r++) {
        for (int j = 0; j < nr; j += 16) __builtin_prefetch(c + (size_t)r * ldc + j, 0, 3);
        __builtin_prefetch(c + (size_t)r * ldc + nr - 1, 0, 3);
    }
}

// Portable C, vectorised by the compiler for the baseline ISA: 6 x 8 (any x86-64).
extern const gemm_ukernel gemm_ukernel_generic;
// AVX2 + FMA, ymm: 6 x 16 (12 accumulators).
extern const gemm_ukernel gemm_ukernel_avx2;
// AVX-512F, zmm: 12 x 32 (24 accumulators), broadcast A, two B vectors per k; and 1..11 x 32.
extern const gemm_ukernel gemm_ukernel_avx512;
// AVX-512 BF16 vdpbf16ps: 12 x 32 over bf16 pair-interleaved panels, fp32 accumulation.
extern const gemm_ukernel gemm_ukernel_bf16;

// Packing helper: transposes a block of at most 16 x 16 32-bit values, dst[k*dld + i] = src[i*sld + k] for
// i < rows, k < cols (strides in values); nothing outside either rectangle is read or written. src and dst
// need no alignment.
typedef void (*gemm_transpose_fn)(const void *src, size_t sld, void *dst, size_t dld, size_t rows, size_t cols);
// AVX-512F (gemm_pack_avx512.c), for the AVX-512 paths.
extern const gemm_transpose_fn gemm_transpose16_avx512;

// Packing helpers for bf16 panels: fp32 to bf16 bits, rounded to nearest even (NaN stays NaN; fp32
// subnormals may become zero).
typedef struct {
    // dst[i] = bf16(s[i]) for i < n.
    void (*row)(uint16_t *dst, const float *s, size_t n);
    // The (s0[i], s1[i]) pairs of i < n (s1 NULL: zeros) as 32-bit values, value i at
    // dst + (i / W)*panel_bytes + (i % W)*4: a row of consecutive panels W wide, the last zero-padded to W.
    void (*pair_rows)(unsigned char *dst, size_t panel_bytes, const float *s0, const float *s1, size_t n,
                      size_t W);
} gemm_bf16_convert;
// AVX-512 BF16 (gemm_pack_bf16.c), for the avx512bf16 path.
extern const gemm_bf16_convert gemm_bf16_convert_avx512;

#endif
