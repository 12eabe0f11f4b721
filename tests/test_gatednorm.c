// GatedNorm (model/gatednorm.h): the forward and backward kernels against a naive double reference of the
// formula in docs/MODEL.md, over several shapes; the model-level checks (gradients against finite differences,
// the PyTorch fixture, decode against the full forward, FLOP accounting) are rows in test_variants.c and
// test_infer.c like every other variant's.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "model/gatednorm.h"
#include "support/testlib.h"

static rng_state rng;

static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }

// y = x̂ ⊙ σ(SiLU(x̂·W_downᵀ)·W_upᵀ) in double, x̂ = x·rstd ⊙ gain; and with dy the gradients dx̂, dW_down, dW_up.
static void ref_gatednorm(size_t N, size_t C, size_t R, const float *x, const float *gain, const float *rstd,
                          const float *wd, const float *wu, const float *dy, double *y, double *dxhat, double *dwd,
                          double *dwu) {
    double *xh = calloc(N * C, sizeof *xh), *a = calloc(R, sizeof *a), *b = calloc(R, sizeof *b),
           *s = calloc(C, sizeof *s), *dc = calloc(C, sizeof *dc), *da = calloc(R, sizeof *da);
    memset(dwd, 0, R * C * sizeof *dwd);
    memset(dwu, 0, C * R * sizeof *dwu);
    for (size_t t = 0; t < N; t++) {
        const double *h = xh + t * C;
        for (size_t j = 0; j < C; j++) xh[t * C + j] = (double)x[t * C + j] * rstd[t] * gain[j];
        for (size_t r = 0; r < R; r++) {
            a[r] = 0;
            for (size_t j = 0; j < C; j++) a[r] += h[j] * wd[r * C + j];
            b[r] = a[r] * sig(a[r]);
        }
        for (size_t j = 0; j < C; j++) {
            double c = 0;
            for (size_t r = 0; r < R; r++) c += b[r] * wu[j * R + r];
            s[j] = sig(c);
            y[t * C + j] = h[j] * s[j];
            dc[j] = dy[t * C + j] * h[j] * s[j] * (1 - s[j]);
            dxhat[t * C + j] = dy[t * C + j] * s[j];
        }
        for (size_t r = 0; r < R; r++) {
            double db = 0;
            for (size_t j = 0; j < C; j++) {
                db += dc[j] * wu[j * R + r];
                dwu[j * R + r] += dc[j] * b[r];
            }
            da[r] = db * sig(a[r]) * (1 + a[r] * (1 - sig(a[r])));
            for (size_t j = 0; j < C; j++) {
                dwd[r * C + j] += da[r] * h[j];
                dxhat[t * C + j] += da[r] * wd[r * C + j];
            }
        }
    }
    free(xh);
    free(a);
    free(b);
    free(s);
    free(dc);
    free(da);
}

static float *randn(size_t n, float std) {
    float *x = malloc(n * sizeof *x);
    rng_fill_normal(&rng, x, n, std);
    return x;
}

static void close_d(const float *got, const double *want, size_t n, double rtol, double atol, const char *what) {
    float *w = malloc(n * sizeof *w);
    for (size_t i = 0; i < n; i++) w[i] = (float)want[i];
    testlib_arrays_close(got, w, n, rtol, atol, __FILE__, __LINE__, what);
    free(w);
}

static void check_shape(size_t N, size_t C, size_t R) {
    model_config c = {.width = C, .gnorm_rank = R};
    float *x = randn(N * C, 1.0f), *gain = randn(C, 0.2f), *wd = randn(R * C, 1.0f / sqrtf((float)C)),
          *wu = randn(C * R, 1.0f / sqrtf((float)R)), *dy = randn(N * C, 1.0f), *rstd = malloc(N * sizeof *rstd);
    for (size_t j = 0; j < C; j++) gain[j] += 1.0f;
    for (size_t t = 0; t < N; t++) {
        double ss = 0;
        for (size_t j = 0; j < C; j++) ss += (double)x[t * C + j] * x[t * C + j];
        rstd[t] = (float)(1.0 / sqrt(ss / (double)C + 1e-5));
    }
    float *h = malloc(N * C * sizeof *h), *saved = malloc(gatednorm_saved_floats(&c, N) * sizeof *saved),
          *scratch = malloc(gatednorm_scratch_floats(&c, N) * sizeof *scratch);
    for (size_t t = 0; t < N; t++)
        for (size_t j = 0; j < C; j++) h[t * C + j] = x[t * C + j] * rstd[t] * gain[j];
    double *y = malloc(N * C * sizeof *y), *dxh = malloc(N * C * sizeof *dxh), *dwd = malloc(R * C * sizeof *dwd),
           *dwu = malloc(C * R * sizeof *dwu);
    ref_gatednorm(N, C, R, x, gain, rstd, wd, wu, dy, y, dxh, dwd, dwu);
    gatednorm_forward(N, C, R, wd, wu, h, saved, scratch);
    close_d(h, y, N * C, 1e-5, 1e-6, "gatednorm forward");
    // Backward accumulates the weight gradients: start them at 1 and expect 1 + the reference.
    float *gwd = malloc(R * C * sizeof *gwd), *gwu = malloc(C * R * sizeof *gwu);
    for (size_t i = 0; i < R * C; i++) gwd[i] = gwu[i] = 1.0f;
    for (size_t i = 0; i < R * C; i++) dwd[i] += 1.0, dwu[i] += 1.0;
    memcpy(h, dy, N * C * sizeof *h);
    gatednorm_backward(N, C, R, x, gain, rstd, wd, wu, gwd, gwu, h, saved, scratch);
    close_d(h, dxh, N * C, 1e-4, 1e-5, "gatednorm dx̂");
    close_d(gwd, dwd, R * C, 1e-4, 1e-5, "gatednorm dW_down");
    close_d(gwu, dwu, C * R, 1e-4, 1e-5, "gatednorm dW_up");
    float *bufs[] = {x, gain, wd, wu, dy, rstd, h, saved, scratch, gwd, gwu};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
    free(y);
    free(dxh);
    free(dwd);
    free(dwu);
}

static void test_kernels_reference(void) {
    check_shape(5, 8, 3);
    check_shape(1, 16, 1);
    check_shape(33, 24, 8);
    check_shape(300, 64, 16);   // large enough for the threaded loops
}

int main(void) {
    testlib_bind_gemm_workspace();   // the kernels and modules here run outside a model
    rng_seed(&rng, 77);
    TEST_RUN(test_kernels_reference);
    return testlib_finish("gatednorm");
}
