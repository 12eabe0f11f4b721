// Architecture variants (docs/MODEL.md "Variants"): finite-difference gradient checks of MLA, MoE, gated (per
// head or elementwise) / XSA / sliding-window / soft-capped attention on tiny configs; golden fixtures from the
// PyTorch reference (tools/ref/make_variant_fixtures.py) for MLA, MoE, gates and XSA; MoE routing statistics, selection-bias update and
// auxiliary loss; descriptor parsing; exact FLOP / parameter / KV-cache accounting.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "core/tensorfile.h"
#include "model/bigram.h"
#include "model/model.h"
#include "optim/optimizer.h"
#include "model/flops.h"
#include "support/modelcheck.h"
#include "support/testlib.h"

static void test_gradcheck_gqa_gate_swa_attcap(void) { modelcheck_gradcheck("d3-w32-hd8-kv2-gate-swa3-local2-attcap4-v50"); }
static void test_gradcheck_gqa_qknorm_gate_swa(void) { modelcheck_gradcheck("d1-w32-hd8-qknorm-gate-swa2-v50"); }
static void test_gradcheck_mla(void) { modelcheck_gradcheck("d2-w32-hd8-mla-dc16-rd4-v50"); }
static void test_gradcheck_mla_qlatent_padded_gate(void) { modelcheck_gradcheck("d2-w32-hd8-mla-dc12-dcq16-rd4-nope6-gate-v50"); }
static void test_gradcheck_mla_nope_nonorm_swa(void) { modelcheck_gradcheck("d1-w32-hd8-mla-dc16-rd0-nolatnorm-swa4-attcap3-v50"); }
static void test_gradcheck_gqa_xsa_egate(void) { modelcheck_gradcheck("d2-w32-hd8-kv2-qknorm-xsa-egate-swa4-v50"); }
static void test_gradcheck_mha_xsa_gate(void) { modelcheck_gradcheck("d2-w32-hd8-xsa-gate-v50"); }
static void test_gradcheck_mla_xsa_egate_padded(void) { modelcheck_gradcheck("d2-w32-hd8-mla-dc16-rd4-nope6-xsa-egate-v50"); }
static void test_gradcheck_mla_xsa_qlatent(void) { modelcheck_gradcheck("d1-w32-hd8-mla-dc12-dcq16-rd2-xsa-v50"); }
static void test_gradcheck_bigram_signs(void) { modelcheck_gradcheck("d2-w32-hd8-kv2-bigram37-bsign16-v50"); }
static void test_gradcheck_bigram_nosign_untied(void) { modelcheck_gradcheck("d1-w32-hd8-bigram13-bsign0-untied-v50"); }
static void test_gradcheck_ve_gqa(void) { modelcheck_gradcheck("d4-w32-hd8-kv2-ve2-v50"); }
static void test_gradcheck_ve_mha_qknorm_xsa_gate(void) { modelcheck_gradcheck("d2-w32-hd8-qknorm-xsa-egate-ve1-v50"); }
static void test_gradcheck_smear_bigram(void) { modelcheck_gradcheck("d2-w32-hd8-kv2-smear-bigram37-untied-v50"); }
static void test_gradcheck_dcmha(void) { modelcheck_gradcheck("d2-w32-hd8-kv2-dcmha3-v50"); }
static void test_gradcheck_dcmha_xsa_egate_ve(void) { modelcheck_gradcheck("d2-w32-hd8-qknorm-dcmha16-xsa-egate-ve1-v50"); }
static void test_gradcheck_moe_softmax_aux(void) { modelcheck_gradcheck("d2-w32-hd8-moe4k2-ew24-aux0.1-v50"); }
static void test_gradcheck_moe_swiglu_shared_sigmoid_bias(void) {
    modelcheck_gradcheck("d2-w32-hd8-swiglu-moe4k2-ew16-shared1-sigmoid-balance=bias-aux0.05-v50");
}
static void test_gradcheck_gnorm(void) { modelcheck_gradcheck("d2-w32-hd8-kv2-gnorm6-v50"); }
static void test_gradcheck_gnorm_mla_moe_untied(void) { modelcheck_gradcheck("d1-w32-hd8-mla-dc16-rd4-moe4k2-ew16-gnorm3-untied-v50"); }
static void test_gradcheck_moe_gelu_top1_aux(void) { modelcheck_gradcheck("d1-w32-hd8-gelu-moe3k1-ew16-aux0.1-v50"); }

static void test_fixture_mla(void) { modelcheck_fixture("mla_qlatent_gate"); }
static void test_fixture_mla_padded(void) { modelcheck_fixture("mla_padded_swa"); }
static void test_fixture_moe_softmax_aux(void) { modelcheck_fixture("moe_softmax_aux_shared"); }
static void test_fixture_moe_sigmoid_bias(void) { modelcheck_fixture("moe_swiglu_sigmoid_bias"); }
static void test_fixture_gqa_gate_swa_attcap(void) { modelcheck_fixture("gqa_gate_swa_attcap"); }
static void test_fixture_gqa_xsa_egate(void) { modelcheck_fixture("gqa_xsa_egate"); }
static void test_fixture_mla_xsa_gate(void) { modelcheck_fixture("mla_xsa_gate"); }
static void test_fixture_bigram_sign(void) { modelcheck_fixture("bigram_sign"); }
static void test_fixture_ve_qknorm_xsa(void) { modelcheck_fixture("ve_qknorm_xsa"); }
static void test_fixture_smear_bigram_ve(void) { modelcheck_fixture("smear_bigram_ve"); }
static void test_fixture_dcmha_xsa_gate(void) { modelcheck_fixture("dcmha_xsa_gate"); }
static void test_fixture_gnorm(void) { modelcheck_fixture("gqa_gnorm_untied"); }

// ---- bigram hash embedding ----
// Rows and sign patterns against values computed in Python (int32 wrapping products, floor modulo; ids large
// enough that 36313·x and 27191·p overflow int32), a sequence's first position on row R−1, and the first
// sign patterns' leading channels.
static void test_bigram_index_and_signs(void) {
    const struct { int32_t x, p; size_t R, S; int32_t row, pat; } cases[] = {
        {100000, 99999, 377280, 8192, 24907, 63}, {16777215, 5, 1001, 8192, 852, 8186}, {59139, 70000, 50, 7, 40, 2},
        {3, 0, 10, 4, 3, 3}, {40000, 123456, 65536, 1, 18437, 0}, {17, -1, 10, 4, 9, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        model_config c = {.bigram_rows = cases[i].R, .bigram_signs = cases[i].S};
        int32_t row, pat;
        bigram_index(&c, 1, &cases[i].x, &cases[i].p, &row, &pat);
        if (!CHECK(row == cases[i].row && pat == cases[i].pat))
            fprintf(stderr, "  case %zu: row %d pat %d, want %d %d\n", i, row, pat, cases[i].row, cases[i].pat);
    }
    const char *want[] = {"+-+---++--++-+--", "--++-++++++-+++-", "++-+---+-+--+++-"};
    const int32_t pats[] = {0, 5, 8191}, rows[] = {0, 0, 0};
    float ones[16], x[3 * 16] = {0};
    for (size_t c = 0; c < 16; c++) ones[c] = 1;
    bigram_forward_ref(3, 16, 8192, rows, pats, ones, x);
    for (size_t i = 0; i < 3; i++)
        for (size_t c = 0; c < 16; c++) CHECK(x[i * 16 + c] == (want[i][c] == '-' ? -1.0f : 1.0f));
    // No signs: the row as it is.
    memset(x, 0, sizeof x);
    bigram_forward_ref(1, 16, 0, rows, pats + 1, ones, x);
    CHECK(x[0] == 1 && x[1] == 1 && x[15] == 1);
}

// The fast forward and backward equal the reference (the last shape takes the threaded path); the backward
// accumulates; half the signs are negative.
static void test_bigram_fast(void) {
    const size_t shapes[][4] = {{1, 1, 3, 5}, {7, 33, 5, 0}, {50, 64, 11, 8192}, {2048, 96, 4001, 16}};
    rng_state r;
    rng_seed(&r, 17);
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        size_t N = shapes[si][0], C = shapes[si][1], R = shapes[si][2], S = shapes[si][3];
        int32_t *row = malloc(N * sizeof *row), *pat = malloc(N * sizeof *pat);
        for (size_t i = 0; i < N; i++) row[i] = (int32_t)rng_below(&r, R), pat[i] = (int32_t)rng_below(&r, S ? S : 1);
        float *E = malloc(R * C * 4), *x1 = malloc(N * C * 4), *x2 = malloc(N * C * 4), *dE1 = malloc(R * C * 4);
        float *dE2 = malloc(R * C * 4);
        rng_fill_normal(&r, E, R * C, 1);
        rng_fill_normal(&r, x1, N * C, 1);
        memcpy(x2, x1, N * C * 4);
        rng_fill_normal(&r, dE1, R * C, 1);
        memcpy(dE2, dE1, R * C * 4);
        bigram_forward_ref(N, C, S, row, pat, E, x1);
        bigram_forward(N, C, S, row, pat, E, x2);
        CHECK(memcmp(x1, x2, N * C * 4) == 0);       // one add per element: bit-identical
        bigram_backward_ref(N, C, S, row, pat, x1, dE1);
        bigram_backward(N, C, S, row, pat, x1, dE2);
        CHECK(memcmp(dE1, dE2, R * C * 4) == 0);     // same row order per element
        free(row), free(pat), free(E), free(x1), free(x2), free(dE1), free(dE2);
    }
    float ones[256], x[64 * 256] = {0};
    int32_t rows[64] = {0}, pats[64];
    for (size_t i = 0; i < 256; i++) ones[i] = 1;
    for (int32_t i = 0; i < 64; i++) pats[i] = i;
    bigram_forward(64, 256, 64, rows, pats, ones, x);
    size_t neg = 0;
    for (size_t i = 0; i < 64 * 256; i++) neg += x[i] < 0;
    CHECK(neg > 64 * 256 * 0.48 && neg < 64 * 256 * 0.52);
}

// ---- MoE routing statistics, selection-bias balancing, auxiliary loss ----
// With one expert forced to win every token (a huge selection bias) it receives every top-1 slot of both
// micro-batches; the JSON reports it; one after-step lowers its bias by the rate and raises the others by it.
static void test_moe_stats_and_bias_update(void) {
    model_config c;
    model m;
    if (!CHECK(model_config_parse("d1-w32-hd8-moe4k1-ew16-balance=bias-brate0.25-v50", 0, &c) == SX_OK)) return;
    if (!CHECK(model_init(&m, &c) == SX_OK)) return;
    CHECK(model_reserve(&m, 2, 7) == SX_OK);
    modelcheck_randomize(&m, 3);
    long ib = param_table_find(&m.table, "l0.router_bias");
    if (!CHECK(ib >= 0 && m.table.v[ib].rows * m.table.v[ib].cols == 4)) { model_free(&m); return; }
    float *bias = m.p[ib];
    bias[0] = 0, bias[1] = 0, bias[2] = 50, bias[3] = 0;   // softmax scores are in (0,1): expert 2 always wins
    int32_t tok[16];
    for (size_t i = 0; i < 16; i++) tok[i] = (int32_t)(i * 7 % 50);
    json_t *stats = model_moe_stats_json(&m);
    CHECK(stats != NULL);
    json_decref(stats);
    model_zero_grad(&m);
    model_loss_and_grad(&m, tok, 1.0f);
    model_loss_and_grad(&m, tok, 1.0f);          // two micro-batches accumulate
    CHECK(m.stats_acc[2] == 28 && m.stats_acc[0] == 0);
    CHECK(m.g[ib][0] == 0 && m.g[ib][2] == 0);   // no gradient into the bias
    model_after_step(&m);
    CHECK(bias[2] == 50 - 0.25f && bias[0] == 0.25f && bias[1] == 0.25f && bias[3] == 0.25f);
    CHECK(m.stats_acc[2] == 0 && m.stats_last[2] == 28);
    json_t *j = model_moe_stats_json(&m);
    json_t *load = json_array_get(json_object_get(j, "moe_load"), 0);
    CHECK(json_array_size(load) == 4);
    CHECK_CLOSE(json_real_value(json_array_get(load, 2)), 1.0, 0, 1e-12);
    CHECK_CLOSE(json_real_value(json_array_get(json_object_get(j, "moe_max_load"), 0)), 4.0, 0, 1e-12);
    json_decref(j);
    model_free(&m);
    // A dense model has no statistics and no auxiliary loss.
    CHECK(model_config_parse("d1-w32-hd8-v50", 0, &c) == SX_OK && model_init(&m, &c) == SX_OK);
    CHECK(model_moe_stats_json(&m) == NULL && model_aux_loss(&m) == 0);
    model_after_step(&m);
    model_free(&m);
}

// Switch loss at perfect balance is coef: with all router weights zero, softmax scores are uniform (1/E),
// so P_e = 1/E and Σ_e f_e = 1 give coef·E·Σ f_e/E = coef, whatever the (tie-broken) routing.
static void test_moe_aux_loss_value(void) {
    model_config c;
    model m;
    if (!CHECK(model_config_parse("d2-w32-hd8-moe4k2-ew16-aux0.03-v50", 0, &c) == SX_OK && model_init(&m, &c) == SX_OK)) return;
    CHECK(model_reserve(&m, 1, 5) == SX_OK);
    modelcheck_randomize(&m, 4);
    for (size_t l = 0; l < 2; l++) {
        char name[32];
        snprintf(name, sizeof name, "l%zu.router", l);
        long i = param_table_find(&m.table, name);
        memset(m.p[i], 0, m.table.v[i].rows * m.table.v[i].cols * sizeof(float));
    }
    int32_t tok[6] = {1, 2, 3, 4, 5, 6};
    double loss;
    CHECK(model_loss(&m, tok, NULL, &loss) == SX_OK);
    CHECK_CLOSE(model_aux_loss(&m), 2 * 0.03, 1e-6, 0);
    model_free(&m);
}

// ---- descriptors ----
static void test_descriptors(void) {
    model_config c;
    const char *bad[] = {"d2-dc16", "d2-mla-kv2", "d2-mla-qknorm", "d2-mla-rd3", "d2-hd8-mla-rd16", "d2-moe4k5",
                         "d2-moe0k0", "d2-ew32", "d2-sigmoid", "d2-balance=bias", "d2-local2", "d2-swa0",
                         "d2-moe4k2x", "d2-aux", "d2-mla-ropefrac0.5", "d2-bsign4", "d2-bigram1", "d2-bigram",
                         "d2-mla-ve1", "d2-ve0", "d3-ve2", "d2-w4-hd4-ve1", "d2-w48-hd4-kv1-ve1", "d2-w8-hd8-smear", "d2-mla-dcmha4",
                         "d2-dcmha0", "d2-dcmha1025",
                         "d2-gnorm0", "d2-gnorm"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (!CHECK(model_config_parse(bad[i], 0, &c) == SX_ERR_ARG)) fprintf(stderr, "  accepted '%s'\n", bad[i]);
        CHECK(strlen(sx_last_error()) > 10);
    }
    CHECK(model_config_parse("d6-mla", 0, &c) == SX_OK && c.mixer == MIXER_MLA && c.mla_dc == 256 &&
          c.mla_rope == 32 && c.mla_nope == 32 && c.mla_dcq == 0 && c.rope_dim == 32 && c.mla_latent_norm);
    CHECK(model_config_parse("d6-moe8k2-shared1-sigmoid-aux0.01-balance=bias", 0, &c) == SX_OK && c.n_expert == 8 &&
          c.top_k == 2 && c.expert_hidden == 1536 && c.n_shared == 1 && c.router_sigmoid && c.bias_balance &&
          fabsf(c.aux_coef - 0.01f) < 1e-9f && fabsf(c.bias_rate - 1e-3f) < 1e-9f);
    CHECK(model_config_parse("d4-swa128-local2-gate-attcap30", 0, &c) == SX_OK && c.window == 128 && c.attn_gate &&
          c.attn_softcap == 30.0f);
    CHECK(model_config_layer_is_local(&c, 0) && !model_config_layer_is_local(&c, 1) &&
          model_config_layer_is_local(&c, 2) && !model_config_layer_is_local(&c, 3));
    json_t *j = model_config_to_json(&c);
    CHECK(json_integer_value(json_object_get(j, "window")) == 128);
    CHECK(json_is_true(json_object_get(j, "attn_gate")) && json_is_false(json_object_get(j, "attn_gate_elementwise")) &&
          json_is_false(json_object_get(j, "xsa")));
    json_decref(j);
    // egate is the gate, elementwise; xsa works with either mixer.
    CHECK(model_config_parse("d2-egate-xsa", 0, &c) == SX_OK && c.attn_gate && c.attn_gate_elem && c.xsa);
    CHECK(model_config_parse("d2-mla-xsa", 0, &c) == SX_OK && c.xsa && !c.attn_gate);
    j = model_config_to_json(&c);
    CHECK(json_is_true(json_object_get(j, "xsa")));
    json_decref(j);
    CHECK(model_config_parse("d2-bigram5000", 0, &c) == SX_OK && c.bigram_rows == 5000 && c.bigram_signs == 8192);
    CHECK(model_config_parse("d2-bigram5000-bsign0", 0, &c) == SX_OK && c.bigram_signs == 0);
    CHECK(model_config_parse("d2", 0, &c) == SX_OK && c.bigram_rows == 0 && c.bigram_signs == 0);
    CHECK(c.value_embeds == 0 && !c.smear);
    CHECK(model_config_parse("d6-v64-ve3-smear", 0, &c) == SX_OK && c.value_embeds == 3 && c.smear && c.vocab == 64);
    CHECK(c.gnorm_rank == 0);
    CHECK(model_config_parse("d2-gnorm16", 0, &c) == SX_OK && c.gnorm_rank == 16);
}

// ---- accounting ----
// The FLOP module's total parameter count equals the model's table for every variant; MoE active = total
// minus the unchosen experts; MLA's KV cache is d_c + d_rope floats per layer; a window caps the keys.
static void test_flops_accounting(void) {
    const char *descs[] = {"d2-w32-hd8-kv2-gate-v50", "d2-w32-hd8-mla-dc16-dcq12-rd4-gate-v50", "d2-w32-hd8-kv2-xsa-egate-v50",
                           "d2-w32-hd8-mla-dc16-rd4-xsa-egate-v50", "d2-w32-hd8-bigram300-untied-v50",
                           "d2-w32-hd8-mla-dc16-rd4-nope6-nolatnorm-v50", "d2-w32-hd8-swiglu-moe6k2-ew16-shared1-balance=bias-v50",
                           "d3-w48-hd16-moe8k1-untied-v50", "d4-w32-hd8-kv2-ve2-smear-bigram30-v50",
                           "d3-w32-hd8-kv2-dcmha4-v50",
                           "d2-w32-hd8-gnorm5-untied-v50"};
    for (size_t i = 0; i < sizeof descs / sizeof *descs; i++) {
        model_config c;
        model m;
        if (!CHECK(model_config_parse(descs[i], 0, &c) == SX_OK && model_init(&m, &c) == SX_OK)) continue;
        model_flops f = model_flops_count(&c, 64);
        if (!CHECK(f.params_total == (double)model_param_count(&m)))
            fprintf(stderr, "  %s: flops total %.0f, table %zu\n", descs[i], f.params_total, model_param_count(&m));
        CHECK(f.params_nonembed == (double)model_param_count_nonembed(&m));
        model_free(&m);
    }
    model_config c;
    CHECK(model_config_parse("d2-w32-hd8-swiglu-moe6k2-ew16-shared1-v50", 0, &c) == SX_OK);
    model_flops f = model_flops_count(&c, 64);
    CHECK(f.params_total - f.params_active == 2.0 * 4 * 3 * 32 * 16);       // 4 unchosen SwiGLU experts per layer
    CHECK(f.params_matmul == 2.0 * (4 * 32 * 32 + (2 + 1) * 3 * 32 * 16 + 6 * 32) + 50 * 32);
    // The elementwise gate's wg is (H·hd, C) instead of (H, C); XSA adds no parameter and no matmul.
    model_config g, e, x;
    CHECK(model_config_parse("d2-w32-hd8-gate-v50", 0, &g) == SX_OK && model_config_parse("d2-w32-hd8-egate-v50", 0, &e) == SX_OK &&
          model_config_parse("d2-w32-hd8-gate-xsa-v50", 0, &x) == SX_OK);
    CHECK(model_flops_count(&e, 64).params_total - model_flops_count(&g, 64).params_total == 2.0 * (32 - 4) * 32);
    CHECK(model_flops_count(&e, 64).params_matmul - model_flops_count(&g, 64).params_matmul == 2.0 * (32 - 4) * 32);
    CHECK(model_flops_count(&x, 64).train_per_token == model_flops_count(&g, 64).train_per_token);
    // The bigram table is an embedding: R·C more parameters in total, none in non-embedding or matmul counts.
    model_config b;
    CHECK(model_config_parse("d2-w32-hd8-gate-bigram300-v50", 0, &b) == SX_OK);
    CHECK(model_flops_count(&b, 64).params_total - model_flops_count(&g, 64).params_total == 300.0 * 32);
    CHECK(model_flops_count(&b, 64).params_nonembed == model_flops_count(&g, 64).params_nonembed);
    CHECK(model_flops_count(&b, 64).train_per_token == model_flops_count(&g, 64).train_per_token);
    // GatedNorm: W_down (R,C) and W_up (C,R) after each of the 2L+1 norms, all matmul weights.
    CHECK(model_config_parse("d2-w32-hd8-gate-gnorm5-v50", 0, &b) == SX_OK);
    CHECK(model_flops_count(&b, 64).params_nonembed - model_flops_count(&g, 64).params_nonembed == 5.0 * 2 * 32 * 5);
    CHECK(model_flops_count(&b, 64).params_matmul - model_flops_count(&g, 64).params_matmul == 5.0 * 2 * 32 * 5);
    // Value embeddings: N tables (V, Hkv·hd) are embeddings; the gate (2N·Hkv, 12) and smear's 12 + 1 weights are
    // non-embedding parameters; neither does matmul work.
    model_config ve;
    CHECK(model_config_parse("d4-w32-hd8-kv2-ve2-v50", 0, &ve) == SX_OK && model_config_parse("d4-w32-hd8-kv2-v50", 0, &b) == SX_OK);
    model_flops fv = model_flops_count(&ve, 64), fb = model_flops_count(&b, 64);
    CHECK(fv.params_total - fb.params_total == 2.0 * 50 * 16 + 2 * 2 * 2 * 12);
    CHECK(fv.params_nonembed - fb.params_nonembed == 2.0 * 2 * 2 * 12);
    CHECK(fv.params_matmul == fb.params_matmul && fv.train_per_token == fb.train_per_token);
    CHECK(model_config_parse("d4-w32-hd8-kv2-smear-v50", 0, &ve) == SX_OK);
    CHECK(model_flops_count(&ve, 64).params_nonembed - fb.params_nonembed == 13);
    CHECK(model_flops_count(&ve, 64).train_per_token == fb.train_per_token);
    // DC-MHA: dc_w1, dc_w2 (H, C) are matmul weights; on the last layer only, W = 4 keys at T = 8 (mean 26/8), per
    // key 2·hd for each of H query heads' scores and of Hkv KV heads' mixed values.
    CHECK(model_config_parse("d4-w32-hd8-kv2-dcmha4-v50", 0, &ve) == SX_OK);
    model_flops fd = model_flops_count(&ve, 8), f8 = model_flops_count(&b, 8);
    CHECK(fd.params_matmul - f8.params_matmul == 2.0 * 4 * 32 && fd.params_nonembed - f8.params_nonembed == 2.0 * 4 * 32);
    CHECK_CLOSE(fd.fwd_attention_per_token - f8.fwd_attention_per_token, 26.0 / 8 * 2 * 8 * (4 + 2), 1e-12, 0);
    CHECK(model_flops_decode_token(&ve, 100) - model_flops_decode_token(&b, 100) == 2.0 * 4 * 32 * 2 + 4.0 * 2 * 8 * 6);
    CHECK(model_config_parse("d3-w32-hd8-mla-dc16-rd4-v50", 0, &c) == SX_OK);
    CHECK(model_flops_count(&c, 64).kv_cache_bytes_per_token == 3.0 * (16 + 4) * 4);
    // Window 4 on both layers of d2 (no global layer), T = 8: mean keys (1+2+3+4 + 4·4)/8 = 26/8; with local1
    // every layer is global: (T+1)/2 = 4.5. Per head and key 2·(hd + hd) FLOPs.
    CHECK(model_config_parse("d2-w32-hd8-swa4-v50", 0, &c) == SX_OK);
    CHECK_CLOSE(model_flops_count(&c, 8).fwd_attention_per_token, 2 * 4 * (26.0 / 8) * 2 * 16, 1e-12, 0);
    CHECK(model_config_parse("d2-w32-hd8-swa4-local1-v50", 0, &c) == SX_OK);
    CHECK_CLOSE(model_flops_count(&c, 8).fwd_attention_per_token, 2 * 4 * 4.5 * 2 * 16, 1e-12, 0);
}

int main(void) {
    TEST_RUN(test_moe_stats_and_bias_update);
    TEST_RUN(test_moe_aux_loss_value);
    TEST_RUN(test_descriptors);
    TEST_RUN(test_flops_accounting);
    TEST_RUN(test_gradcheck_gqa_gate_swa_attcap);
    TEST_RUN(test_gradcheck_gqa_qknorm_gate_swa);
    TEST_RUN(test_gradcheck_mla);
    TEST_RUN(test_gradcheck_mla_qlatent_padded_gate);
    TEST_RUN(test_gradcheck_mla_nope_nonorm_swa);
    TEST_RUN(test_gradcheck_gqa_xsa_egate);
    TEST_RUN(test_gradcheck_mha_xsa_gate);
    TEST_RUN(test_gradcheck_mla_xsa_egate_padded);
    TEST_RUN(test_gradcheck_mla_xsa_qlatent);
    TEST_RUN(test_gradcheck_bigram_signs);
    TEST_RUN(test_gradcheck_bigram_nosign_untied);
    TEST_RUN(test_gradcheck_ve_gqa);
    TEST_RUN(test_gradcheck_ve_mha_qknorm_xsa_gate);
    TEST_RUN(test_gradcheck_smear_bigram);
    TEST_RUN(test_gradcheck_dcmha);
    TEST_RUN(test_gradcheck_dcmha_xsa_egate_ve);
    TEST_RUN(test_gradcheck_moe_softmax_aux);
    TEST_RUN(test_gradcheck_moe_swiglu_shared_sigmoid_bias);
    TEST_RUN(test_gradcheck_moe_gelu_top1_aux);
    TEST_RUN(test_gradcheck_gnorm);
    TEST_RUN(test_gradcheck_gnorm_mla_moe_untied);
    TEST_RUN(test_fixture_mla);
    TEST_RUN(test_fixture_mla_padded);
    TEST_RUN(test_fixture_moe_softmax_aux);
    TEST_RUN(test_fixture_moe_sigmoid_bias);
    TEST_RUN(test_fixture_gqa_gate_swa_attcap);
    TEST_RUN(test_fixture_gqa_xsa_egate);
    TEST_RUN(test_fixture_mla_xsa_gate);
    TEST_RUN(test_fixture_bigram_sign);
    TEST_RUN(test_fixture_ve_qknorm_xsa);
    TEST_RUN(test_fixture_smear_bigram_ve);
    TEST_RUN(test_fixture_dcmha_xsa_gate);
    TEST_RUN(test_fixture_gnorm);
    TEST_RUN(test_bigram_index_and_signs);
    TEST_RUN(test_bigram_fast);
    return testlib_finish("variants");
}
