// Test-time compute: the unbiased pass@k estimator against exhaustive subset enumeration, the coverage-law
// fit, the arithmetic task's generator and exact checkers, the selectors, compute-optimal selection with
// cross-validation, verifier documents, and a beam search run that frees every cache row it used.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "infer/ttc.h"
#include "infer/verifier.h"
#include "support/testlib.h"

// Fraction of all size-k subsets of n samples (the first c correct) that contain a correct one.
static double pass_exhaustive(size_t n, size_t c, size_t k) {
    size_t hit = 0, total = 0;
    for (unsigned mask = 0; mask < (1u << n); mask++) {
        if ((size_t)__builtin_popcount(mask) != k) continue;
        total++;
        hit += (mask & ((1u << c) - 1)) != 0;
    }
    return (double)hit / (double)total;
}

static void test_pass_at_k(void) {
    for (size_t n = 1; n <= 12; n++)
        for (size_t c = 0; c <= n; c++)
            for (size_t k = 1; k <= n; k++) {
                double want = pass_exhaustive(n, c, k);
                CHECK_CLOSE(ttc_pass_at_k(n, c, k), want, 1e-12, 1e-12);
                CHECK_CLOSE(ttc_pass_at_k_lgamma(n, c, k), want, 1e-9, 1e-9);
            }
    CHECK_CLOSE(ttc_pass_at_k(6, 2, 3), 0.8, 1e-12, 0);   // 1 − C(4,3)/C(6,3) = 1 − 4/20
}

static void test_coverage_fit(void) {
    double k[7], c[7], a, b;
    for (int i = 0; i < 7; i++) k[i] = pow(2, i), c[i] = exp(-1.3 * pow(k[i], -0.4));
    CHECK(ttc_fit_coverage(k, c, 7, &a, &b) == SX_OK);
    CHECK_CLOSE(a, -1.3, 1e-9, 0);
    CHECK_CLOSE(b, -0.4, 1e-9, 0);
    double one[2] = {1, 1};
    CHECK(ttc_fit_coverage(k, one, 2, &a, &b) != SX_OK);
}

static void test_arith_checkers(void) {
    char out[ARITH_EXPR_MAX];
    CHECK(arith_reduce("12+3*4-5", out, sizeof out) && !strcmp(out, "12+12-5"));
    CHECK(arith_reduce("3-10", out, sizeof out) && !strcmp(out, "-7"));
    CHECK(arith_reduce("-7+4*2", out, sizeof out) && !strcmp(out, "-7+8"));
    CHECK(!arith_reduce("42", out, sizeof out) && !arith_reduce("4++2", out, sizeof out));
    long v;
    CHECK(arith_eval("2*3*4-30+1", &v) && v == -5);
    CHECK(!arith_eval("07+1", &v) && !arith_eval("", &v) && !arith_eval("1-", &v));
    arith_problem p = {.expr = "12+3*4-5", .answer = 19, .n_ops = 3, .digits = 2};
    char sol[256];
    arith_solution(&p, sol, sizeof sol);
    CHECK(!strcmp(sol, "12+12-5\n24-5\n19\n"));
    CHECK(arith_check_final(&p, sol));
    bool ok[8];
    CHECK(arith_check_steps(&p, sol, ok, 8) == 3 && ok[0] && ok[1] && ok[2]);
    // A wrong step: later steps are judged against what was written.
    CHECK(arith_check_steps(&p, "12+12-5\n25-5\n20\n", ok, 8) == 3 && ok[0] && !ok[1] && ok[2]);
    CHECK(!arith_check_final(&p, "12+12-5\n25-5\n20\n"));
    CHECK(arith_check_steps(&p, "12+15-5\n27-5\n", ok, 8) == 2 && !ok[0] && ok[1]);
    CHECK(!arith_check_final(&p, "12+12-5\n24-5\n19"));   // incomplete last line
    // Generated problems: the requested difficulty, a solution of n_ops lines ending in the answer.
    arith_problem set[200];
    arith_split(5, 200, 1, 6, 2, set);
    int hist[7] = {0};
    for (int i = 0; i < 200; i++) {
        hist[set[i].n_ops]++;
        arith_solution(&set[i], sol, sizeof sol);
        size_t lines = arith_check_steps(&set[i], sol, ok, 8);
        CHECK(lines == (size_t)set[i].n_ops && arith_check_final(&set[i], sol));
        CHECK(arith_eval(set[i].expr, &v) && v == set[i].answer);
    }
    for (int o = 1; o <= 6; o++) CHECK(hist[o] > 15);
    int32_t tok[ARITH_EXPR_MAX + 2];
    size_t np = arith_prompt_tokens(&p, tok, ARITH_EXPR_MAX + 2);
    CHECK(np == 10 && tok[0] == ARITH_EOT && tok[1] == '1' && tok[9] == '\n');
}

static void test_selectors(void) {
    long ans[6] = {5, 7, 7, 5, 9, 0};
    bool has[6] = {true, true, true, true, true, false}, cor[6] = {false, true, true, false, false, false};
    double score[6] = {0.9, 0.3, 0.35, 0.2, 0.5, 1.0};
    ttc_pool p = {.n = 6, .answer = ans, .has_answer = has, .correct = cor, .score = score};
    size_t all[6] = {0, 1, 2, 3, 4, 5};
    CHECK(ttc_select(&p, all, 6, SEL_MAJORITY) == 0);        // 5 and 7 tie at two votes: first seen wins
    CHECK(ttc_select(&p, all, 6, SEL_BEST_OF_N) == 0);       // 0.9 (sample 5 has no answer)
    CHECK(ttc_select(&p, all, 6, SEL_WEIGHTED) == 0);        // 5: 1.1, 7: 0.65, 9: 0.5
    size_t sub[3] = {1, 2, 4};
    CHECK(ttc_select(&p, sub, 3, SEL_MAJORITY) == 1 && ttc_select(&p, sub, 3, SEL_BEST_OF_N) == 4);
    CHECK(ttc_select(&p, sub, 3, SEL_WEIGHTED) == 1);
    size_t none[1] = {5};
    CHECK(ttc_select(&p, none, 1, SEL_MAJORITY) == -1);
    rng_state r;
    rng_seed(&r, 1);
    // k = 1: every selector returns the single sample: accuracy → 2/6 with many trials.
    CHECK_CLOSE(ttc_selector_accuracy(&p, 1, SEL_MAJORITY, 20000, &r), 2.0 / 6, 0, 0.015);
    CHECK(ttc_selector_accuracy(&p, 6, SEL_WEIGHTED, 5, &r) == 0.0);
}

static void test_compute_optimal(void) {
    // 8 problems, 2 strategies, 2 bins: strategy 1 is better in bin 0, strategy 0 in bin 1.
    double acc[16] = {0, 1, 0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0};
    size_t bin[8] = {0, 0, 0, 0, 1, 1, 1, 1}, choice[2];
    CHECK_CLOSE(ttc_compute_optimal(acc, bin, 8, 2, 2, choice), 1.0, 0, 1e-12);
    CHECK(choice[0] == 1 && choice[1] == 0);
    // A strategy that wins only on the even fold does not transfer: CV accuracy 0.5, not 1.
    double acc2[8] = {1, 0, 0, 1, 1, 0, 0, 1};
    size_t one[4] = {0, 0, 0, 0};
    CHECK_CLOSE(ttc_compute_optimal(acc2, one, 4, 2, 1, NULL), 0.0, 0, 1e-12);
    double d[6] = {0.5, 0.1, 0.9, 0.3, 0.7, 0.2};
    size_t b[6];
    ttc_bin_quantiles(d, 6, 3, b);
    CHECK(b[1] == 0 && b[5] == 0 && b[3] == 1 && b[0] == 1 && b[4] == 2 && b[2] == 2);
    CHECK(verifier_aggregate((double[]){0.9, 0.5, 0.8}, 3, AGG_MIN) == 0.5);
    CHECK_CLOSE(verifier_aggregate((double[]){0.9, 0.5, 0.8}, 3, AGG_PROD), 0.36, 1e-12, 0);
    CHECK(verifier_aggregate((double[]){0.9, 0.5, 0.8}, 3, AGG_LAST) == 0.8);
}

static bool random_model(const char *desc, uint64_t seed, model *m) {
    model_config c;
    if (!CHECK(model_config_parse(desc, ARITH_VOCAB, &c) == SX_OK && model_init(m, &c) == SX_OK)) return false;
    model_init_weights(m, seed);
    return true;
}

// Beam search with random (untrained) policy and verifier: runs to completion, counts tokens and FLOPs, and
// releases every KV row; the verifier documents carry the right labels.
static void test_beam_search_and_docs(void) {
    model pm, vm;
    if (!random_model("d1-w32-hd8", 1, &pm) || !random_model("d1-w32-hd8", 2, &vm)) return;
    decoder pd, vd;
    CHECK(decoder_init(&pd, &pm, 256) == SX_OK && decoder_init(&vd, &vm, 256) == SX_OK);
    arith_problem p = {.expr = "2+3*4", .answer = 14, .n_ops = 2, .digits = 1};
    beam_config c = {.n_beams = 8, .width = 4, .max_rounds = 3, .max_step_tokens = 12, .temperature = 1, .agg = AGG_MIN};
    rng_state r;
    rng_seed(&r, 3);
    beam_result br;
    verifier v = {.d = &vd};
    CHECK(ttc_beam_search(&pd, &v, &p, &c, &r, &br) == SX_OK);
    CHECK(br.tokens > 0 && br.tokens <= 3 * 8 * 12 && br.flops > 0 && br.completed >= 1);
    CHECK(kvcache_floats(&pd.cache) == 0 && kvcache_floats(&vd.cache) == 0);
    const char *sols[2] = {"2+12\n14\n", "2+12\n15\n"};
    double scores[2 * VERIFIER_MAX_STEPS];
    size_t ns[2];
    CHECK(verifier_score(&v, &p, sols, 2, scores, ns) == SX_OK && ns[0] == 2 && ns[1] == 2);
    CHECK(scores[0] == scores[VERIFIER_MAX_STEPS]);   // same first step, same prefix score
    CHECK(scores[0] > 0 && scores[0] < 1 && kvcache_floats(&vd.cache) == 0);
    shard_writer w;
    const char *path = "build/tests/test_ttc_docs.bin";
    CHECK(shard_writer_open(&w, path, ARITH_VOCAB, ARITH_EOT, 0) == SX_OK);
    size_t docs;
    CHECK(verifier_write_docs(&w, &p, sols[1], true, &docs) == SX_OK && docs == 2);
    CHECK(verifier_write_docs(&w, &p, sols[1], false, &docs) == SX_OK && docs == 1);
    CHECK(shard_writer_close(&w) == SX_OK);
    shard_file f;
    if (CHECK(shard_open(&f, path, ARITH_VOCAB) == SX_OK)) {
        // PRM docs: "<eot>2+3*4\n2+12\n" GOOD, then "... 15\n" BAD; ORM doc: BAD.
        size_t labels[3], k = 0;
        for (uint64_t i = 0; i < f.h.n_tokens && k < 3; i++) {
            uint32_t t = shard_token(&f, i);
            if (t == VERIFIER_GOOD || t == VERIFIER_BAD) labels[k++] = t;
        }
        CHECK(k == 3 && labels[0] == VERIFIER_GOOD && labels[1] == VERIFIER_BAD && labels[2] == VERIFIER_BAD);
        CHECK(f.h.n_docs == 3);
        shard_close(&f);
    }
    remove(path);
    decoder_free(&pd);
    decoder_free(&vd);
    model_free(&pm);
    model_free(&vm);
}

int main(void) {
    TEST_RUN(test_pass_at_k);
    TEST_RUN(test_coverage_fit);
    TEST_RUN(test_arith_checkers);
    TEST_RUN(test_selectors);
    TEST_RUN(test_compute_optimal);
    TEST_RUN(test_beam_search_and_docs);
    return testlib_finish("ttc");
}
