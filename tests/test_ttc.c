// Test-time compute: the unbiased pass@k estimator against exhaustive subset enumeration, the coverage-law
// fit, the arithmetic task's generator and exact checkers, the selectors, compute-optimal selection with
// cross-validation, verifier documents, a beam search run that frees every cache row it used, and the rows
// the experiment and its table look up by selector and scorer.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "infer/ttc.h"
#include "infer/ttc_experiment.h"
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
    CHECK_CLOSE(ttc_compute_optimal(acc, NULL, bin, 8, 2, 2, choice), 1.0, 0, 1e-12);
    CHECK(choice[0] == 1 && choice[1] == 0);
    // A strategy that wins only on the even fold does not transfer: CV accuracy 0.5, not 1.
    double acc2[8] = {1, 0, 0, 1, 1, 0, 0, 1};
    size_t one[4] = {0, 0, 0, 0};
    CHECK_CLOSE(ttc_compute_optimal(acc2, NULL, one, 4, 2, 1, NULL), 0.0, 0, 1e-12);
    // At a FLOP budget: strategy 1 costs 2, so a budget of 1 leaves strategy 0 alone (right only in bin 1).
    double cost[2] = {1, 2};
    bool allowed[2];
    CHECK_CLOSE(ttc_compute_optimal_at(acc, cost, 1.0, bin, 8, 2, 2, allowed), 0.5, 0, 1e-12);
    CHECK(allowed[0] && !allowed[1]);
    CHECK_CLOSE(ttc_compute_optimal_at(acc, cost, 2.0, bin, 8, 2, 2, allowed), 1.0, 0, 1e-12);
    CHECK(isnan(ttc_compute_optimal_at(acc, cost, 0.5, bin, 8, 2, 2, allowed)));
    double d[6] = {0.5, 0.1, 0.9, 0.3, 0.7, 0.2};
    size_t b[6];
    ttc_bin_quantiles(d, 6, 3, b);
    CHECK(b[1] == 0 && b[5] == 0 && b[3] == 1 && b[0] == 1 && b[4] == 2 && b[2] == 2);
    CHECK(verifier_aggregate((double[]){0.9, 0.5, 0.8}, 3, AGG_MIN) == 0.5);
    CHECK_CLOSE(verifier_aggregate((double[]){0.9, 0.5, 0.8}, 3, AGG_PROD), 0.36, 1e-12, 0);
    CHECK(verifier_aggregate((double[]){0.9, 0.5, 0.8}, 3, AGG_LAST) == 0.8);
}

// Per bucket, the cheapest choice reaching a target accuracy (the saving against best-of-N at equal accuracy),
// and the most accurate choice within a FLOP budget (the equal-FLOPs comparison of policy sizes).
static void test_cheapest_and_best_within(void) {
    // 4 problems (bins 0, 0, 1, 1) x 3 choices costing 1, 4, 16 on every problem (choice 1 costs 5 on problem 1).
    double acc[12] = {0, 1, 1,   0, 0, 1,   1, 1, 1,   0, 1, 1};
    double cost[12] = {1, 4, 16,  1, 5, 16,  1, 4, 16,  1, 4, 16};
    size_t bin[4] = {0, 0, 1, 1};
    double a, c;
    CHECK(ttc_cheapest_reaching(acc, cost, bin, 4, 3, 0, 0.5, &a, &c) == 1);   // bin 0: choice 1 reaches 0.5 at 4.5
    CHECK_CLOSE(a, 0.5, 0, 1e-12);
    CHECK_CLOSE(c, 4.5, 0, 1e-12);
    CHECK(ttc_cheapest_reaching(acc, cost, bin, 4, 3, 0, 1.0, &a, &c) == 2 && c == 16);
    CHECK(ttc_cheapest_reaching(acc, cost, bin, 4, 3, 1, 0.5, &a, &c) == 0 && c == 1);   // bin 1: choice 0 at 0.5
    CHECK(ttc_cheapest_reaching(acc, cost, bin, 4, 3, 1, 1.0, &a, &c) == 1 && c == 4);
    CHECK(ttc_cheapest_reaching(acc, cost, bin, 4, 3, 2, 0.0, &a, &c) == 3 && isnan(c));   // empty bin
    double lone_acc[3] = {0.2, 0.6, 0.6}, lone_cost[3] = {1, 8, 4};
    CHECK(ttc_best_within(lone_acc, lone_cost, 3, 0.5) == 3);
    CHECK(ttc_best_within(lone_acc, lone_cost, 3, 3) == 0);
    CHECK(ttc_best_within(lone_acc, lone_cost, 3, 100) == 2);   // the tie goes to the cheaper
    lone_cost[2] = NAN;   // not measured
    CHECK(ttc_best_within(lone_acc, lone_cost, 3, 100) == 1);
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
    search_config c = {.n_beams = 8, .width = 4, .max_rounds = 3, .max_step_tokens = 12, .temperature = 1, .agg = AGG_MIN};
    rng_state r;
    rng_seed(&r, 3);
    search_result br;
    verifier v = {.d = &vd};
    CHECK(ttc_search(&pd, &v, &p, &c, &r, &br) == SX_OK);
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


// ---- tree search on a toy policy whose best answer is known ----
// The toy policy is a hand-built bigram model (every layer's weights zero, so the residual stream is the token
// embedding): after '\n' it writes the line "9" with probability 0.3, "7" with 0.3, or ends (0.4); after a digit
// always '\n'. On "4+5" the only correct solution is "9\n" then end of text; the oracle verifier scores a prefix
// 1 when every line so far is a correct step, else 0.
static bool toy_policy(model *m) {
    model_config c;
    if (!CHECK(model_config_parse("d1-w32-hd8-untied", ARITH_VOCAB, &c) == SX_OK && model_init(m, &c) == SX_OK)) return false;
    size_t C = c.width;
    if (!CHECK(m->head != m->emb)) return false;
    memset(m->params, 0, m->table.total * sizeof *m->params);
    for (size_t i = 0; i < C; i++) m->p[m->norm_f][i] = 1.0f;
    float *emb = m->p[m->emb], *head = m->p[m->head], s = 1.0f / sqrtf((float)C);   // normed one-hot = sqrt(C)·e_k
    for (int t = 0; t < ARITH_VOCAB; t++) emb[t * C + (t == '\n' ? 0 : t == '9' ? 1 : t == '7' ? 2 : 3)] = 1.0f;
    for (int t = 0; t < ARITH_VOCAB; t++)
        for (size_t k = 0; k < 4; k++) head[t * C + k] = -30.0f * s;
    head['9' * C + 0] = logf(0.3f) * s, head['7' * C + 0] = logf(0.3f) * s, head[ARITH_EOT * C + 0] = logf(0.4f) * s;
    head['\n' * C + 1] = head['\n' * C + 2] = 0.0f;
    return true;
}

static double oracle_steps(void *ctx, const int32_t *tok, size_t n) {
    const arith_problem *p = ctx;
    char text[256];
    size_t k = 0, i = 0;
    while (i < n && tok[i] != '\n') i++;   // skip the prompt: EOT, the expression, '\n'
    for (i++; i < n && k + 1 < sizeof text; i++)
        if (tok[i] < 256) text[k++] = (char)tok[i];
    text[k] = 0;
    bool ok[16];
    size_t lines = arith_check_steps(p, text, ok, 16);
    for (size_t j = 0; j < lines && j < 16; j++)
        if (!ok[j]) return 0.0;
    return 1.0;
}

static void test_search_on_toy_policy(void) {
    model pm, vm;
    if (!toy_policy(&pm) || !random_model("d1-w32-hd8", 2, &vm)) return;
    decoder pd, vd;
    CHECK(decoder_init(&pd, &pm, 64) == SX_OK && decoder_init(&vd, &vm, 64) == SX_OK);
    arith_problem p = {.expr = "4+5", .answer = 9, .n_ops = 1, .digits = 1};
    // The toy's next-token probabilities after the prompt are the designed ones.
    int32_t prompt[8];
    size_t np = arith_prompt_tokens(&p, prompt, 8);
    float logits[ARITH_VOCAB];
    int s0 = kvcache_new_seq(&pd.cache);
    CHECK(decoder_prefill(&pd, s0, prompt, np, logits) == SX_OK);
    double z = 0;
    for (int t = 0; t < ARITH_VOCAB; t++) z += exp(logits[t]);
    CHECK_CLOSE(exp(logits['9']) / z, 0.3, 1e-4, 0);
    CHECK_CLOSE(exp(logits[ARITH_EOT]) / z, 0.4, 1e-4, 0);
    kvcache_release(&pd.cache, s0);
    verifier oracle = {.d = &vd, .oracle = oracle_steps, .oracle_ctx = &p};
    // Beam search (N 16, M 4): it finds "9\n" among 16 first steps unless none is a 9 (0.7^16 = 0.3%) and keeps it.
    // Lookahead (k 1) ranks the same way here, spending extra rollout tokens; DVTS: 4 subtrees of 4.
    const struct { search_kind kind; size_t lookahead; } kinds[3] = {{SEARCH_BEAM, 0}, {SEARCH_BEAM, 1}, {SEARCH_DVTS, 0}};
    size_t tokens[3] = {0};
    for (int k = 0; k < 3; k++) {
        int right = 0;
        for (uint64_t seed = 1; seed <= 40; seed++) {
            rng_state r;
            rng_seed(&r, seed);
            search_config c = {.kind = kinds[k].kind, .n_beams = 16, .width = 4, .max_rounds = 4, .max_step_tokens = 8,
                               .lookahead = kinds[k].lookahead, .temperature = 1, .agg = AGG_MIN};
            search_result br;
            CHECK(ttc_search(&pd, &oracle, &p, &c, &r, &br) == SX_OK);
            right += br.correct && br.answer == 9;
            tokens[k] += br.tokens;
        }
        CHECK(right >= 38);
        CHECK(kvcache_floats(&pd.cache) == 0 && kvcache_floats(&vd.cache) == 0);
    }
    CHECK(tokens[1] > tokens[0]);   // the lookahead's rollouts are counted
    // One round only, every first step is final: the search is right exactly when some first step is a 9 — the
    // best-of-N-with-an-oracle rate 1 − 0.7^N; N = 2 over 1000 seeds: 0.51 within 4 standard deviations.
    int right = 0;
    for (uint64_t seed = 1; seed <= 1000; seed++) {
        rng_state r;
        rng_seed(&r, seed);
        search_config c = {.kind = SEARCH_BEAM, .n_beams = 2, .width = 4, .max_rounds = 1, .max_step_tokens = 8,
                           .temperature = 1, .agg = AGG_MIN};
        search_result br;
        CHECK(ttc_search(&pd, &oracle, &p, &c, &r, &br) == SX_OK && br.completed == 2);
        right += br.correct;
    }
    CHECK(fabs(right / 1000.0 - 0.51) < 4 * sqrt(0.51 * 0.49 / 1000));
    // Every budget gives an answer, N = 1 included (the width is capped at N).
    rng_state r;
    rng_seed(&r, 9);
    search_config one = {.kind = SEARCH_DVTS, .n_beams = 1, .width = 4, .max_rounds = 4, .max_step_tokens = 8, .temperature = 1};
    search_result br;
    CHECK(ttc_search(&pd, &oracle, &p, &one, &r, &br) == SX_OK && br.completed >= 1 && br.flops > 0);
    decoder_free(&pd);
    decoder_free(&vd);
    model_free(&pm);
    model_free(&vm);
}

// The rows the experiment (coverage curves, FLOP baselines) and `ttc run`'s table find by selector and scorer:
// the samples rows, never a search row with the same selector and scorer (beam_prm is a PRM-weighted vote too).
static void test_strategy_rows(void) {
    CHECK(!strcmp(ttc_strategies[ttc_strategy_row(SEL_BEST_OF_N, TTC_SCORE_PRM)].name, "best_of_n_prm"));
    CHECK(!strcmp(ttc_strategies[ttc_strategy_row(SEL_WEIGHTED, TTC_SCORE_PRM)].name, "weighted_prm"));
    CHECK(!strcmp(ttc_strategies[ttc_strategy_row(SEL_MAJORITY, TTC_SCORE_NONE)].name, "majority"));
    CHECK(!strcmp(ttc_strategies[ttc_strategy_row(SEL_BEST_OF_N, TTC_SCORE_ORM)].name, "best_of_n_orm"));
}

int main(void) {
    TEST_RUN(test_pass_at_k);
    TEST_RUN(test_coverage_fit);
    TEST_RUN(test_arith_checkers);
    TEST_RUN(test_selectors);
    TEST_RUN(test_compute_optimal);
    TEST_RUN(test_cheapest_and_best_within);
    TEST_RUN(test_beam_search_and_docs);
    TEST_RUN(test_search_on_toy_policy);
    TEST_RUN(test_strategy_rows);
    return testlib_finish("ttc");
}
