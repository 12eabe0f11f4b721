// embedding: token lookup (gather) and its backward (scatter-add), threaded when the work is large.
// Not responsible for the output head (a GEMM in the model) or for validating token ids against V (the
// data loader does; ids here must be >= 0).
#include "core/status.h"
#include "core/threads.h"
#include "kernels/embedding.h"

#include <string.h>

static inline void embed_row(size_t i, size_t C, const int32_t *tok, const float *E, float *x) {
    SX_CHECK(tok[i] >= 0, "token ids are non-negative");
    memcpy(x + i * C, E + (size_t)tok[i] * C, C * sizeof(float));
}

void embedding_forward(size_t N, size_t C, const int32_t *tok, const float *E, float *x) {
    if (!threads_split(N * C >= (1u << 16))) {
        for (size_t i = 0; i < N; i++) embed_row(i, C, tok, E, x);
        return;
    }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++) embed_row(i, C, tok, E, x);
}

// Each thread owns a slice of the channels and walks every row, so no two threads write the same element
// and the summation order per element is fixed (row order): the result does not depend on the thread count.
void embedding_backward(size_t N, size_t C, const int32_t *tok, const float *dx, float *dE) {
    const size_t slice = 64;
    size_t nslices = (C + slice - 1) / slice;
#pragma omp parallel for schedule(static) if (N * C >= (1u << 16))
    for (size_t s = 0; s < nslices; s++) {
        size_t c0 = s * slice, c1 = c0 + slice < C ? c0 + slice : C;
        for (size_t i = 0; i < N; i++) {
            float *de = dE + (size_t)tok[i] * C;
            const float *d = dx + i * C;
#pragma omp simd
            for (size_t c = c0; c < c1; c++) de[c] += d[c];
        }
    }
}
