// attention_bf16: bf16 tile products and operand layouts for attention.c (internal to src/kernels/attention*.c;
// callable only where the avx512bf16 GEMM path is supported).
// Words are uint32 pairs of bf16 bits along a product's k (k even in the low half, k odd in the high half;
// an odd last k pairs with zero). All conversions round to nearest even, as the GEMM's packing does.
#ifndef SEXTANT_KERNELS_ATTENTION_BF16_H
#define SEXTANT_KERNELS_ATTENTION_BF16_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// C (m, n) = A·B, or += when accumulate, over kw words of k. Word w of A's row i is A[i·ars + w·acs]; row w
// of B starts at B + w·ldb and must be readable (finite values) up to n rounded up to 16.
void attn_bf16_mm(size_t m, size_t n, size_t kw, const uint32_t *A, size_t ars, size_t acs, const uint32_t *B,
                  size_t ldb, float *C, size_t ldc, bool accumulate);

// Pairs along the columns: dst[r·dld + w] = (src(r, 2w), src(r, 2w+1)), (cols+1)/2 words per row.
void attn_bf16_rows(uint32_t *dst, size_t dld, const float *src, size_t sld, size_t rows, size_t cols);
// Pairs along the rows: dst[w·dld + c] = (src(2w, c), src(2w+1, c)) for (rows+1)/2 rows of dld words, each
// zero-padded from cols to dld.
void attn_bf16_pairs(uint32_t *dst, size_t dld, const float *src, size_t sld, size_t rows, size_t cols);
// attn_bf16_rows transposed: dst[w·dld + r] = (src(r, 2w), src(r, 2w+1)), each row zero-padded from rows to
// dld; tmp holds rows·(cols+1)/2 words.
void attn_bf16_rows_transposed(uint32_t *dst, size_t dld, const float *src, size_t sld, size_t rows, size_t cols,
                               uint32_t *tmp);
#endif
