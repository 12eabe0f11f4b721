#include "kernels/gemm.h"
#include "model/linear.h"

void linear_forward(size_t N, size_t in, size_t out, const float *x, const float *W, float *y, bool accumulate) {
    gemm(false, true, N, out, in, x, in, W, in, y, out, accumulate);
}

void linear_backward(size_t N, size_t in, size_t out, const float *x, const float *W, const float *dy, float *dW,
                     float *dx, bool accumulate_dx) {
    gemm(true, false, out, in, N, dy, out, x, in, dW, in, true);
    if (dx) gemm(false, false, N, in, out, dy, out, W, in, dx, in, accumulate_dx);
}
