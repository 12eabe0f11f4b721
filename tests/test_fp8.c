// fp8 (e4m3) products of the dense MLP: the format against a table of exactly known values, all 256 codes,
// ties to even and saturation; the power-of-two scale; the scaled product against a naive reference that
// rounds the same way (fp32 and bf16 GEMM paths); the MLP's fp8 forward and straight-through backward against
// naive loops; the delayed-scaling history through the dense FFN module; the PyTorch fixtures.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "kernels/fp8.h"
#include "kernels/gemm.h"
#include "model/flops.h"
#include "model/mlp.h"
#include "model/model.h"
#include "support/modelcheck.h"
#include "support/testlib.h"

// Codes whose values are known exactly (OCP 8-bit floating point specification, E4M3).
static void test_e4m3_known_values(void) {
    static const struct { uint8_t code; float value; } table[] = {
        {0x00, 0.0f}, {0x01, 0x1p-9f}, {0x02, 0x1p-8f}, {0x07, 7 * 0x1p-9f}, {0x08, 0x1p-6f}, {0x0F, 1.875f * 0x1p-6f},
        {0x30, 0.5f}, {0x38, 1.0f}, {0x39, 1.125f}, {0x3F, 1.875f}, {0x40, 2.0f}, {0x48, 4.0f}, {0x4C, 6.0f},
        {0x70, 128.0f}, {0x77, 240.0f}, {0x78, 256.0f}, {0x7D, 416.0f}, {0x7E, 448.0f},
        {0x80, -0.0f}, {0x81, -0x1p-9f}, {0xB8, -1.0f}, {0xFE, -448.0f},
    };
    size_t bad = 0;
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        uint8_t c = table[i].code;
        float v = e4m3_decode(c);
        bool same = v == table[i].value && signbit(v) == signbit(table[i].value);
        if (!same) fprintf(stderr, "  code 0x%02X: %g, want %g\n", c, (double)v, (double)table[i].value);
        bad += !same;
    }
    CHECK(bad == 0);
    CHECK(isnan(e4m3_decode(0x7F)) && isnan(e4m3_decode(0xFF)));
}

// Every non-NaN code: decode → encode gives the code back, rounding a code's value leaves it, and the values
// of codes 0x00..0x7E increase strictly (126 distinct positive finite values).
static void test_e4m3_all_codes(void) {
    size_t bad = 0, finite = 0;
    for (int c = 0; c < 256; c++) {
        float v = e4m3_decode((uint8_t)c);
        if (isnan(v)) continue;
        finite++;
        bad += e4m3_encode(v) != c || e4m3_round(v) != v || signbit(e4m3_round(v)) != signbit(v);
        if ((c & 0x7F) && (c & 0x7F) < 0x7F) bad += !(fabsf(v) > fabsf(e4m3_decode((uint8_t)(c - 1))));
    }
    CHECK(bad == 0 && finite == 254);
}

// Midpoints between neighbours round to the even code; just off them, to the nearer; beyond 448 (inf too) to
// ±448; below half the smallest subnormal to 0; NaN stays NaN.
static void test_e4m3_ties_and_saturation(void) {
    size_t bad = 0;
    for (int c = 0; c < 0x7E; c++) {
        float lo = e4m3_decode((uint8_t)c), hi = e4m3_decode((uint8_t)(c + 1)), mid = (lo + hi) / 2;
        float even = c % 2 == 0 ? lo : hi;
        bad += e4m3_round(mid) != even || e4m3_round(-mid) != -even;
        bad += e4m3_round(nextafterf(mid, 0)) != lo || e4m3_round(nextafterf(mid, INFINITY)) != hi;
        bad += e4m3_encode(mid) != (c % 2 == 0 ? c : c + 1);
    }
    CHECK(bad == 0);
    CHECK(e4m3_round(449.0f) == 448 && e4m3_round(464.0f) == 448 && e4m3_round(1e30f) == 448);
    CHECK(e4m3_round(INFINITY) == 448 && e4m3_round(-INFINITY) == -448 && e4m3_encode(-1e9f) == 0xFE);
    CHECK(e4m3_round(0x1p-10f) == 0 && e4m3_round(0x1.01p-10f) == 0x1p-9f && e4m3_round(3 * 0x1p-10f) == 0x1p-8f);
    CHECK(isnan(e4m3_round(NAN)) && e4m3_encode(NAN) == 0x7F);
    CHECK(e4m3_round(1.0625f) == 1.0f && e4m3_round(1.1875f) == 1.25f);   // ties: even mantissa 000, 010
}

// The scale is the largest power of two keeping amax·s within 448.
static void test_fp8_scale(void) {
    const float amax[] = {1.0f, 0.3f, 448.0f, 449.0f, 1e-6f, 3.5f, 1.75f, 7e4f};
    size_t bad = 0;
    for (size_t i = 0; i < sizeof amax / sizeof *amax; i++) {
        float s = fp8_scale(amax[i]);
        int e;
        bad += frexpf(s, &e) != 0.5f || amax[i] * s > 448.0f || amax[i] * s * 2 <= 448.0f;
    }
    CHECK(bad == 0);
    CHECK(fp8_scale(1.0f) == 256.0f && fp8_scale(1.75f) == 256.0f && fp8_scale(1.76f) == 128.0f);
    CHECK(fp8_scale(0) == 1.0f && fp8_scale(NAN) == 1.0f && fp8_scale(INFINITY) == 1.0f);
}

// y = e4m3(x·sx)/sx · (e4m3(W·sw)/sw)ᵀ through the GEMM equals the naive sum of the same rounded products,
// on both GEMM precisions (the rounded operands are exact bf16 values, so bf16 changes nothing but the
// accumulation order).
static void test_fp8_product_vs_naive(void) {
    enum { N = 13, C = 40, F = 24 };
    rng_state r;
    rng_seed(&r, 3);
    float x[N * C], W[F * C], xq[N * C], wq[F * C], y[N * F], want[N * F];
    rng_fill_normal(&r, x, N * C, 2.0f);
    rng_fill_normal(&r, W, F * C, 0.05f);
    float sx = fp8_scale(fp8_amax(N * C, x)), sw = fp8_scale(fp8_amax(F * C, W) / 2);   // W saturates a little
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < F; j++) {
            double acc = 0;
            for (size_t k = 0; k < C; k++)
                acc += (double)e4m3_round(x[i * C + k] * sx) * (double)e4m3_round(W[j * C + k] * sw);
            want[i * F + j] = (float)(acc / ((double)sx * sw));
        }
    fp8_fake_quant(N * C, x, sx, xq);
    fp8_fake_quant(F * C, W, sw, wq);
    size_t not_bf16 = 0;
    for (size_t i = 0; i < N * C; i++) not_bf16 += bf16_round(xq[i]) != xq[i];
    for (size_t i = 0; i < F * C; i++) not_bf16 += bf16_round(wq[i]) != wq[i];
    CHECK(not_bf16 == 0);
    for (int prec = 0; prec < 2; prec++) {
        gemm_set_precision(prec ? GEMM_BF16 : GEMM_FP32);
        gemm(false, true, N, F, C, xq, C, wq, C, y, F, false);
        CHECK_ARRAYS_CLOSE(y, want, N * F, 1e-5, 1e-6);
    }
    gemm_set_precision(GEMM_FP32);
}

// Naive fp8 MLP (relu2 or swiglu) and its straight-through gradients, in double from the rounded operands.
static void naive_fp8_mlp(mlp_kind k, size_t N, size_t C, size_t F, const float *x, float *const *w, const float *sc,
                          const float *dy, float *y, float *dx, float **dw) {
    size_t nt = mlp_tensor_count(k);
    float *xq = malloc(N * C * sizeof *xq), *wq[3], *pre = malloc(N * F * sizeof *pre), *up = malloc(N * F * sizeof *up);
    float *act = malloc(N * F * sizeof *act), *da = malloc(N * F * sizeof *da);
    fp8_fake_quant(N * C, x, sc[MLP_FP8_X], xq);
    for (size_t i = 0; i < nt; i++) wq[i] = malloc(F * C * sizeof(float)), fp8_fake_quant(F * C, w[i], sc[MLP_FP8_W0 + i], wq[i]);
    const float *wu = wq[nt - 2], *wd = wq[nt - 1];
    for (size_t n = 0; n < N; n++)
        for (size_t f = 0; f < F; f++) {
            double p = 0, u = 0;
            for (size_t c = 0; c < C; c++) p += (double)xq[n * C + c] * wq[0][f * C + c], u += (double)xq[n * C + c] * wu[f * C + c];
            pre[n * F + f] = (float)p, up[n * F + f] = (float)u;
            double a = k == MLP_SWIGLU ? p / (1 + exp(-p)) * u : p > 0 ? p * p : 0;
            act[n * F + f] = (float)a;
        }
    fp8_fake_quant(N * F, act, sc[MLP_FP8_A], act);
    for (size_t n = 0; n < N; n++)
        for (size_t c = 0; c < C; c++) {
            double s = 0;
            for (size_t f = 0; f < F; f++) s += (double)act[n * F + f] * wd[c * F + f];
            y[n * C + c] = (float)s;
        }
    memset(dx, 0, N * C * sizeof *dx);
    for (size_t i = 0; i < nt; i++) memset(dw[i], 0, F * C * sizeof(float));
    for (size_t n = 0; n < N; n++)
        for (size_t f = 0; f < F; f++) {
            double g = 0;
            for (size_t c = 0; c < C; c++) g += (double)dy[n * C + c] * wd[c * F + f], dw[nt - 1][c * F + f] += dy[n * C + c] * act[n * F + f];
            double p = pre[n * F + f], u = up[n * F + f], sg = 1 / (1 + exp(-p));
            double dp = k == MLP_SWIGLU ? g * u * sg * (1 + p * (1 - sg)) : p > 0 ? 2 * p * g : 0;
            double du = k == MLP_SWIGLU ? g * p * sg : 0;
            da[n * F + f] = (float)dp;
            for (size_t c = 0; c < C; c++) {
                dw[0][f * C + c] += (float)(dp * xq[n * C + c]);
                dx[n * C + c] += (float)(dp * wq[0][f * C + c] + du * wu[f * C + c]);
                if (k == MLP_SWIGLU) dw[1][f * C + c] += (float)(du * xq[n * C + c]);
            }
        }
    free(xq), free(pre), free(up), free(act), free(da);
    for (size_t i = 0; i < nt; i++) free(wq[i]);
}

// mlp_fp8_forward / _backward against the naive reference, with scales from a history (rows of amaxes) for
// some roles and from the operand itself for the roles whose column is zero; activations saturate.
static void check_mlp_fp8(mlp_kind k) {
    enum { N = 11, C = 16, F = 20 };
    size_t nt = mlp_tensor_count(k);
    rng_state r;
    rng_seed(&r, 8 + k);
    float x[N * C], dy[N * C], wbuf[3][F * C], gbuf[3][F * C], want_g[3][F * C], *w[3], *g[3], *wg[3];
    rng_fill_normal(&r, x, N * C, 1.0f);
    rng_fill_normal(&r, dy, N * C, 1.0f);
    for (size_t i = 0; i < 3; i++) {
        rng_fill_normal(&r, wbuf[i], F * C, 0.4f);
        w[i] = wbuf[i], g[i] = gbuf[i], wg[i] = want_g[i];
        memset(gbuf[i], 0, sizeof gbuf[i]);
    }
    float history[MLP_FP8_HISTORY * MLP_FP8_ROLES] = {0};
    history[1 * MLP_FP8_ROLES + MLP_FP8_A] = 0.5f;   // activations beyond 0.875 saturate
    history[3 * MLP_FP8_ROLES + MLP_FP8_A] = 0.3f;
    history[2 * MLP_FP8_ROLES + MLP_FP8_W0] = 1.0f;
    float *saved = calloc(mlp_fp8_saved_floats(k, N, C, F), sizeof *saved);
    float *scratch = calloc(mlp_fp8_scratch_floats(k, N, C, F), sizeof *scratch);
    float y[N * C], dx[N * C], want_y[N * C], want_dx[N * C];
    mlp_fp8_forward(k, N, C, F, x, w, history, saved, y, false, scratch);
    const float *sc = saved, *amax = saved + MLP_FP8_ROLES;
    CHECK(sc[MLP_FP8_A] == 512.0f && sc[MLP_FP8_W0] == 256.0f);
    CHECK(sc[MLP_FP8_X] == fp8_scale(fp8_amax(N * C, x)) && amax[MLP_FP8_X] == fp8_amax(N * C, x));
    CHECK(amax[MLP_FP8_W0 + 1] == fp8_amax(F * C, w[1]) && amax[MLP_FP8_A] > 0.875f);
    mlp_fp8_backward(k, N, C, F, w, g, saved, dy, dx, false, scratch);
    naive_fp8_mlp(k, N, C, F, x, w, sc, dy, want_y, want_dx, wg);
    CHECK_ARRAYS_CLOSE(y, want_y, N * C, 1e-4, 1e-5);
    CHECK_ARRAYS_CLOSE(dx, want_dx, N * C, 1e-4, 1e-5);
    for (size_t i = 0; i < nt; i++) CHECK_ARRAYS_CLOSE(g[i], want_g[i], F * C, 1e-4, 1e-5);
    free(saved), free(scratch);
}

static void test_mlp_fp8_relu2(void) { check_mlp_fp8(MLP_RELU2); }
static void test_mlp_fp8_swiglu(void) { check_mlp_fp8(MLP_SWIGLU); }

// Delayed scaling through the model: the first step scales from the operands themselves; each optimizer step
// pushes the mean amax of its forwards (two micro-batches here) as the history's new row 0, older rows move
// down; the next forward's scales come from the history.
static void test_fp8_history(void) {
    model_config c;
    model m;
    if (!CHECK(model_config_parse("d1-w32-hd8-fp8-v50", 0, &c) == SX_OK && model_init(&m, &c) == SX_OK)) return;
    CHECK(model_reserve(&m, 2, 7) == SX_OK && m.n_stats == MLP_FP8_ROLES + 1);
    modelcheck_randomize(&m, 3);
    long ih = param_table_find(&m.table, "l0.fp8_amax");
    if (!CHECK(ih >= 0)) { model_free(&m); return; }
    float *h = m.p[ih];
    memset(h, 0, MLP_FP8_HISTORY * MLP_FP8_ROLES * sizeof *h);
    int32_t tok[2][16];
    for (size_t i = 0; i < 16; i++) tok[0][i] = (int32_t)(i * 7 % 50), tok[1][i] = (int32_t)(i * 11 % 50);
    float mean[MLP_FP8_ROLES] = {0};
    for (int step = 0; step < 2; step++) {
        model_zero_grad(&m);
        model_loss_and_grad(&m, tok[0], 0.5f);
        model_loss_and_grad(&m, tok[1], 0.5f);
        float acc[MLP_FP8_ROLES + 1];
        memcpy(acc, m.stats_acc, sizeof acc);
        CHECK(acc[MLP_FP8_ROLES] == 2 && acc[MLP_FP8_X] > 0 && acc[MLP_FP8_A] > 0 && acc[MLP_FP8_W0 + 2] == 0);
        model_after_step(&m);
        if (step == 1) CHECK(!memcmp(h + MLP_FP8_ROLES, mean, sizeof mean));   // last step's row moved down
        for (size_t r = 0; r < MLP_FP8_ROLES; r++) mean[r] = acc[r] / 2;
        CHECK(!memcmp(h, mean, sizeof mean));
    }
    CHECK(model_moe_stats_json(&m) == NULL);   // fp8 statistics are not expert loads
    model_free(&m);
    // fp8 is for the dense MLP only.
    CHECK(model_config_parse("d1-moe4k2-fp8", 0, &c) == SX_ERR_ARG);
}

// Accounting: the history is counted as parameters (it is in the table) but not as matmul weights: training
// FLOPs per token equal the model without fp8.
static void test_fp8_accounting(void) {
    model_config c, plain;
    model m;
    if (!CHECK(model_config_parse("d2-w32-hd8-swiglu-fp8-v50", 0, &c) == SX_OK && model_init(&m, &c) == SX_OK)) return;
    CHECK(model_config_parse("d2-w32-hd8-swiglu-v50", 0, &plain) == SX_OK);
    model_flops f = model_flops_count(&c, 64), g = model_flops_count(&plain, 64);
    CHECK(f.params_total == (double)model_param_count(&m) && f.params_nonembed == (double)model_param_count_nonembed(&m));
    CHECK(f.params_total - g.params_total == 2.0 * MLP_FP8_HISTORY * MLP_FP8_ROLES);
    CHECK(f.train_per_token == g.train_per_token && f.params_matmul == g.params_matmul);
    model_free(&m);
}

// The PyTorch reference (tools/ref/variants.py _mlp_fp8) on whole models, fixture history as given.
static void test_fixture_fp8_relu2(void) { modelcheck_fixture("fp8_relu2"); }
static void test_fixture_fp8_swiglu(void) { modelcheck_fixture("fp8_swiglu"); }

int main(void) {
    testlib_bind_gemm_workspace();   // the kernels and modules here run outside a model
    TEST_RUN(test_e4m3_known_values);
    TEST_RUN(test_e4m3_all_codes);
    TEST_RUN(test_e4m3_ties_and_saturation);
    TEST_RUN(test_fp8_scale);
    TEST_RUN(test_fp8_product_vs_naive);
    TEST_RUN(test_mlp_fp8_relu2);
    TEST_RUN(test_mlp_fp8_swiglu);
    TEST_RUN(test_fp8_history);
    TEST_RUN(test_fp8_accounting);
    TEST_RUN(test_fixture_fp8_relu2);
    TEST_RUN(test_fixture_fp8_swiglu);
    return testlib_finish("fp8");
}
