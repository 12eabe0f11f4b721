#include "kernels/activation.h"
#include "model/linear.h"
#include "model/mlp.h"

size_t mlp_tensor_count(mlp_kind k) { return k == MLP_SWIGLU ? 3 : 2; }
size_t mlp_saved_floats(mlp_kind k, size_t N, size_t F) { return N * F * mlp_tensor_count(k); }

void mlp_forward(mlp_kind k, size_t N, size_t C, size_t F, const float *x, float *const *w, float *saved, float *y,
                 bool accumulate) {
    if (N == 0) return;
    size_t n = N * F;
    float *pre = saved, *act = saved + n;
    if (k == MLP_SWIGLU) {
        float *up = saved + n;
        act = saved + 2 * n;
        linear_forward(N, C, F, x, w[0], pre, false);
        linear_forward(N, C, F, x, w[1], up, false);
        swiglu_forward(n, pre, up, act);
    } else {
        linear_forward(N, C, F, x, w[0], pre, false);
        if (k == MLP_RELU2) relu2_forward(n, pre, act);
        else gelu_forward(n, pre, act);
    }
    linear_forward(N, F, C, act, w[mlp_tensor_count(k) - 1], y, accumulate);
}

void mlp_backward(mlp_kind k, size_t N, size_t C, size_t F, const float *x, float *const *w, float *const *dw,
                  const float *saved, const float *dy, float *dx, bool accumulate_dx, float *scratch) {
    if (N == 0) return;
    size_t n = N * F, last = mlp_tensor_count(k) - 1;
    float *d_act = scratch, *d_pre = scratch + n;
    linear_backward(N, F, C, saved + last * n, w[last], dy, dw[last], d_act, false);
    if (k == MLP_SWIGLU) {
        float *d_up = scratch + 2 * n;
        swiglu_backward(n, saved, saved + n, d_act, d_pre, d_up);
        linear_backward(N, C, F, x, w[1], d_up, dw[1], dx, accumulate_dx);
        linear_backward(N, C, F, x, w[0], d_pre, dw[0], dx, true);
        return;
    }
    if (k == MLP_RELU2) relu2_backward(n, saved, d_act, d_pre);
    else gelu_backward(n, saved, d_act, d_pre);
    linear_backward(N, C, F, x, w[0], d_pre, dw[0], dx, accumulate_dx);
}
