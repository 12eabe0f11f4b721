// rmsnorm: RMS normalisation over rows, forward and backward; the *_ref functions are the specification
// (double accumulation), the fast ones vectorise each row and thread over rows when the work is large.
// Not responsible for choosing eps or where norms sit in the model.
#include "core/status.h"
#include "core/threads.h"
#include "kernels/rmsnorm.h"

#include <math.h>

void rmsnorm_forward_ref(size_t N, size_t C, const float *x, const float *g, float eps, float *y, float *rstd) {
    for (size_t i = 0; i < N; i++) {
        const float *xi = x + i * C;
        double ss = 0;
        for (size_t c = 0; c < C; c++) ss += (double)xi[c] * xi[c];
        double r = 1.0 / sqrt(ss / (double)C + (double)eps);
        rstd[i] = (float)r;
        for (size_t c = 0; c < C; c++) y[i * C + c] = (float)((double)xi[c] * r * (g ? (double)g[c] : 1.0));
    }
}

void rmsnorm_backward_ref(size_t N, size_t C, const float *x, const float *g, const float *rstd,
                          const float *dy, float *dx, float *dg, bool accumulate) {
    for (size_t i = 0; i < N; i++) {
        const float *xi = x + i * C, *dyi = dy + i * C;
        double r = rstd[i], dot = 0;
        for (size_t c = 0; c < C; c++) dot += (double)dyi[c] * (g ? (double)g[c] : 1.0) * (double)xi[c] * r;
        double mean = dot / (double)C;
        for (size_t c = 0; c < C; c++) {
            double yhat = (double)xi[c] * r;
            double gt = (double)dyi[c] * (g ? (double)g[c] : 1.0);
            double d = r * (gt - yhat * mean);
            dx[i * C + c] = (float)(accumulate ? dx[i * C + c] + d : d);
            if (dg) dg[c] = (float)((double)dg[c] + (double)dyi[c] * yhat);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Fast path: rows in chunks of NORM_CHUNK; threads take whole chunks. The backward's dg is summed per chunk
// and the chunk partials are added in chunk order, so results do not depend on the thread count.

enum { NORM_CHUNK = 32 };
#define NORM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define NORM_THREADED(N, C) ((N) * (C) >= (1u << 15))

NORM_CLONES static void norm_forward_rows(size_t n, size_t C, const float *x, const float *g, float eps,
                                          float *y, float *rstd) {
    for (size_t i = 0; i < n; i++) {
        const float *xi = x + i * C;
        float *yi = y + i * C;
        float ss = 0;
#pragma omp simd reduction(+ : ss)
        for (size_t c = 0; c < C; c++) ss += xi[c] * xi[c];
        float r = 1.0f / sqrtf(ss / (float)C + eps);
        rstd[i] = r;
        if (g) {
#pragma omp simd
            for (size_t c = 0; c < C; c++) yi[c] = xi[c] * r * g[c];
        } else {
#pragma omp simd
            for (size_t c = 0; c < C; c++) yi[c] = xi[c] * r;
        }
    }
}

void rmsnorm_forward(size_t N, size_t C, const float *x, const float *g, float eps, float *y, float *rstd) {
    if (!threads_split(NORM_THREADED(N, C))) {   // rows are independent: all of them in one call
        norm_forward_rows(N, C, x, g, eps, y, rstd);
        return;
    }
    size_t nchunks = (N + NORM_CHUNK - 1) / NORM_CHUNK;
#pragma omp parallel for schedule(static)
    for (size_t ch = 0; ch < nchunks; ch++) {
        size_t i0 = ch * NORM_CHUNK, n = N - i0 < NORM_CHUNK ? N - i0 : NORM_CHUNK;
        norm_forward_rows(n, C, x + i0 * C, g, eps, y + i0 * C, rstd + i0);
    }
}

// Rows [0, n) of one chunk; dg_part (C) is overwritten with this chunk's Σ dy ⊙ ŷ when non-NULL.
NORM_CLONES static void norm_backward_rows(size_t n, size_t C, const float *x, const float *g, const float *rstd,
                                           const float *dy, float *dx, float *dg_part, bool accumulate) {
    if (dg_part)
        for (size_t c = 0; c < C; c++) dg_part[c] = 0;
    for (size_t i = 0; i < n; i++) {
        const float *xi = x + i * C, *dyi = dy + i * C;
        float *dxi = dx + i * C;
        float r = rstd[i], dot = 0;
        if (g) {
#pragma omp simd reduction(+ : dot)
            for (size_t c = 0; c < C; c++) dot += dyi[c] * g[c] * xi[c];
        } else {
#pragma omp simd reduction(+ : dot)
            for (size_t c = 0; c < C; c++) dot += dyi[c] * xi[c];
        }
        float k = dot * r * r / (float)C;  // mean(g̃ ⊙ ŷ)·r, so that dx = r·g̃ − x·r·k
        if (accumulate) {
#pragma omp simd
            for (size_t c = 0; c < C; c++) dxi[c] += r * ((g ? dyi[c] * g[c] : dyi[c]) - xi[c] * k);
        } else {
#pragma omp simd
            for (size_t c = 0; c < C; c++) dxi[c] = r * ((g ? dyi[c] * g[c] : dyi[c]) - xi[c] * k);
        }
        if (dg_part) {
#pragma omp simd
            for (size_t c = 0; c < C; c++) dg_part[c] += dyi[c] * xi[c] * r;
        }
    }
}

// One partial dg (C) per chunk.
size_t rmsnorm_backward_workspace_floats(size_t N, size_t C) {
    size_t nchunks = (N + NORM_CHUNK - 1) / NORM_CHUNK;
    return (nchunks ? nchunks : 1) * C;
}

void rmsnorm_backward(size_t N, size_t C, const float *x, const float *g, const float *rstd, const float *dy,
                      float *dx, float *dg, bool accumulate, float *work) {
    SX_CHECK(!dg || work, "rmsnorm_backward: pass rmsnorm_backward_workspace_floats(N, C) floats of work with dg");
    size_t nchunks = (N + NORM_CHUNK - 1) / NORM_CHUNK;
    float *part = dg ? work : NULL;
#pragma omp parallel for schedule(static) if (NORM_THREADED(N, C))
    for (size_t ch = 0; ch < nchunks; ch++) {
        size_t i0 = ch * NORM_CHUNK, n = N - i0 < NORM_CHUNK ? N - i0 : NORM_CHUNK;
        norm_backward_rows(n, C, x + i0 * C, g, rstd + i0, dy + i0 * C, dx + i0 * C, part ? part + ch * C : NULL,
                           accumulate);
    }
    if (part)
        for (size_t ch = 0; ch < nchunks; ch++)
            for (size_t c = 0; c < C; c++) dg[c] += part[ch * C + c];
}
