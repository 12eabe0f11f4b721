#include <math.h>
#include <stdio.h>
#include "model/attn_common.h"
#include "model/linear.h"

attn_shape attn_layer_shape(const block_shape *s, size_t H, size_t Hkv, size_t hd, float scale) {
    const model_config *c = s->cfg;
    return (attn_shape){.B = s->B, .T = s->T, .H = H, .Hkv = Hkv, .hd = hd, .scale = scale,
                        .window = model_config_layer_is_local(c, s->layer) ? c->window : 0,
                        .softcap = c->attn_softcap};
}

sx_status attn_gate_declare(const model_config *c, size_t layer, param_table *t) {
    if (!c->attn_gate) return SX_OK;
    char name[48];
    snprintf(name, sizeof name, "l%zu.wg", layer);
    return param_table_add(t, name, c->n_head, c->width, INIT_ZERO, 0, PGROUP_MATRIX);
}

void attn_gate_forward(size_t BT, size_t C, size_t H, size_t hd, const float *h, const float *Wg,
                       const float *att, float *gate, float *out) {
    linear_forward(BT, C, H, h, Wg, gate, false);
    for (size_t r = 0; r < BT * H; r++) {
        float g = 1.0f / (1.0f + expf(-gate[r]));
        gate[r] = g;
        for (size_t d = 0; d < hd; d++) out[r * hd + d] = g * att[r * hd + d];
    }
}

void attn_gate_backward(size_t BT, size_t H, size_t hd, const float *att, const float *gate, const float *dout,
                        float *datt, float *dlogit) {
    for (size_t r = 0; r < BT * H; r++) {
        float g = gate[r];
        double dg = 0;
        for (size_t d = 0; d < hd; d++) {
            dg += (double)dout[r * hd + d] * att[r * hd + d];
            datt[r * hd + d] = g * dout[r * hd + d];
        }
        dlogit[r] = (float)dg * g * (1.0f - g);
    }
}
