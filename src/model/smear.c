// smear: see smear.h. Rows are independent in the forward and in the backward's per-row passes (threaded);
// dλ and dw are summed in row order, so results do not depend on the thread count.
#include <math.h>
#include "model/smear.h"

sx_status smear_declare(const model_config *c, param_table *t) {
    if (!c->smear) return SX_OK;
    sx_status s = param_table_add(t, "smear_gate", 1, SMEAR_GATE_IN, INIT_ZERO, 0, PGROUP_GAIN);
    return s ? s : param_table_add(t, "smear_lambda", 1, 1, INIT_ZERO, 0, PGROUP_GAIN);
}

// σ(w·e[0:12]).
static float gate_of(const float *w, const float *e) {
    float z = 0;
    for (size_t j = 0; j < SMEAR_GATE_IN; j++) z += w[j] * e[j];
    return 1.0f / (1.0f + expf(-z));
}

void smear_row(size_t C, const float *w, float lambda, const float *e, const float *prev, float *x) {
    float a = lambda * gate_of(w, e);
    for (size_t c = 0; c < C; c++) x[c] += a * prev[c];
}

void smear_forward(size_t N, size_t T, size_t C, const float *w, float lambda, const float *e, float *x) {
#pragma omp parallel for schedule(static) if (N * C >= (1u << 15))
    for (size_t i = 0; i < N; i++)
        if (i % T) smear_row(C, w, lambda, e + i * C, e + (i - 1) * C, x + i * C);
}

// Backward of x_i = e_i + λ·s_i·e_{i−1}, s_i = σ(w·e_i[0:12]), with dot_i = e_{i−1}·g_i:
//   de_i = g_i + λ·s_i(1−s_i)·dot_i·w (channels 0:12) + λ·s_{i+1}·g_{i+1} (when row i+1 looks back at i)
//   dλ = Σ_i s_i·dot_i;  dw = Σ_i λ·s_i(1−s_i)·dot_i·e_i[0:12]
void smear_backward(size_t N, size_t T, size_t C, const float *w, float lambda, const float *e, const float *g,
                    float *de, float *dw, float *dlambda, float *dots) {
#pragma omp parallel for schedule(static) if (N * C >= (1u << 15))
    for (size_t i = 0; i < N; i++) {
        float dot = 0;
        if (i % T)
            for (size_t c = 0; c < C; c++) dot += e[(i - 1) * C + c] * g[i * C + c];
        dots[i] = dot;
    }
#pragma omp parallel for schedule(static) if (N * C >= (1u << 15))
    for (size_t i = 0; i < N; i++) {
        float next = i + 1 < N && (i + 1) % T ? lambda * gate_of(w, e + (i + 1) * C) : 0;
        for (size_t c = 0; c < C; c++) de[i * C + c] = g[i * C + c] + next * g[(i + 1 < N ? i + 1 : i) * C + c];
        if (i % T) {
            float s = gate_of(w, e + i * C), k = lambda * s * (1 - s) * dots[i];
            for (size_t j = 0; j < SMEAR_GATE_IN; j++) de[i * C + j] += k * w[j];
        }
    }
    double dl = 0, dwa[SMEAR_GATE_IN] = {0};
    for (size_t i = 0; i < N; i++) {
        if (!(i % T)) continue;
        double s = gate_of(w, e + i * C), k = lambda * s * (1 - s) * dots[i];
        dl += s * dots[i];
        for (size_t j = 0; j < SMEAR_GATE_IN; j++) dwa[j] += k * e[i * C + j];
    }
    *dlambda += (float)dl;
    for (size_t j = 0; j < SMEAR_GATE_IN; j++) dw[j] += (float)dwa[j];
}
