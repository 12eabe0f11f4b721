// int8_tile: the register tiles of the weight-only int8 product (kernels/int8.c's blocking calls them).
// A tile: sums[r][c] = Σ_i x[r·in + i] · w[c][i] for r < R (1..4 rows of x, row stride in) and c < 4
// weight rows (int8, length in), accumulated in fp32; overwrites sums. Callers pad to 4 channels by
// repeating a row.
#ifndef SEXTANT_KERNELS_INT8_TILE_H
#define SEXTANT_KERNELS_INT8_TILE_H
#include <stddef.h>
#include <stdint.h>

void int8_tile_generic(size_t R, size_t in, const float *x, const int8_t *const w[4], float sums[4][4]);
void int8_tile_avx512(size_t R, size_t in, const float *x, const int8_t *const w[4], float sums[4][4]);
#endif
