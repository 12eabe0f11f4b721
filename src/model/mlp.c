#include "kernels/activation.h"
#include "kernels/fp8.h"
#include "model/linear.h"
#include "model/mlp.h"

size_t mlp_tensor_count(mlp_kind k) { return k == MLP_SWIGLU ? 3 : 2; }
size_t mlp_saved_floats(mlp_kind k, size_t N, size_t F) { return N * F * mlp_tensor_count(k); }

// x (N,C) -> saved: pre-activation(s) and the activation (N,F) in its last slot.
static void hidden_forward(mlp_kind k, size_t N, size_t C, size_t F, const float *x, float *const *w, float *saved) {
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
}

void mlp_forward(mlp_kind k, size_t N, size_t C, size_t F, const float *x, float *const *w, float *saved, float *y,
                 bool accumulate) {
    if (N == 0) return;
    size_t last = mlp_tensor_count(k) - 1;
    hidden_forward(k, N, C, F, x, w, saved);
    linear_forward(N, F, C, saved + last * N * F, w[last], y, accumulate);
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

size_t mlp_fp8_saved_floats(mlp_kind k, size_t N, size_t C, size_t F) {
    return 2 * MLP_FP8_ROLES + N * C + mlp_saved_floats(k, N, F);
}

size_t mlp_fp8_scratch_floats(mlp_kind k, size_t N, size_t C, size_t F) {
    return mlp_tensor_count(k) * F * C + mlp_saved_floats(k, N, F);
}

// The scale of role r: from the history's largest amax in column r, or from `current` while that is 0.
static float delayed_scale(const float *history, size_t r, float current) {
    float h = 0;
    for (size_t i = 0; i < MLP_FP8_HISTORY; i++) h = history[i * MLP_FP8_ROLES + r] > h ? history[i * MLP_FP8_ROLES + r] : h;
    return fp8_scale(h > 0 ? h : current);
}

// The rounded weights into wq (F·C floats each), at the scales in scale[MLP_FP8_W0 + i].
static void round_weights(mlp_kind k, size_t C, size_t F, float *const *w, const float *scale, float *wq, float **ptrs) {
    for (size_t i = 0; i < mlp_tensor_count(k); i++) {
        ptrs[i] = wq + i * F * C;
        fp8_fake_quant(F * C, w[i], scale[MLP_FP8_W0 + i], ptrs[i]);
    }
}

void mlp_fp8_forward(mlp_kind k, size_t N, size_t C, size_t F, const float *x, float *const *w, const float *history,
                     float *saved, float *y, bool accumulate, float *scratch) {
    size_t nt = mlp_tensor_count(k), n = N * F;
    float *scale = saved, *amax = saved + MLP_FP8_ROLES, *xq = amax + MLP_FP8_ROLES, *ms = xq + N * C;
    float *act = ms + (nt - 1) * n, *wq[3];
    for (size_t r = 0; r < MLP_FP8_ROLES; r++) amax[r] = 0;
    amax[MLP_FP8_X] = fp8_amax(N * C, x);
    for (size_t i = 0; i < nt; i++) amax[MLP_FP8_W0 + i] = fp8_amax(F * C, w[i]);
    for (size_t r = 0; r < MLP_FP8_ROLES; r++) scale[r] = delayed_scale(history, r, amax[r]);
    if (N == 0) return;
    fp8_fake_quant(N * C, x, scale[MLP_FP8_X], xq);
    round_weights(k, C, F, w, scale, scratch, wq);
    hidden_forward(k, N, C, F, xq, wq, ms);
    amax[MLP_FP8_A] = fp8_amax(n, act);
    scale[MLP_FP8_A] = delayed_scale(history, MLP_FP8_A, amax[MLP_FP8_A]);
    fp8_fake_quant(n, act, scale[MLP_FP8_A], act);
    linear_forward(N, F, C, act, wq[nt - 1], y, accumulate);
}

void mlp_fp8_backward(mlp_kind k, size_t N, size_t C, size_t F, float *const *w, float *const *dw, const float *saved,
                      const float *dy, float *dx, bool accumulate_dx, float *scratch) {
    if (N == 0) return;
    const float *scale = saved, *xq = saved + 2 * MLP_FP8_ROLES, *ms = xq + N * C;
    float *wq[3];
    round_weights(k, C, F, w, scale, scratch, wq);
    mlp_backward(k, N, C, F, xq, wq, dw, ms, dy, dx, accumulate_dx, scratch + mlp_tensor_count(k) * F * C);
}
