// int8: per-channel weight quantization and the weight-only int8 product. See int8.h.
#include <math.h>
#include <string.h>
#include "core/threads.h"
#include "kernels/gemm.h"
#include "kernels/int8.h"
#include "kernels/int8_tile.h"

void int8_quantize_rows(size_t rows, size_t cols, const float *W, int8_t *q, float *scale) {
    for (size_t r = 0; r < rows; r++) {
        const float *w = W + r * cols;
        float amax = 0;
        for (size_t c = 0; c < cols; c++) amax = fmaxf(amax, fabsf(w[c]));
        scale[r] = amax / 127.0f;
        for (size_t c = 0; c < cols; c++) {
            float v = amax > 0 ? roundf(w[c] / scale[r]) : 0;
            q[r * cols + c] = (int8_t)fmaxf(-127.0f, fminf(127.0f, v));
        }
    }
}

void int8_dequantize_rows(size_t rows, size_t cols, const int8_t *q, const float *scale, float *W) {
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) W[r * cols + c] = scale[r] * (float)q[r * cols + c];
}

// Products of at least this many multiply-adds are split over threads.
#define INT8_PARALLEL_MIN_MACS (1u << 18)

void int8_tile_generic(size_t R, size_t in, const float *x, const int8_t *const w[4], float sums[4][4]) {
    for (size_t r = 0; r < R; r++)
        for (size_t c = 0; c < 4; c++) {
            float s = 0;
            for (size_t i = 0; i < in; i++) s += x[r * in + i] * (float)w[c][i];
            sums[r][c] = s;
        }
}

// The tile for the GEMM path in force (gemm_force_path covers both in tests).
static void (*pick_tile(void))(size_t, size_t, const float *, const int8_t *const[4], float[4][4]) {
    return strncmp(gemm_path_name(), "avx512", 6) == 0 ? int8_tile_avx512 : int8_tile_generic;
}

typedef void (*int8_tile_fn)(size_t, size_t, const float *, const int8_t *const[4], float[4][4]);

// Row block b (4 rows) against channel block cb (4 channels) of int8_linear.
static inline void int8_block(int8_tile_fn tile, size_t b, size_t cb, size_t N, size_t in, size_t out,
                              const float *x, const int8_t *q, const float *scale, float *y, bool accumulate) {
    size_t r0 = 4 * b, R = N - r0 < 4 ? N - r0 : 4, c0 = 4 * cb, C = out - c0 < 4 ? out - c0 : 4;
    const int8_t *w[4];
    for (size_t c = 0; c < 4; c++) w[c] = q + (c0 + (c < C ? c : 0)) * in;   // padding repeats a row
    float sums[4][4];
    tile(R, in, x + r0 * in, w, sums);
    for (size_t r = 0; r < R; r++)
        for (size_t c = 0; c < C; c++) {
            float v = scale[c0 + c] * sums[r][c], *dst = y + (r0 + r) * out + c0 + c;
            *dst = accumulate ? *dst + v : v;
        }
}

void int8_linear(size_t N, size_t in, size_t out, const float *x, const int8_t *q, const float *scale, float *y,
                 bool accumulate) {
    int8_tile_fn tile = pick_tile();
    const size_t row_blocks = (N + 3) / 4, ch_blocks = (out + 3) / 4;
    // Blocks of 4 activation rows outside, of 4 channels inside: a row block stays in L1 while the weights
    // stream by.
    if (!threads_split(N * in * out >= INT8_PARALLEL_MIN_MACS)) {
        for (size_t b = 0; b < row_blocks; b++)
            for (size_t cb = 0; cb < ch_blocks; cb++) int8_block(tile, b, cb, N, in, out, x, q, scale, y, accumulate);
        return;
    }
#pragma omp parallel for collapse(2) schedule(static)
    for (size_t b = 0; b < row_blocks; b++)
        for (size_t cb = 0; cb < ch_blocks; cb++) int8_block(tile, b, cb, N, in, out, x, q, scale, y, accumulate);
}

void int8_linear_ref(size_t N, size_t in, size_t out, const float *x, const int8_t *q, const float *scale, float *y,
                     bool accumulate) {
    for (size_t n = 0; n < N; n++)
        for (size_t o = 0; o < out; o++) {
            double s = 0;
            for (size_t i = 0; i < in; i++) s += (double)x[n * in + i] * ((double)scale[o] * q[o * in + i]);
            y[n * out + o] = (float)(accumulate ? y[n * out + o] + s : s);
        }
}
