// muon: see muon.h.
#include "core/status.h"
#include "optim/muon.h"

#include <math.h>

#include "kernels/gemm.h"
#include "optim/optimizer.h"

enum { PAR_MIN = 32768 }; // elementwise loops shorter than this stay on one thread

size_t newton_schulz5_scratch(size_t rows, size_t cols) {
    size_t r = rows < cols ? rows : cols, c = rows < cols ? cols : rows;
    return 2 * r * c + 2 * r * r; // X, X_next (r, c); A, A·A (r, r)
}

size_t muon_scratch_floats(size_t rows, size_t cols) {
    return 2 * rows * cols + newton_schulz5_scratch(rows, cols); // U, NS5(U), NS5 workspace
}

void newton_schulz5(const float *u, size_t rows, size_t cols, float *out, float *scratch) {
    const bool tr = rows > cols;
    const size_t r = tr ? cols : rows, c = tr ? rows : cols, n = rows * cols;
    float *x = scratch;          // (r, c)
    float *xn = x + r * c;       // (r, c)
    float *a = xn + r * c;       // (r, r)
    float *aa = a + r * r;       // (r, r)
    const float inv = 1.0f / ((float)sqrt(optim_sumsq(u, n)) + MUON_NS_EPS);
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            float val = u[i * cols + j] * inv;
            if (tr) x[j * c + i] = val;
            else x[i * c + j] = val;
        }
    for (int it = 0; it < MUON_NS_STEPS; it++) {
        gemm(false, true, r, r, c, x, c, x, c, a, r, false);  // A = X·Xᵀ
        gemm(false, false, r, r, r, a, r, a, r, aa, r, false); // A·A
        for (size_t i = 0; i < r * r; i++) aa[i] = MUON_NS_B * a[i] + MUON_NS_C * aa[i];
#pragma omp parallel for schedule(static) if (r * c >= PAR_MIN)
        for (size_t i = 0; i < r * c; i++) xn[i] = MUON_NS_A * x[i];
        gemm(false, false, r, c, r, aa, r, x, c, xn, c, true); // X' = a·X + (b·A + c·A·A)·X
        float *swap = x;
        x = xn;
        xn = swap;
    }
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) out[i * cols + j] = tr ? x[j * c + i] : x[i * c + j];
}

const float *muon_direction(const float *g, float *buf, size_t rows, size_t cols, double momentum, float *scratch) {
    SX_CHECK(rows > 0 && cols > 0, "muon: only matrices take a Newton-Schulz step");
    const size_t n = rows * cols;
    float *u = scratch, *x = scratch + n, *ns = scratch + 2 * n;
    const float mu = (float)momentum, one_mu = (float)(1.0 - momentum);
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        float b = mu * buf[i] + one_mu * g[i];
        buf[i] = b;
        u[i] = one_mu * g[i] + mu * b;
    }
    newton_schulz5(u, rows, cols, x, ns);
    return x;
}

void muon_update(float *p, const float *g, float *buf, size_t rows, size_t cols, const muon_step_args *a,
                 float *scratch) {
    const size_t n = rows * cols;
    const float *x = muon_direction(g, buf, rows, cols, a->momentum, scratch);
    const double ratio = (double)rows / (double)cols;
    const float step = (float)(a->lr * sqrt(ratio > 1.0 ? ratio : 1.0));
    const float decay = (float)(1.0 - a->lr * a->weight_decay);
    if (a->cautious && a->weight_decay > 0) {
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
        for (size_t i = 0; i < n; i++) p[i] = (x[i] * p[i] >= 0 ? p[i] * decay : p[i]) - step * x[i];
        return;
    }
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) p[i] = p[i] * decay - step * x[i];
}
