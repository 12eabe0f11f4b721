// ffn_dense: the dense MLP of a layer — relu2 / gelu: out += act(h·w_upᵀ)·w_downᵀ;
// swiglu: out += (silu(h·w_gateᵀ) ⊙ h·w_upᵀ)·w_downᵀ. The computation is model/mlp.c on all B·T rows; this
// module declares the layer's tensors and, with fp8 products, keeps their delayed-scaling amax history: the
// tensor `fp8_amax` (MLP_FP8_HISTORY, MLP_FP8_ROLES), newest row first, no gradient (in the table so that
// checkpoints carry it), pushed after each optimizer step with the mean amax of the step's forwards.
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "model/block.h"
#include "model/mlp.h"

static bool gated(const model_config *c) { return c->mlp == MLP_SWIGLU; }

static size_t saved_floats(const model_config *c, size_t BT) {
    if (c->fp8_mlp) return mlp_fp8_saved_floats(c->mlp, BT, c->width, c->ffn_hidden);
    return mlp_saved_floats(c->mlp, BT, c->ffn_hidden);
}

static size_t scratch_floats(const model_config *c, size_t BT) {
    if (c->fp8_mlp) return mlp_fp8_scratch_floats(c->mlp, BT, c->width, c->ffn_hidden);
    return mlp_saved_floats(c->mlp, BT, c->ffn_hidden);
}

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
    snprintf(name, sizeof name, "l%zu.fp8_amax", layer);
    if (!s && c->fp8_mlp) s = param_table_add(t, name, MLP_FP8_HISTORY, MLP_FP8_ROLES, INIT_ZERO, 0, PGROUP_GAIN);
    return s;
}

static void forward(const block_shape *s, float *const *w, const float *h, float *out, float *saved, float *scratch) {
    const model_config *c = s->cfg;
    if (c->fp8_mlp)
        mlp_fp8_forward(c->mlp, s->B * s->T, c->width, c->ffn_hidden, h, w, w[mlp_tensor_count(c->mlp)], saved, out,
                        true, scratch);
    else
        mlp_forward(c->mlp, s->B * s->T, c->width, c->ffn_hidden, h, w, saved, out, true);
}

static void backward(const block_shape *s, float *const *w, float *const *dw, const float *h, const float *dout,
                     float *dh, const float *saved, float *scratch) {
    const model_config *c = s->cfg;
    if (c->fp8_mlp)
        mlp_fp8_backward(c->mlp, s->B * s->T, c->width, c->ffn_hidden, w, dw, saved, dout, dh, false, scratch);
    else
        mlp_backward(c->mlp, s->B * s->T, c->width, c->ffn_hidden, h, w, dw, saved, dout, dh, false, scratch);
}

// With fp8 products: each forward's operand amaxes (MLP_FP8_ROLES) summed, and the number of forwards (1) —
// over micro-batches and ranks; their mean is the step's row of the history.
static size_t n_stats(const model_config *c) { return c->fp8_mlp ? MLP_FP8_ROLES + 1 : 0; }

static void stats(const model_config *c, size_t BT, const float *saved, float *acc) {
    (void)c, (void)BT;
    for (size_t r = 0; r < MLP_FP8_ROLES; r++) acc[r] += saved[MLP_FP8_ROLES + r];
    acc[MLP_FP8_ROLES] += 1;
}

// The history moves down a row; the step's mean amaxes become row 0.
static void after_step(const model_config *c, float *const *w, const float *acc) {
    float *history = w[mlp_tensor_count(c->mlp)];
    if (!acc[MLP_FP8_ROLES]) return;
    memmove(history + MLP_FP8_ROLES, history, (MLP_FP8_HISTORY - 1) * MLP_FP8_ROLES * sizeof *history);
    for (size_t r = 0; r < MLP_FP8_ROLES; r++) history[r] = acc[r] / acc[MLP_FP8_ROLES];
}

const block_module ffn_dense_module = {
    .name = "dense", .declare = declare, .saved_floats = saved_floats, .scratch_floats = scratch_floats,
    .forward = forward, .backward = backward, .n_stats = n_stats, .stats = stats, .after_step = after_step,
};
