#include <stdlib.h>
#include "kernels/gemm.h"
#include "kernels/int8.h"
#include "model/linear.h"

// The registered int8 copies (few: one per weight matrix of the models being decoded).
typedef struct { const float *W; const int8_t *q; const float *scale; } int8_weight;
static int8_weight *int8_w;
static size_t n_int8, cap_int8;

sx_status linear_use_int8(const float *W, const int8_t *q, const float *scale) {
    if (n_int8 == cap_int8) {
        size_t cap = cap_int8 ? 2 * cap_int8 : 64;
        int8_weight *v = sx_realloc(int8_w, cap * sizeof *v, "linear int8 weights");
        if (!v) return sx_fail(SX_ERR_NOMEM, "out of memory for the int8 weight table");
        int8_w = v;
        cap_int8 = cap;
    }
    int8_w[n_int8++] = (int8_weight){W, q, scale};
    return SX_OK;
}

void linear_forget_int8(const float *W) {
    for (size_t i = 0; i < n_int8; i++)
        if (int8_w[i].W == W) { int8_w[i] = int8_w[--n_int8]; break; }
    if (n_int8 == 0) { free(int8_w); int8_w = NULL; cap_int8 = 0; }
}

static _Thread_local const linear_packed_set *tl_packed;

const linear_packed_set *linear_bind_packed(const linear_packed_set *s) {
    const linear_packed_set *before = tl_packed;
    tl_packed = s;
    return before;
}

void linear_forward(size_t N, size_t in, size_t out, const float *x, const float *W, float *y, bool accumulate) {
    for (size_t i = 0; i < n_int8; i++)
        if (int8_w[i].W == W) { int8_linear(N, in, out, x, int8_w[i].q, int8_w[i].scale, y, accumulate); return; }
    for (size_t i = 0; tl_packed && i < tl_packed->n; i++) {
        const gemm_packed_b *p = &tl_packed->v[i];
        if (p->B == W && p->K == in && p->N == out && p->trans_b && p->ldb == in) {
            gemm_packed(false, N, x, in, p, y, out, accumulate);
            return;
        }
    }
    gemm(false, true, N, out, in, x, in, W, in, y, out, accumulate);
}

void linear_backward(size_t N, size_t in, size_t out, const float *x, const float *W, const float *dy, float *dW,
                     float *dx, bool accumulate_dx) {
    gemm(true, false, out, in, N, dy, out, x, in, dW, in, true);
    if (dx) gemm(false, false, N, in, out, dy, out, W, in, dx, in, accumulate_dx);
}
