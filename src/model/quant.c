// quant: int8 copies of a model's weight matrices. See quant.h.
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "kernels/int8.h"
#include "model/linear.h"
#include "model/quant.h"

// Tensors that get an int8 copy: 2-D and not gains (a 1-D gain has rows == 1).
static bool quantized(const param_spec *s) { return s->group != PGROUP_GAIN && s->rows > 1 && s->cols > 1; }

sx_status model_quantize_int8(model *m) {
    SX_CHECK(!m->q8, "quantize a model once");
    size_t n = 0, rows = 0;
    for (size_t i = 0; i < m->table.n; i++)
        if (quantized(&m->table.v[i])) n += m->table.v[i].rows * m->table.v[i].cols, rows += m->table.v[i].rows;
    m->q8 = sx_alloc(n ? n : 1, "quant q8");
    m->q8_scale = sx_alloc((rows ? rows : 1) * sizeof *m->q8_scale, "quant scales");
    m->q8_bytes = n + rows * sizeof *m->q8_scale;
    if (!m->q8 || !m->q8_scale) { model_int8_release(m); return sx_fail(SX_ERR_NOMEM, "out of memory for the int8 weights"); }
    int8_t *q = m->q8;
    float *scale = m->q8_scale;
    sx_status st = SX_OK;
    for (size_t i = 0; i < m->table.n && !st; i++) {
        const param_spec *s = &m->table.v[i];
        if (!quantized(s)) continue;
        int8_quantize_rows(s->rows, s->cols, m->p[i], q, scale);
        int8_dequantize_rows(s->rows, s->cols, q, scale, m->p[i]);
        st = linear_use_int8(m->p[i], q, scale);
        q += s->rows * s->cols;
        scale += s->rows;
    }
    if (st) model_int8_release(m);
    return st;
}

void model_int8_release(model *m) {
    for (size_t i = 0; i < m->table.n && m->q8; i++)
        if (quantized(&m->table.v[i])) linear_forget_int8(m->p[i]);
    sx_free(m->q8);
    sx_free(m->q8_scale);
    m->q8 = NULL;
    m->q8_scale = NULL;
    m->q8_bytes = 0;
}

size_t model_int8_bytes(const model *m) { return m->q8_bytes; }
