// Inference engine: KV-cache decode against the training forward (every position, many variants), forked
// sequences against independent full forwards with the prompt stored once, greedy generation against the
// training forward's argmax, and the sampler's filtered distribution and draw statistics (χ² at a fixed seed).
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "infer/decode.h"
#include "infer/generate.h"
#include "infer/sampling.h"
#include "kernels/gemm.h"
#include "model/model.h"
#include "support/testlib.h"

// A model with every parameter random (wo and w_down are zero-initialised in training, which would hide bugs).
static bool random_model(const char *desc, model *m) {
    model_config c;
    if (!CHECK(model_config_parse(desc, 0, &c) == SX_OK)) { fprintf(stderr, "  %s: %s\n", desc, sx_last_error()); return false; }
    if (!CHECK(model_init(m, &c) == SX_OK)) return false;
    rng_state r;
    rng_seed(&r, 7);
    for (size_t i = 0; i < m->table.n; i++) {
        const param_spec *s = &m->table.v[i];
        size_t n = s->rows * s->cols;
        if (s->init == INIT_ONES)
            for (size_t j = 0; j < n; j++) m->p[i][j] = 1.0f + 0.2f * (float)rng_normal(&r);
        else if (strstr(s->name, "router_bias"))
            for (size_t j = 0; j < n; j++) m->p[i][j] = 0.05f * (float)rng_normal(&r);
        else
            rng_fill_normal(&r, m->p[i], n, 1.0f / sqrtf((float)s->cols));
    }
    return true;
}

// Full training forward of tokens (T) -> logits (T, V) (the last token's target is a dummy).
static void full_logits(model *m, const int32_t *tokens, size_t T, float *logits) {
    int32_t *buf = malloc((T + 1) * sizeof *buf);
    memcpy(buf, tokens, T * sizeof *buf);
    buf[T] = 0;
    model_reserve(m, 1, T);
    double loss;
    CHECK(model_loss(m, buf, logits, &loss) == SX_OK);
    free(buf);
}

static void random_tokens(int32_t *t, size_t n, size_t V, uint64_t seed) {
    rng_state r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) t[i] = (int32_t)rng_below(&r, V);
}

// Cache decode (whole prompt in one call, then one token per call) equals the training forward everywhere.
static void check_decode(const char *desc) {
    model m;
    if (!random_model(desc, &m)) return;
    size_t V = m.cfg.vocab, T = 24, split = 9;
    int32_t tok[24];
    random_tokens(tok, T, V, 3);
    float *want = malloc(T * V * sizeof *want), *got = malloc(T * V * sizeof *got);
    full_logits(&m, tok, T, want);
    decoder d;
    CHECK(decoder_init(&d, &m, 64) == SX_OK);
    int s = kvcache_new_seq(&d.cache);
    int seqs[24];
    for (size_t i = 0; i < T; i++) seqs[i] = s;
    CHECK(decoder_forward(&d, split, seqs, tok, got) == SX_OK);
    for (size_t t = split; t < T; t++) CHECK(decoder_forward(&d, 1, &s, tok + t, got + t * V) == SX_OK);
    double err = testlib_max_rel_err(got, want, T * V, 1e-4, 1e-4, NULL);
    if (!CHECK(err <= 1)) fprintf(stderr, "  %s: decode vs forward max rel err %g\n", desc, err);
    CHECK(d.tokens == T && d.flops > 0);
    decoder_free(&d);
    free(want);
    free(got);
    model_free(&m);
}

static void test_decode_gqa(void) { check_decode("d2-w32-hd8-kv2-v40"); }
// Head dims of 16 and 24: the cached attention sums values sixteen at a time, then one by one.
static void test_decode_head_dims(void) {
    check_decode("d2-w64-hd16-kv2-v40");
    check_decode("d1-w48-hd24-swa7-v40");
}
// fp8 MLP products: with a history (random here), every scale is the history's, the same for one row or many.
static void test_decode_fp8(void) { check_decode("d2-w32-hd8-swiglu-fp8-v40"); }
static void test_decode_mha_qknorm_partial_rope(void) { check_decode("d2-w32-hd8-qknorm-ropefrac0.5-swiglu-v40"); }
static void test_decode_gate_window_caps(void) { check_decode("d3-w32-hd8-kv1-gate-swa5-local2-attcap5-softcap8-gelu-untied-v40"); }
static void test_decode_moe(void) {
    check_decode("d2-w32-hd8-kv2-moe4k2-shared1-v40");
    check_decode("d2-w32-hd8-moe4k2-sigmoid-balance=qb-v40");   // selection on logits + bias
}
static void test_decode_mla(void) { check_decode("d2-w32-hd8-mla-dc16-v40"); }
static void test_decode_mla_qlatent_gate_padded(void) { check_decode("d2-w32-hd8-mla-dc12-dcq16-rd4-nope8-gate-swa6-v40"); }
static void test_decode_gqa_xsa_egate(void) { check_decode("d3-w32-hd8-kv2-qknorm-xsa-egate-swa5-local2-v40"); }
static void test_decode_mha_xsa_gate(void) { check_decode("d2-w32-hd8-xsa-gate-v40"); }
static void test_decode_mla_xsa_egate(void) { check_decode("d2-w32-hd8-mla-dc12-dcq16-rd4-nope8-xsa-egate-v40"); }
static void test_decode_mla_xsa(void) { check_decode("d2-w32-hd8-mla-dc16-xsa-v40"); }
static void test_decode_bigram(void) { check_decode("d2-w32-hd8-kv2-bigram31-bsign8-v40"); }
static void test_decode_mla_bigram_nosign(void) { check_decode("d1-w32-hd8-mla-dc16-bigram7-bsign0-v40"); }
static void test_decode_ve(void) { check_decode("d4-w32-hd8-kv2-qknorm-xsa-ve2-swa5-v40"); }
static void test_decode_smear_bigram_ve(void) { check_decode("d2-w32-hd8-kv1-smear-bigram31-ve1-gate-v40"); }
static void test_decode_dcmha(void) { check_decode("d3-w32-hd8-kv2-qknorm-dcmha5-xsa-egate-swa7-local2-v40"); }
static void test_decode_dcmha_long_window(void) { check_decode("d2-w32-hd8-kv1-dcmha40-ve1-gate-v40"); }
static void test_decode_mla_smear(void) { check_decode("d1-w32-hd8-mla-dc16-smear-v40"); }
static void test_decode_gnorm(void) { check_decode("d2-w32-hd8-kv2-gnorm6-swa5-v40"); }
static void test_decode_mla_moe_gnorm(void) { check_decode("d1-w32-hd8-mla-dc16-moe4k2-gnorm3-untied-v40"); }
static void test_decode_mla_nolatnorm(void) { check_decode("d1-w32-hd8-mla-dc16-rd6-nope2-nolatnorm-v40"); }

// T tokens through a new sequence of d (the first 9 in one call, then one per call) -> logits (T, V).
static void decode_rows(decoder *d, const int32_t *tok, size_t T, float *logits) {
    int s = kvcache_new_seq(&d->cache), seqs[9];
    for (size_t i = 0; i < 9; i++) seqs[i] = s;
    CHECK(decoder_forward(d, 9, seqs, tok, logits) == SX_OK);
    for (size_t t = 9; t < T; t++) CHECK(decoder_forward(d, 1, &s, tok + t, logits + t * d->m->cfg.vocab) == SX_OK);
}

// decode_rows with a new decoder; with unpacked, it packs every weight on every product (the path before
// decoder_init packed them once).
static void decode_all(model *m, const int32_t *tok, size_t T, bool unpacked, float *logits) {
    decoder d;
    if (!CHECK(decoder_init(&d, m, 64) == SX_OK)) return;
    CHECK(d.packed.n > 0);
    if (unpacked) d.packed.n = 0;
    decode_rows(&d, tok, T, logits);
    decoder_free(&d);
}

// The weights decoder_init packs give logits equal bit for bit to packing them on every product, on every
// GEMM path this CPU has (the prompt's head product is large enough to run threaded); and the products read
// the panels: scaling the first layer's FFN matrices after decoder_init changes no logit of that decoder.
static void check_packed(const char *desc) {
    model m;
    if (!random_model(desc, &m)) return;
    size_t V = m.cfg.vocab, T = 16;
    int32_t tok[16];
    random_tokens(tok, T, V, 4);
    float *got = malloc(T * V * sizeof *got), *want = malloc(T * V * sizeof *want);
    const char *before = gemm_path_name();
    for (const char *const *p = gemm_supported_paths(); *p; p++) {
        CHECK(gemm_force_path(*p));
        decode_all(&m, tok, T, false, got);
        decode_all(&m, tok, T, true, want);
        if (!CHECK(memcmp(got, want, T * V * sizeof *got) == 0))
            fprintf(stderr, "  %s on %s: packed weights changed the logits (max rel err %g)\n", desc, *p,
                    testlib_max_rel_err(got, want, T * V, 0, 0, NULL));
    }
    gemm_force_path(before);
    decode_all(&m, tok, T, false, want);
    decoder d;
    CHECK(decoder_init(&d, &m, 64) == SX_OK);
    size_t first = m.layer_first[0] + 1 + m.mixer_tensors + 1;
    for (size_t i = first; i < first + m.ffn_tensors; i++)
        for (size_t j = 0; j < m.table.v[i].rows * m.table.v[i].cols; j++) m.p[i][j] *= 3;
    decode_rows(&d, tok, T, got);
    decoder_free(&d);
    CHECK(memcmp(got, want, T * V * sizeof *got) == 0);
    decode_all(&m, tok, T, true, got);   // while a decoder built now sees the scaled weights
    CHECK(testlib_max_rel_err(got, want, T * V, 1e-3, 1e-3, NULL) > 1);
    free(got);
    free(want);
    model_free(&m);
}
static void test_packed_gqa_swiglu(void) { check_packed("d2-w64-hd16-kv2-swiglu-v2048"); }
static void test_packed_moe_mla_untied(void) { check_packed("d1-w32-hd8-mla-dc16-moe4k2-gnorm3-untied-v40"); }

// Three forks of one prompt, continued with different tokens in one batched call each step, equal three
// independent full forwards; the prompt's rows are stored once and released with the last fork. With the
// bigram table, each fork's first token pairs with the prompt's last one (kvcache_token through the parent).
static void check_fork(const char *desc) {
    model m;
    if (!random_model(desc, &m)) return;
    size_t V = m.cfg.vocab, P = 20, G = 6, T = P + G, n = 3;
    int32_t seqtok[3][26];
    random_tokens(seqtok[0], T, V, 5);
    for (size_t i = 1; i < n; i++) {
        memcpy(seqtok[i], seqtok[0], P * sizeof(int32_t));
        random_tokens(seqtok[i] + P, G, V, 10 + i);
    }
    decoder d;
    CHECK(decoder_init(&d, &m, 64) == SX_OK);
    int root = kvcache_new_seq(&d.cache);
    float *last = malloc(V * sizeof *last), *got = malloc(n * G * V * sizeof *got), *want = malloc(T * V * sizeof *want);
    CHECK(decoder_prefill(&d, root, seqtok[0], P, last) == SX_OK);
    size_t prompt_floats = kvcache_floats(&d.cache);
    int kid[3];
    for (size_t i = 0; i < n; i++) kid[i] = kvcache_fork(&d.cache, root);
    kvcache_release(&d.cache, root);
    CHECK(kvcache_floats(&d.cache) == prompt_floats);   // forking copies nothing
    for (size_t g = 0; g < G; g++) {
        int32_t step[3];
        float lg[3 * 64];
        for (size_t i = 0; i < n; i++) step[i] = seqtok[i][P + g];
        CHECK(decoder_forward(&d, n, kid, step, lg) == SX_OK);
        for (size_t i = 0; i < n; i++) memcpy(got + (i * G + g) * V, lg + i * V, V * sizeof *lg);
    }
    // One prompt copy plus three short own segments (16 rows each), not three prompt copies.
    size_t row_floats = d.cache.row * m.cfg.n_layer;
    CHECK(kvcache_floats(&d.cache) == prompt_floats + n * 16 * row_floats);
    for (size_t i = 0; i < n; i++) {
        full_logits(&m, seqtok[i], T, want);
        double err = testlib_max_rel_err(got + i * G * V, want + P * V, G * V, 1e-4, 1e-4, NULL);
        if (!CHECK(err <= 1)) fprintf(stderr, "  fork %zu: max rel err %g\n", i, err);
    }
    CHECK(fabsf(last[0] - want[(P - 1) * V]) < 1e-4f);
    for (size_t i = 0; i < n; i++) kvcache_release(&d.cache, kid[i]);
    CHECK(kvcache_floats(&d.cache) == 0);
    decoder_free(&d);
    free(last);
    free(got);
    free(want);
    model_free(&m);
}

// gen_config.progress: once per decoding step, with the streams still generating after it.
typedef struct {
    size_t calls, last_step, first_live, last_live;
} progress_log;

static void log_progress(void *ctx, size_t step, size_t live) {
    progress_log *p = ctx;
    if (!p->calls++) p->first_live = live;
    p->last_step = step, p->last_live = live;
}

// Greedy generation from a prompt: each generated token is the argmax of the training forward's logits
// at the previous position of the final sequence.
static void test_greedy_equals_forward_argmax(void) {
    model m;
    if (!random_model("d2-w32-hd8-kv2-swiglu-v40", &m)) return;
    size_t V = m.cfg.vocab, P = 5, G = 20, n = 2;
    int32_t prompt[5], full[25];
    random_tokens(prompt, P, V, 9);
    decoder d;
    CHECK(decoder_init(&d, &m, 64) == SX_OK);
    progress_log log = {0};
    gen_config g = {.sampler = {.temperature = 0}, .max_new = G, .progress = log_progress, .progress_ctx = &log};
    rng_state r;
    rng_seed(&r, 1);
    gen_stream *s = NULL;
    CHECK(generate_samples(&d, prompt, P, n, &g, &r, &s) == SX_OK);
    if (!s) { decoder_free(&d); model_free(&m); return; }
    CHECK(log.calls == G && log.last_step == G && log.first_live == n && log.last_live == 0);
    CHECK(s[0].len == G && s[1].len == G && memcmp(s[0].tok, s[1].tok, G * sizeof(int32_t)) == 0);
    memcpy(full, prompt, P * sizeof *full);
    memcpy(full + P, s[0].tok, G * sizeof *full);
    float *logits = malloc((P + G) * V * sizeof *logits);
    full_logits(&m, full, P + G, logits);
    size_t agree = 0;
    for (size_t t = P - 1; t + 1 < P + G; t++) agree += sampler_argmax(logits + t * V, V) == full[t + 1];
    CHECK(agree == G);
    if (agree != G) fprintf(stderr, "  greedy agrees with the forward argmax at %zu of %zu positions\n", agree, G);
    // A stop token ends a stream and is kept.
    gen_streams_free(&d, s, n);
    int32_t stop = full[P + 3];
    gen_config gs = {.sampler = {.temperature = 0}, .max_new = G, .stop = &stop, .n_stop = 1};
    CHECK(generate_samples(&d, prompt, P, 1, &gs, &r, &s) == SX_OK);
    if (s) {
        size_t first = 0;
        while (full[P + first] != stop) first++;
        CHECK(s[0].stopped && s[0].len == first + 1 && s[0].tok[first] == stop);
    }
    gen_streams_free(&d, s, 1);
    CHECK(kvcache_floats(&d.cache) == 0);
    decoder_free(&d);
    free(logits);
    model_free(&m);
}

static void test_sampler_probs(void) {
    const float logits[6] = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f, 3.0f};
    double p[6], want[6], sum = 0;
    unsigned char scratch[6 * SAMPLER_SCRATCH_BYTES];
    sampler_config full = {.temperature = 0.5, .top_p = 1};
    sampler_probs(&full, logits, 6, p, scratch);
    for (int i = 0; i < 6; i++) sum += (want[i] = exp(logits[i] / 0.5));
    for (int i = 0; i < 6; i++) CHECK_CLOSE(p[i], want[i] / sum, 1e-12, 1e-15);
    // top-k 3 keeps {5, 0, 1}; renormalised.
    sampler_config k3 = {.temperature = 1, .top_k = 3, .top_p = 1};
    sampler_probs(&k3, logits, 6, p, scratch);
    double z = exp(3) + exp(2) + exp(1);
    CHECK_CLOSE(p[5], exp(3) / z, 1e-12, 0);
    CHECK_CLOSE(p[0], exp(2) / z, 1e-12, 0);
    CHECK_CLOSE(p[1], exp(1) / z, 1e-12, 0);
    CHECK(p[2] == 0 && p[3] == 0 && p[4] == 0);
    // top-p 0.8 at T=1: sorted masses 0.6095, 0.2242 (sum 0.834 >= 0.8) -> keeps {5, 0}.
    sampler_config p8 = {.temperature = 1, .top_p = 0.8};
    sampler_probs(&p8, logits, 6, p, scratch);
    CHECK_CLOSE(p[5], exp(3) / (exp(3) + exp(2)), 1e-12, 0);
    CHECK(p[1] == 0 && p[2] == 0);
    sampler_config greedy = {0};
    sampler_probs(&greedy, logits, 6, p, scratch);
    CHECK(p[5] == 1 && p[0] == 0);
}

// 20000 draws at a fixed seed: Pearson χ² against the filtered distribution, below the 0.999 quantile.
static void test_sampler_chi2(void) {
    const float logits[8] = {0.3f, -0.2f, 1.1f, 0.0f, 0.7f, -1.5f, 0.9f, 0.2f};
    sampler_config c = {.temperature = 0.8, .top_k = 6, .top_p = 0.95};
    double p[8];
    unsigned char scratch[8 * SAMPLER_SCRATCH_BYTES];
    sampler_probs(&c, logits, 8, p, scratch);
    size_t counts[8] = {0}, N = 20000, kept = 0;
    rng_state r;
    rng_seed(&r, 42);
    for (size_t i = 0; i < N; i++) counts[sampler_draw(&c, logits, 8, &r)]++;
    double chi2 = 0;
    for (int i = 0; i < 8; i++) {
        if (p[i] == 0) { CHECK(counts[i] == 0); continue; }
        kept++;
        double e = p[i] * (double)N;
        chi2 += (counts[i] - e) * (counts[i] - e) / e;
    }
    CHECK(kept == 6);
    // χ²(5 dof) 0.999 quantile = 20.515; a biased sampler (e.g. temperature ignored) lands in the hundreds.
    if (!CHECK(chi2 < 20.515)) fprintf(stderr, "  chi2 = %g\n", chi2);
    // Temperature 1 (wrong distribution) must be rejected by the same statistic.
    double p1[8], bad = 0;
    sampler_config c1 = {.temperature = 1.0, .top_k = 6, .top_p = 0.95};
    sampler_probs(&c1, logits, 8, p1, scratch);
    for (int i = 0; i < 8; i++)
        if (p1[i] > 0) bad += (counts[i] - p1[i] * N) * (counts[i] - p1[i] * N) / (p1[i] * N);
    CHECK(bad > 20.515);
}

static void test_fork_shares_prefill(void) { check_fork("d2-w32-hd8-kv2-v40"); }
static void test_fork_bigram(void) { check_fork("d2-w32-hd8-kv2-bigram31-v40"); }
static void test_fork_smear_ve(void) { check_fork("d2-w32-hd8-kv2-smear-bigram31-ve1-v40"); }
static void test_fork_dcmha(void) { check_fork("d2-w32-hd8-kv2-dcmha6-v40"); }

int main(void) {
    TEST_RUN(test_decode_gqa);
    TEST_RUN(test_decode_head_dims);
    TEST_RUN(test_decode_fp8);
    TEST_RUN(test_decode_mha_qknorm_partial_rope);
    TEST_RUN(test_decode_gate_window_caps);
    TEST_RUN(test_decode_moe);
    TEST_RUN(test_decode_mla);
    TEST_RUN(test_decode_mla_qlatent_gate_padded);
    TEST_RUN(test_decode_mla_nolatnorm);
    TEST_RUN(test_decode_gnorm);
    TEST_RUN(test_decode_mla_moe_gnorm);
    TEST_RUN(test_decode_gqa_xsa_egate);
    TEST_RUN(test_decode_mha_xsa_gate);
    TEST_RUN(test_decode_mla_xsa_egate);
    TEST_RUN(test_decode_mla_xsa);
    TEST_RUN(test_fork_shares_prefill);
    TEST_RUN(test_fork_bigram);
    TEST_RUN(test_fork_smear_ve);
    TEST_RUN(test_fork_dcmha);
    TEST_RUN(test_decode_ve);
    TEST_RUN(test_decode_smear_bigram_ve);
    TEST_RUN(test_decode_mla_smear);
    TEST_RUN(test_decode_dcmha);
    TEST_RUN(test_decode_dcmha_long_window);
    TEST_RUN(test_decode_bigram);
    TEST_RUN(test_decode_mla_bigram_nosign);
    TEST_RUN(test_packed_gqa_swiglu);
    TEST_RUN(test_packed_moe_mla_untied);
    TEST_RUN(test_greedy_equals_forward_argmax);
    TEST_RUN(test_sampler_probs);
    TEST_RUN(test_sampler_chi2);
    return testlib_finish("infer");
}
