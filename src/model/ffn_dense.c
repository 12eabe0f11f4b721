// ffn_dense: the dense MLP. relu2 / gelu: out += act(h·w_upᵀ)·w_downᵀ;
// swiglu: out += (silu(h·w_gateᵀ) ⊙ h·w_upᵀ)·w_downᵀ.
#include <math.h>
#include <stdio.h>
#include "kernels/activation.h"
#include "model/block.h"
#include "model/linear.h"

static bool gated(const model_config *c) { return c->mlp == MLP_SWIGLU; }

// Saved per layer: the pre-activation(s) and the activation fed to w_down, each (BT, F).
static size_t saved_floats(const model_config *c, size_t BT) { return BT * c->ffn_hidden * (gated(c) ? 3 : 2); }
static size_t scratch_floats(const model_config *c, size_t BT) { return BT * c->ffn_hidden * (gated(c) ? 3 : 2); }

static sx_status declare(const model_config *c, size_t layer, param_table *t) {
    char name[48];
    float std = 1.0f / sqrtf((float)c->width);
    sx_status s = SX_OK;
    if (gated(c)) {
        snprintf(name, sizeof name, "l%zu.w_gate", layer);
        s = param_table_add(t, name, c->ffn_hidden, c->width, INIT_NORMAL, std, PGROUP_MATRIX);
    }
    snprintf(name, sizeof name, "l%zu.w_up", layer);
    if (!s) s = param_table_add(t, name, c->ffn_hidden, c->width, INIT_NORMAL, std, PGROUP_MATRIX);
    snprintf(name, sizeof name, "l%zu.w_down", layer);
    if (!s) s = param_table_add(t, name, c->width, c->ffn_hidden, INIT_ZERO, 0, PGROUP_MATRIX);
    return s;
}

static void forward(const block_shape *s, float *const *w, const float *h, float *out, float *saved, float *scratch) {
    const model_config *c = s->cfg;
    size_t BT = s->B * s->T, F = c->ffn_hidden, C = c->width, n = BT * F;
    float *pre = saved, *act = saved + n;
    if (gated(c)) {
        float *up = act, *gate = pre;
        act = saved + 2 * n;
        linear_forward(BT, C, F, h, w[0], gate, false);
        linear_forward(BT, C, F, h, w[1], up, false);
        swiglu_forward(n, gate, up, act);
    } else {
        linear_forward(BT, C, F, h, w[0], pre, false);
        if (c->mlp == MLP_RELU2) relu2_forward(n, pre, act);
        else gelu_forward(n, pre, act);
    }
    linear_forward(BT, F, C, act, w[gated(c) ? 2 : 1], out, true);
}

static void backward(const block_shape *s, float *const *w, float *const *dw, const float *h, const float *dout,
                     float *dh, const float *saved, float *scratch) {
    const model_config *c = s->cfg;
    size_t BT = s->B * s->T, F = c->ffn_hidden, C = c->width, n = BT * F;
    const float *pre = saved;
    float *d_act = scratch, *d_pre = scratch + n;
    if (gated(c)) {
        const float *gate = saved, *up = saved + n, *act = saved + 2 * n;
        float *d_up = scratch + 2 * n;
        linear_backward(BT, F, C, act, w[2], dout, dw[2], d_act, false);
        swiglu_backward(n, gate, up, d_act, d_pre, d_up);
        linear_backward(BT, C, F, h, w[0], d_pre, dw[0], dh, false);
        linear_backward(BT, C, F, h, w[1], d_up, dw[1], dh, true);
        return;
    }
    linear_backward(BT, F, C, saved + n, w[1], dout, dw[1], d_act, false);
    if (c->mlp == MLP_RELU2) relu2_backward(n, pre, d_act, d_pre);
    else gelu_backward(n, pre, d_act, d_pre);
    linear_backward(BT, C, F, h, w[0], d_pre, dw[0], dh, false);
}

const block_module ffn_dense_module = {
    .name = "dense", .declare = declare, .saved_floats = saved_floats, .scratch_floats = scratch_floats,
    .forward = forward, .backward = backward,
};
