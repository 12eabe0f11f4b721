// Speculative decoding: the decoder's multi-token step against token-by-token decoding, KV rollback against a
// fresh decoder, greedy output against plain greedy generation (byte-identical, any k, at the context limit
// and with stop tokens, drawing no random numbers), greedy verification against the general rule, and the sampled distribution against the target's by Pearson χ² (fixed seeds):
// the verification rule alone on fixed distributions, where two wrong rules must fail the same test, and
// whole generations with a tiny model pair, on the joint law of the first two tokens.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "infer/decode.h"
#include "infer/generate.h"
#include "infer/speculative.h"
#include "model/model.h"
#include "support/modelcheck.h"
#include "support/testlib.h"

static bool make_model(const char *desc, uint64_t seed, model *m) {
    model_config c;
    if (!CHECK(model_config_parse(desc, 0, &c) == SX_OK) || !CHECK(model_init(m, &c) == SX_OK)) return false;
    modelcheck_randomize(m, seed);
    return true;
}

static int *same_seq(int seq, size_t n) {
    int *s = malloc(n * sizeof *s);
    for (size_t i = 0; i < n; i++) s[i] = seq;
    return s;
}

// After a prefix, k tokens in one forward give the logits that k one-token forwards give.
static void test_multi_token_step(void) {
    model m;
    if (!make_model("d2-w32-hd8-kv2-smear-bigram31-ve1-v40", 3, &m)) return;
    size_t V = m.cfg.vocab, P = 6, K = 5;
    const int32_t tok[11] = {3, 17, 9, 0, 33, 21, 5, 5, 38, 12, 7};
    decoder a, b;
    CHECK(decoder_init(&a, &m, 32) == SX_OK && decoder_init(&b, &m, 32) == SX_OK);
    int sa = kvcache_new_seq(&a.cache), sb = kvcache_new_seq(&b.cache), *seqs = same_seq(sa, P + K);
    float *one = malloc(K * V * sizeof *one), *many = malloc(K * V * sizeof *many);
    CHECK(decoder_forward(&a, P, seqs, tok, NULL) == SX_OK && decoder_forward(&b, P, seqs, tok, NULL) == SX_OK);
    CHECK(decoder_forward(&a, K, seqs, tok + P, many) == SX_OK);
    for (size_t i = 0; i < K; i++) CHECK(decoder_forward(&b, 1, &sb, tok + P + i, one + i * V) == SX_OK);
    double err = testlib_max_rel_err(many, one, K * V, 1e-5, 1e-6, NULL);
    if (!CHECK(err <= 1)) fprintf(stderr, "  multi-token step vs one at a time: max rel err %g\n", err);
    free(one), free(many), free(seqs);
    decoder_free(&a), decoder_free(&b);
    model_free(&m);
}

// Appending, truncating and appending other tokens gives what a decoder that never saw the rejected ones
// gives (positions, tokens looked back at by the bigram embedding and smear, attention rows).
static void check_rollback(const char *desc) {
    model m;
    if (!make_model(desc, 5, &m)) return;
    size_t V = m.cfg.vocab;
    const int32_t prefix[6] = {1, 2, 30, 4, 11, 7}, rejected[4] = {8, 9, 10, 39}, kept[3] = {25, 2, 19};
    decoder a, b;
    CHECK(decoder_init(&a, &m, 32) == SX_OK && decoder_init(&b, &m, 32) == SX_OK);
    int sa = kvcache_new_seq(&a.cache), sb = kvcache_new_seq(&b.cache), *seqs = same_seq(sa, 6);
    float *got = malloc(3 * V * sizeof *got), *want = malloc(3 * V * sizeof *want);
    CHECK(decoder_forward(&a, 6, seqs, prefix, NULL) == SX_OK && decoder_forward(&a, 4, seqs, rejected, NULL) == SX_OK);
    CHECK(kvcache_len(&a.cache, sa) == 10);
    kvcache_truncate(&a.cache, sa, 6);
    CHECK(kvcache_len(&a.cache, sa) == 6);
    CHECK(decoder_forward(&a, 3, seqs, kept, got) == SX_OK);
    CHECK(kvcache_len(&a.cache, sa) == 9 && kvcache_token(&a.cache, sa, 6) == 25 && kvcache_token(&a.cache, sa, 8) == 19);
    CHECK(decoder_forward(&b, 6, seqs, prefix, NULL) == SX_OK && decoder_forward(&b, 3, seqs, kept, want) == SX_OK);
    (void)sb;
    size_t worst = 0;
    double err = testlib_max_rel_err(got, want, 3 * V, 1e-6, 1e-7, &worst);
    if (!CHECK(err <= 1)) fprintf(stderr, "  %s: after rollback max rel err %g at %zu\n", desc, err, worst);
    free(got), free(want), free(seqs);
    decoder_free(&a), decoder_free(&b);
    model_free(&m);
}
static void test_rollback(void) { check_rollback("d2-w32-hd8-kv2-v40"); }
static void test_rollback_lookback(void) { check_rollback("d2-w32-hd8-kv1-smear-bigram31-ve1-gate-v40"); }
static void test_rollback_mla_dcmha(void) {
    check_rollback("d1-w32-hd8-mla-dc16-v40");
    check_rollback("d2-w32-hd8-kv2-dcmha6-v40");
}

// Greedy speculative output equals plain greedy generation for every k, with a draft that agrees often (the
// target's weights plus 1% noise) and one that rarely does (another model); also at the context limit and
// with a stop token.
static void test_greedy_identical(void) {
    model target, close, other;
    if (!make_model("d2-w32-hd8-kv2-v40", 11, &target) || !make_model("d2-w32-hd8-kv2-v40", 11, &close) ||
        !make_model("d1-w16-hd8-v40", 12, &other))
        return;
    rng_state noise;
    rng_seed(&noise, 99);
    for (size_t i = 0; i < close.table.n; i++)
        for (size_t j = 0; j < close.table.v[i].rows * close.table.v[i].cols; j++)
            close.p[i][j] += 0.01f * (float)rng_normal(&noise);
    const int32_t prompt[4] = {5, 1, 33, 20};
    const size_t G = 40, ctx_small = 19;
    for (int limit = 0; limit < 3; limit++) {   // a long context, a short one, one the prompt fills
        size_t ctx = limit == 0 ? 64 : limit == 1 ? ctx_small : 4;
        decoder dt, dc, dother;
        CHECK(decoder_init(&dt, &target, ctx) == SX_OK && decoder_init(&dc, &close, 64) == SX_OK &&
              decoder_init(&dother, &other, 64) == SX_OK);
        gen_config g = {.sampler = {.temperature = 0}, .max_new = G};
        rng_state r;
        rng_seed(&r, 1);
        gen_stream *plain = NULL;
        CHECK(generate_samples(&dt, prompt, 4, 1, &g, &r, &plain) == SX_OK);
        if (!plain) return;
        CHECK(plain->len == (limit == 0 ? G : limit == 1 ? ctx_small - 4 : 1));
        for (int which = 0; which < 2; which++) {
            for (size_t k = 1; k <= 7; k += 2) {
                spec_config sc = {.gen = g, .k = k};
                spec_result res;
                size_t held = kvcache_floats(&dt.cache);
                rng_state before = r;
                CHECK(spec_generate(&dt, which ? &dother : &dc, prompt, 4, &sc, &r, &res) == SX_OK);
                // Greedy draws nothing, as plain greedy decoding: a sampled stream after it sees the same draws.
                CHECK(memcmp(&before, &r, sizeof r) == 0);
                bool same = res.len == plain->len && memcmp(res.tok, plain->tok, res.len * sizeof *res.tok) == 0;
                if (!CHECK(same)) fprintf(stderr, "  k %zu draft %d ctx %zu: %zu tokens, plain %zu\n", k, which, ctx, res.len, plain->len);
                CHECK(res.full == (limit > 0) && res.full == plain->full && !res.stopped);
                CHECK(res.accepted <= res.proposed && res.rounds >= 1 && res.rejected <= res.rounds);
                double rate = (double)res.accepted / (double)(res.accepted + res.rejected);
                // The near-copy's examined proposals are kept often but not always (0.70–0.74 for k = 1..7).
                if (!limit && which == 0 && !CHECK(rate > 0.3 && rate < 0.9))
                    fprintf(stderr, "  near-copy draft: acceptance %g\n", rate);
                spec_result_free(&res);
                CHECK(kvcache_floats(&dt.cache) == held);   // the speculative sequence was released
            }
        }
        // A stop token: kept, and the generation ends there, as in plain generation.
        if (plain->len > 9) {
            int32_t stop = plain->tok[9];
            size_t first = 0;
            while (plain->tok[first] != stop) first++;
            spec_config ss = {.gen = {.sampler = {.temperature = 0}, .max_new = G, .stop = &stop, .n_stop = 1}, .k = 4};
            spec_result res;
            CHECK(spec_generate(&dt, &dc, prompt, 4, &ss, &r, &res) == SX_OK);
            CHECK(res.stopped && res.len == first + 1 && memcmp(res.tok, plain->tok, res.len * sizeof *res.tok) == 0);
            spec_result_free(&res);
        }
        gen_streams_free(&dt, plain, 1);
        decoder_free(&dt), decoder_free(&dc), decoder_free(&dother);
    }
    // A draft with another vocabulary is refused.
    model v41;
    if (make_model("d1-w16-hd8-v41", 1, &v41)) {
        decoder dt, dv;
        CHECK(decoder_init(&dt, &target, 16) == SX_OK && decoder_init(&dv, &v41, 16) == SX_OK);
        spec_config sc = {.gen = {.max_new = 4}, .k = 2};
        spec_result res;
        rng_state r;
        rng_seed(&r, 1);
        CHECK(spec_generate(&dt, &dv, prompt, 4, &sc, &r, &res) == SX_ERR_MISMATCH);
        decoder_free(&dt), decoder_free(&dv);
        model_free(&v41);
    }
    model_free(&target), model_free(&close), model_free(&other);
}

static void test_chi2_sf(void) {   // reference quantiles (e.g. scipy.stats.chi2.ppf)
    CHECK_CLOSE(testlib_chi2_sf(3.841459, 1), 0.05, 1e-5, 0);
    CHECK_CLOSE(testlib_chi2_sf(20.515006, 5), 0.001, 1e-5, 0);
    CHECK_CLOSE(testlib_chi2_sf(18.307038, 10), 0.05, 1e-5, 0);
    CHECK_CLOSE(testlib_chi2_sf(124.342113, 100), 0.05, 1e-5, 0);
    CHECK_CLOSE(testlib_chi2_sf(2.0, 2), exp(-1.0), 1e-12, 0);   // dof 2: e^{−x/2}
}

typedef size_t (*verify_fn)(size_t k, size_t V, const double *p, const double *q, const int32_t *x, rng_state *rng,
                            double *resid, int32_t *next);

// Two classic mistakes: a rejected proposal replaced by a draw from p itself (not max(0, p − q)), and every
// proposal kept.
static size_t wrong_resample_from_p(size_t k, size_t V, const double *p, const double *q, const int32_t *x,
                                    rng_state *rng, double *resid, int32_t *next) {
    (void)resid;
    for (size_t i = 0; i < k; i++) {
        if (rng_uniform(rng) * q[i * V + x[i]] < p[i * V + x[i]]) continue;
        *next = sampler_pick(p + i * V, V, rng_uniform(rng));
        return i;
    }
    *next = sampler_pick(p + k * V, V, rng_uniform(rng));
    return k;
}
static size_t wrong_accept_all(size_t k, size_t V, const double *p, const double *q, const int32_t *x,
                               rng_state *rng, double *resid, int32_t *next) {
    (void)q, (void)x, (void)resid;
    *next = sampler_pick(p + k * V, V, rng_uniform(rng));
    return k;
}

// The verification rule on fixed distributions (k = 3, V = 6, p and q far apart, top-k zeros in both): the
// first emitted token must follow p_1 and the second (when the first was a kept proposal) p_2. Returns the
// smaller of the two p-values.
static double verify_pvalue(verify_fn verify) {
    enum { V = 6, K = 3 };
    const double p[(K + 1) * V] = {0.30, 0.05, 0.25, 0.00, 0.30, 0.10,  0.10, 0.40, 0.10, 0.20, 0.00, 0.20,
                                   0.05, 0.05, 0.50, 0.15, 0.15, 0.10,  0.20, 0.20, 0.20, 0.20, 0.10, 0.10};
    const double q[K * V] = {0.05, 0.40, 0.10, 0.25, 0.20, 0.00,  0.30, 0.10, 0.30, 0.10, 0.20, 0.00,
                             0.20, 0.20, 0.20, 0.20, 0.10, 0.10};
    size_t first[V] = {0}, second[V] = {0};
    double resid[V];
    rng_state r;
    rng_seed(&r, 2024);
    for (size_t draw = 0; draw < 40000; draw++) {
        int32_t x[K + 1], next;
        for (size_t i = 0; i < K; i++) x[i] = sampler_pick(q + i * V, V, rng_uniform(&r));
        size_t n = verify(K, V, p, q, x, &r, resid, &next);
        first[n == 0 ? next : x[0]]++;
        if (n >= 1) second[n == 1 ? next : x[1]]++;
    }
    double p1 = testlib_chi2_pvalue(first, p, V, NULL), p2 = testlib_chi2_pvalue(second, p + V, V, NULL);
    return p1 < p2 ? p1 : p2;
}

static void test_verify_distribution(void) {
    double ok = verify_pvalue(spec_verify), bad_p = verify_pvalue(wrong_resample_from_p),
           bad_all = verify_pvalue(wrong_accept_all);
    if (!CHECK(ok > 1e-3)) fprintf(stderr, "  exact rule: p-value %g\n", ok);
    if (!CHECK(bad_p < 1e-9)) fprintf(stderr, "  residual drawn from p: p-value %g\n", bad_p);
    if (!CHECK(bad_all < 1e-9)) fprintf(stderr, "  every proposal kept: p-value %g\n", bad_all);
}

// spec_verify_greedy against the general rule on the one-hot laws of temperature 0 (sampler_probs), with
// proposals that are the target's argmax at random: the same count kept and the same next token.
static void test_verify_greedy(void) {
    enum { V = 7, K = 4 };
    const sampler_config greedy = {.temperature = 0};
    unsigned char scratch[V * SAMPLER_SCRATCH_BYTES];
    rng_state r;
    rng_seed(&r, 5);
    size_t kept_counts[K + 1] = {0};
    for (size_t trial = 0; trial < 2000; trial++) {
        size_t k = 1 + rng_below(&r, K);
        float logits[(K + 1) * V], draft[K * V];
        rng_fill_normal(&r, logits, (k + 1) * V, 1);
        rng_fill_normal(&r, draft, k * V, 1);
        double p[(K + 1) * V], q[K * V], resid[V];
        int32_t x[K], want_next, next;
        for (size_t i = 0; i < k; i++) {
            if (rng_uniform(&r) < 0.7) memcpy(draft + i * V, logits + i * V, sizeof(float) * V);   // agree
            sampler_probs(&greedy, draft + i * V, V, q + i * V, scratch);
            x[i] = sampler_argmax(draft + i * V, V);
        }
        for (size_t i = 0; i <= k; i++) sampler_probs(&greedy, logits + i * V, V, p + i * V, scratch);
        size_t want = spec_verify(k, V, p, q, x, &r, resid, &want_next);
        size_t n = spec_verify_greedy(k, V, logits, x, &next);
        if (!CHECK(n == want && next == want_next)) fprintf(stderr, "  k %zu: kept %zu next %d, want %zu %d\n", k, n, next, want, want_next);
        kept_counts[n]++;
    }
    for (size_t n = 0; n <= K; n++) CHECK(kept_counts[n] > 0);   // every outcome was exercised
}

// Whole generations with a tiny model pair (vocabulary 10, temperature 1.3, top-k 8): the joint law of the
// first two generated tokens over 20000 generations against the target's exact one, p(a)·p(b | a), from
// plain decoding.
static void test_sampled_distribution(void) {
    model target, draft;
    if (!make_model("d2-w16-hd8-kv2-v10", 21, &target) || !make_model("d1-w16-hd8-v10", 22, &draft)) return;
    enum { V = 10 };
    const int32_t prompt[3] = {4, 7, 1};
    sampler_config sc = {.temperature = 1.3, .top_k = 8, .top_p = 1};
    decoder dt, dd;
    CHECK(decoder_init(&dt, &target, 16) == SX_OK && decoder_init(&dd, &draft, 16) == SX_OK);
    double joint[V * V], pa[V], pb[V];
    unsigned char scratch[V * SAMPLER_SCRATCH_BYTES];
    float logits[V];
    int root = kvcache_new_seq(&dt.cache);
    CHECK(decoder_prefill(&dt, root, prompt, 3, logits) == SX_OK);
    sampler_probs(&sc, logits, V, pa, scratch);
    for (int32_t a = 0; a < V; a++) {
        int s = kvcache_fork(&dt.cache, root);
        CHECK(decoder_forward(&dt, 1, &s, &a, logits) == SX_OK);
        sampler_probs(&sc, logits, V, pb, scratch);
        for (int b = 0; b < V; b++) joint[a * V + b] = pa[a] * pb[b];
        kvcache_release(&dt.cache, s);
    }
    kvcache_release(&dt.cache, root);
    size_t counts[V * V] = {0}, rejected = 0, accepted = 0;
    spec_config c = {.gen = {.sampler = sc, .max_new = 3}, .k = 3};
    rng_state r;
    rng_seed(&r, 7);
    for (size_t draw = 0; draw < 20000; draw++) {
        spec_result res;
        if (!CHECK(spec_generate(&dt, &dd, prompt, 3, &c, &r, &res) == SX_OK && res.len == 3)) break;
        counts[res.tok[0] * V + res.tok[1]]++;
        rejected += res.rejected, accepted += res.accepted;
        spec_result_free(&res);
    }
    size_t dof;
    double pv = testlib_chi2_pvalue(counts, joint, V * V, &dof);
    if (!CHECK(pv > 1e-3)) fprintf(stderr, "  joint of two tokens: p-value %g (%zu dof)\n", pv, dof);
    double rate = (double)accepted / (double)(accepted + rejected);   // both accepting and rejecting paths were exercised
    if (!CHECK(rate > 0.1 && rate < 0.95)) fprintf(stderr, "  acceptance %g\n", rate);
    decoder_free(&dt), decoder_free(&dd);
    model_free(&target), model_free(&draft);
}

int main(void) {
    TEST_RUN(test_chi2_sf);
    TEST_RUN(test_multi_token_step);
    TEST_RUN(test_rollback);
    TEST_RUN(test_rollback_lookback);
    TEST_RUN(test_rollback_mla_dcmha);
    TEST_RUN(test_greedy_identical);
    TEST_RUN(test_verify_greedy);
    TEST_RUN(test_verify_distribution);
    TEST_RUN(test_sampled_distribution);
    return testlib_finish("speculative");
}
