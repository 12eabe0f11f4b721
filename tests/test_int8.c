// int8 weight-only inference: per-channel quantization (scales, rounding error bound), the int8 product
// against its double-accumulating reference and against the fp32 GEMM on the dequantized weights, and a
// quantized model: the decoder's products read the int8 copy (changing the fp32 copy of a matrix changes
// nothing), and its logits match the fp32 decode of the same dequantized weights.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "infer/decode.h"
#include "kernels/gemm.h"
#include "kernels/int8.h"
#include "model/model.h"
#include "model/quant.h"
#include "support/modelcheck.h"
#include "support/testlib.h"

static void test_quantize_rows(void) {
    enum { R = 5, C = 37 };
    float W[R * C], back[R * C], scale[R];
    int8_t q[R * C];
    rng_state r;
    rng_seed(&r, 3);
    rng_fill_normal(&r, W, R * C, 0.3f);
    for (size_t c = 0; c < C; c++) W[3 * C + c] = 0;   // an all-zero row
    W[1 * C + 4] = -2.5f;                              // row 1's amax, negative
    int8_quantize_rows(R, C, W, q, scale);
    int8_dequantize_rows(R, C, q, scale, back);
    CHECK(scale[3] == 0 && q[3 * C] == 0 && back[3 * C + 7] == 0);
    CHECK_CLOSE(scale[1], 2.5 / 127, 1e-7, 0);
    CHECK(q[1 * C + 4] == -127);
    for (size_t i = 0; i < R; i++) {
        float amax = 0;
        for (size_t c = 0; c < C; c++) amax = fmaxf(amax, fabsf(W[i * C + c]));
        CHECK_CLOSE(scale[i], amax / 127.0, 1e-7, 0);
        for (size_t c = 0; c < C; c++)   // round to nearest: within half a step
            if (!CHECK(fabsf(back[i * C + c] - W[i * C + c]) <= 0.5f * scale[i] * (1 + 1e-5f))) return;
    }
}

// The product against the reference (accumulate on and off, shapes with remainders) and against gemm_ref of
// x and the dequantized weights.
static void check_int8_linear(void) {
    const size_t shapes[][3] = {{1, 64, 96}, {3, 130, 7}, {17, 5, 33}, {4, 256, 512}, {9, 1000, 40}};
    rng_state r;
    rng_seed(&r, 11);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        size_t N = shapes[s][0], in = shapes[s][1], out = shapes[s][2];
        float *x = malloc(N * in * sizeof *x), *W = malloc(out * in * sizeof *W), *scale = malloc(out * sizeof *scale);
        float *got = malloc(N * out * sizeof *got), *want = malloc(N * out * sizeof *want), *deq = malloc(out * in * sizeof *deq);
        int8_t *q = malloc(out * in);
        rng_fill_normal(&r, x, N * in, 1.0f);
        rng_fill_normal(&r, W, out * in, 0.1f);
        int8_quantize_rows(out, in, W, q, scale);
        for (int acc = 0; acc < 2; acc++) {
            rng_fill_normal(&r, got, N * out, 1.0f);
            memcpy(want, got, N * out * sizeof *got);
            int8_linear(N, in, out, x, q, scale, got, acc);
            int8_linear_ref(N, in, out, x, q, scale, want, acc);
            double err = testlib_max_rel_err(got, want, N * out, 1e-5, 1e-5, NULL);
            if (!CHECK(err <= 1)) fprintf(stderr, "  %zux%zux%zu acc %d: max rel err %g\n", N, in, out, acc, err);
        }
        int8_dequantize_rows(out, in, q, scale, deq);
        int8_linear(N, in, out, x, q, scale, got, false);
        gemm_ref(false, true, N, out, in, x, in, deq, in, want, out, false);
        double err = testlib_max_rel_err(got, want, N * out, 1e-5, 1e-5, NULL);
        if (!CHECK(err <= 1)) fprintf(stderr, "  %zux%zux%zu vs fp32 dequantized: max rel err %g\n", N, in, out, err);
        free(x), free(W), free(scale), free(got), free(want), free(deq), free(q);
    }
}

static void test_int8_linear(void) {   // on every tile this CPU has (the GEMM path picks it)
    const char *before = gemm_path_name();
    for (const char *const *p = gemm_supported_paths(); *p; p++) {
        CHECK(gemm_force_path(*p));
        check_int8_linear();
    }
    gemm_force_path(before);
}

static void decode_logits(model *m, const int32_t *tok, size_t T, float *logits) {
    decoder d;
    CHECK(decoder_init(&d, m, 32) == SX_OK);
    int s = kvcache_new_seq(&d.cache), seqs[16];
    for (size_t i = 0; i < T; i++) seqs[i] = s;
    CHECK(decoder_forward(&d, T, seqs, tok, logits) == SX_OK);
    decoder_free(&d);
}

// A quantized model's decode equals the fp32 decode of its dequantized weights, and reads the int8 copy.
static void check_model(const char *desc) {
    model_config c;
    model m;
    if (!CHECK(model_config_parse(desc, 0, &c) == SX_OK) || !CHECK(model_init(&m, &c) == SX_OK)) return;
    modelcheck_randomize(&m, 4);
    const int32_t tok[8] = {1, 5, 9, 13, 2, 33, 0, 7};
    size_t V = c.vocab;
    float *fp32 = malloc(8 * V * sizeof *fp32), *deq = malloc(8 * V * sizeof *deq), *int8 = malloc(8 * V * sizeof *int8);
    decode_logits(&m, tok, 8, fp32);
    CHECK(model_quantize_int8(&m) == SX_OK);
    CHECK(model_int8_bytes(&m) > 0);
    decode_logits(&m, tok, 8, int8);
    double moved = 0;   // quantization moved the logits (the comparison below is not vacuous)
    for (size_t i = 0; i < 8 * V; i++) moved = fmax(moved, fabs(int8[i] - fp32[i]));
    CHECK(moved > 1e-4);
    // Scaling the fp32 copy of the first layer's FFN matrices changes nothing: its products read the int8 copy.
    size_t first = m.layer_first[0] + 1 + m.mixer_tensors + 1;
    float *saved = malloc(m.table.total * sizeof *saved);
    memcpy(saved, m.params, m.table.total * sizeof *saved);
    for (size_t i = first; i < first + m.ffn_tensors; i++)
        if (m.table.v[i].rows > 1 && m.table.v[i].cols > 1 && m.table.v[i].group != PGROUP_GAIN)
            for (size_t j = 0; j < m.table.v[i].rows * m.table.v[i].cols; j++) m.p[i][j] *= 3;
    decode_logits(&m, tok, 8, deq);
    double err = testlib_max_rel_err(deq, int8, 8 * V, 1e-6, 1e-6, NULL);
    if (!CHECK(err <= 1)) fprintf(stderr, "  %s: the fp32 copy was read (max rel err %g)\n", desc, err);
    // Unregistered, the fp32 GEMM on the dequantized values gives the same logits up to summation order.
    memcpy(m.params, saved, m.table.total * sizeof *saved);
    model_int8_release(&m);
    decode_logits(&m, tok, 8, deq);
    err = testlib_max_rel_err(int8, deq, 8 * V, 1e-4, 1e-5, NULL);
    if (!CHECK(err <= 1)) fprintf(stderr, "  %s: int8 vs fp32 dequantized decode: max rel err %g\n", desc, err);
    free(fp32), free(deq), free(int8), free(saved);
    model_free(&m);
}
static void test_model_gqa(void) { check_model("d2-w32-hd8-kv2-swiglu-v40"); }
static void test_model_untied_mla(void) { check_model("d1-w32-hd8-mla-dc16-untied-v40"); }

int main(void) {
    TEST_RUN(test_quantize_rows);
    TEST_RUN(test_int8_linear);
    TEST_RUN(test_model_gqa);
    TEST_RUN(test_model_untied_mla);
    return testlib_finish("int8");
}
