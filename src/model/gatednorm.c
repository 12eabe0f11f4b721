// gatednorm: see gatednorm.h.
#include "model/gatednorm.h"

#include <math.h>
#include <stdio.h>

#include "model/linear.h"

enum { PAR_MIN = 32768 }; // elementwise loops shorter than this stay on one thread

static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

sx_status gatednorm_declare(const model_config *c, param_table *t) {
    const size_t C = c->width, R = c->gnorm_rank, sites = R ? 2 * c->n_layer + 1 : 0;
    char norm[32], name[48];
    sx_status s = SX_OK;
    for (size_t k = 0; k < sites && !s; k++) {
        if (k == sites - 1) snprintf(norm, sizeof norm, "norm_f");
        else snprintf(norm, sizeof norm, "l%zu.%s", k / 2, k % 2 ? "mlp_norm" : "attn_norm");
        snprintf(name, sizeof name, "%s.gn_down", norm);
        s = param_table_add(t, name, R, C, INIT_NORMAL, 1.0f / sqrtf((float)C), PGROUP_MATRIX);
        snprintf(name, sizeof name, "%s.gn_up", norm);
        if (!s) s = param_table_add(t, name, C, R, INIT_ZERO, 0, PGROUP_MATRIX);
    }
    return s;
}

size_t gatednorm_saved_floats(const model_config *c, size_t N) { return N * (c->width + c->gnorm_rank); }

size_t gatednorm_scratch_floats(const model_config *c, size_t N) { return 2 * N * (c->width + c->gnorm_rank); }

void gatednorm_forward(size_t N, size_t C, size_t R, const float *wd, const float *wu, float *h, float *saved,
                       float *scratch) {
    float *sig = saved, *a = saved + N * C, *b = scratch;   // σ(c) (N,C), a (N,R), b (N,R)
    linear_forward(N, C, R, h, wd, a, false);
#pragma omp parallel for schedule(static) if (N * R >= PAR_MIN)
    for (size_t i = 0; i < N * R; i++) b[i] = a[i] * sigmoid(a[i]);
    linear_forward(N, R, C, b, wu, sig, false);
#pragma omp parallel for schedule(static) if (N * C >= PAR_MIN)
    for (size_t i = 0; i < N * C; i++) {
        sig[i] = sigmoid(sig[i]);
        h[i] *= sig[i];
    }
}

void gatednorm_backward(size_t N, size_t C, size_t R, const float *x, const float *gain, const float *rstd,
                        const float *wd, const float *wu, float *dwd, float *dwu, float *dh, const float *saved,
                        float *scratch) {
    const float *sig = saved, *a = saved + N * C;
    // x̂ (N,C), dc (N,C), b (N,R), db then da (N,R)
    float *xhat = scratch, *dc = xhat + N * C, *b = dc + N * C, *da = b + N * R;
#pragma omp parallel for schedule(static) if (N * C >= PAR_MIN)
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < C; j++) {
            size_t k = i * C + j;
            xhat[k] = x[k] * rstd[i] * gain[j];   // the product rmsnorm_forward forms
            dc[k] = dh[k] * xhat[k] * sig[k] * (1.0f - sig[k]);
            dh[k] *= sig[k];   // the direct path dy ⊙ σ(c); the gate's path is added below
        }
#pragma omp parallel for schedule(static) if (N * R >= PAR_MIN)
    for (size_t i = 0; i < N * R; i++) b[i] = a[i] * sigmoid(a[i]);
    linear_backward(N, R, C, b, wu, dc, dwu, da, false);   // dW_up += dcᵀ·b; db = dc·W_up
#pragma omp parallel for schedule(static) if (N * R >= PAR_MIN)
    for (size_t i = 0; i < N * R; i++) {
        float s = sigmoid(a[i]);
        da[i] *= s * (1.0f + a[i] * (1.0f - s));
    }
    linear_backward(N, C, R, xhat, wd, da, dwd, dh, true);   // dW_down += daᵀ·x̂; dx̂ += da·W_down
}
