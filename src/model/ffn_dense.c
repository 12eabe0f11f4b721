// ffn_dense: the dense MLP of a layer — relu2 / gelu: out += act(h·w_upᵀ)·w_downᵀ;
// swiglu: out += (silu(h·w_gateᵀ) ⊙ h·w_upᵀ)·w_downᵀ. The computation is model/mlp.c on all B·T rows; this
// module declares the layer's tensors.
#include <math.h>
#include <stdio.h>
#include "model/block.h"
#include "model/mlp.h"

static bool gated(const model_config *c) { return c->mlp == MLP_SWIGLU; }

static size_t saved_floats(const model_config *c, size_t BT) { return mlp_saved_floats(c->mlp, BT, c->ffn_hidden); }

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
    mlp_forward(s->cfg->mlp, s->B * s->T, s->cfg->width, s->cfg->ffn_hidden, h, w, saved, out, true);
}

static void backward(const block_shape *s, float *const *w, float *const *dw, const float *h, const float *dout,
                     float *dh, const float *saved, float *scratch) {
    mlp_backward(s->cfg->mlp, s->B * s->T, s->cfg->width, s->cfg->ffn_hidden, h, w, dw, saved, dout, dh, false, scratch);
}

const block_module ffn_dense_module = {
    .name = "dense", .declare = declare, .saved_floats = saved_floats, .scratch_floats = saved_floats,
    .forward = forward, .backward = backward,
};
