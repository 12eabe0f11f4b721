// Verifiers that rank: the value head's gradients against central finite differences, its training on a
// separable problem, its file round trip and the trunk check; AUROC against a brute-force pairwise count and
// ECE against a hand computation; Monte-Carlo step labels on a toy policy whose step values are known exactly;
// the trunk features the head reads are exactly the LM head's input.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "infer/calibration.h"
#include "infer/mc_labels.h"
#include "infer/value_head.h"
#include "infer/verifier.h"
#include "model/linear.h"
#include "support/testlib.h"

static void test_gradients_by_finite_differences(void) {
    enum { IN = 5, H = 4, N = 7 };
    value_head h;
    if (!CHECK(value_head_init(&h, IN, H, 0, 11) == SX_OK)) return;
    rng_state r;
    rng_seed(&r, 5);
    float x[N * IN], y[N];
    rng_fill_normal(&r, x, N * IN, 1.0f);
    for (int k = 0; k < N; k++) y[k] = (float)rng_uniform(&r);   // soft targets
    for (size_t i = 0; i < h.n_params; i++) h.p[i] += (float)(0.3 * rng_normal(&r));   // away from the zero biases
    for (int k = 0; k < N * IN; k++) x[k] = 3.0f * x[k] + 2.0f;
    value_head_standardize(&h, x, N);   // the gradient is the standardised input's
    for (int i = 0; i < IN; i++) {
        double m = 0, v = 0;
        for (int k = 0; k < N; k++) m += (x[k * IN + i] - h.shift[i]) * h.scale[i];
        for (int k = 0; k < N; k++) v += pow((x[k * IN + i] - h.shift[i]) * h.scale[i], 2);
        CHECK(fabs(m / N) < 1e-5 && fabs(v / N - 1) < 1e-4);
    }
    double *g = calloc(h.n_params, sizeof *g);
    value_head_loss(&h, x, y, N, g);
    double worst = 0;
    for (size_t i = 0; i < h.n_params; i++) {
        float keep = h.p[i];
        const float eps = 1e-2f;
        h.p[i] = keep + eps;
        double up = value_head_loss(&h, x, y, N, NULL);
        h.p[i] = keep - eps;
        double down = value_head_loss(&h, x, y, N, NULL);
        h.p[i] = keep;
        double fd = (up - down) / ((double)(keep + eps) - (double)(keep - eps));
        double err = fabs(fd - g[i]) / (1e-4 + fabs(fd));
        if (err > worst) worst = err;
    }
    CHECK(worst < 1e-3);
    // The loss itself: one example, head with all weights zero → p = 1/2 → BCE = log 2 whatever the target.
    memset(h.p, 0, h.n_params * sizeof *h.p);
    CHECK_CLOSE(value_head_loss(&h, x, y, 1, NULL), log(2.0), 1e-12, 0);
    free(g);
    value_head_free(&h);
}

// A head learns a separable problem (label = x0 + x1 > 0): held-out AUROC near 1, loss falls.
static void test_training_and_file(void) {
    enum { IN = 6, N = 400 };
    float x[N * IN], y[N];
    rng_state r;
    rng_seed(&r, 9);
    rng_fill_normal(&r, x, N * IN, 1.0f);
    for (int k = 0; k < N; k++) y[k] = x[k * IN] + x[k * IN + 1] > 0 ? 1.0f : 0.0f;
    value_head h;
    if (!CHECK(value_head_init(&h, IN, 8, 1234, 3) == SX_OK)) return;
    value_head_standardize(&h, x, 300);
    double before = value_head_loss(&h, x, y, 300, NULL), after;
    value_train_config tc = {.epochs = 60, .batch = 32, .lr = 1e-2, .weight_decay = 0, .seed = 1};
    size_t epoch;
    CHECK(value_head_train(&h, x, y, 300, &tc, NULL, &after, &epoch) == SX_OK && epoch == 60);
    CHECK(after < 0.5 * before && after < 0.2);
    double score[N - 300], z[8];
    bool pos[N - 300];
    for (int k = 300; k < N; k++) score[k - 300] = value_head_prob(&h, x + k * IN, z), pos[k - 300] = y[k] > 0.5f;
    CHECK(calib_auroc(score, pos, N - 300) > 0.97);
    const char *path = "build/tests/test_value_head.sxt";
    CHECK(value_head_save(&h, path, NULL) == SX_OK && value_head_is_file(path));
    value_head g;
    if (CHECK(value_head_load(path, &g) == SX_OK)) {
        CHECK(g.in == IN && g.hidden == 8 && g.trunk_params == 1234 && !memcmp(g.p, h.p, h.n_params * sizeof *h.p));
        CHECK(!memcmp(g.shift, h.shift, IN * sizeof *h.shift) && !memcmp(g.scale, h.scale, IN * sizeof *h.scale));
        value_head_free(&g);
    }
    FILE *f = fopen(path, "r+b");   // a flipped byte fails the checksum: an error, not garbage
    if (CHECK(f != NULL)) {
        fseek(f, -40, SEEK_END);
        int c = fgetc(f);
        fseek(f, -40, SEEK_END);
        fputc(c ^ 0x5a, f);
        fclose(f);
        CHECK(value_head_load(path, &g) != SX_OK && !value_head_is_file(path));
    }
    remove(path);
    value_head_free(&h);
    // Early stopping on noisy labels (a fifth flipped): the head kept is the best epoch's on the validation rows,
    // never worse there than the same run's last epoch.
    for (int k = 0; k < N; k++)
        if (rng_uniform(&r) < 0.2) y[k] = 1.0f - y[k];
    value_head last, early;
    value_train_config small = {.epochs = 200, .batch = 16, .lr = 3e-2, .weight_decay = 0, .seed = 2};
    value_split_set valid = {.x = x + 200 * IN, .y = y + 200, .n = 100};
    CHECK(value_head_init(&last, IN, 32, 0, 4) == SX_OK && value_head_init(&early, IN, 32, 0, 4) == SX_OK);
    CHECK(value_head_train(&last, x, y, 200, &small, NULL, &after, &epoch) == SX_OK);
    CHECK(value_head_train(&early, x, y, 200, &small, &valid, &after, &epoch) == SX_OK && epoch >= 1 && epoch < 200);
    CHECK(value_head_loss(&early, valid.x, valid.y, valid.n, NULL) < value_head_loss(&last, valid.x, valid.y, valid.n, NULL));
    value_head_free(&last);
    value_head_free(&early);
}

// Brute force: over all (positive, negative) pairs, 1 if the positive scores higher, ½ on a tie.
static double auroc_pairs(const double *s, const bool *pos, size_t n) {
    double hit = 0, pairs = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (pos[i] && !pos[j]) pairs++, hit += s[i] > s[j] ? 1.0 : s[i] == s[j] ? 0.5 : 0.0;
    return hit / pairs;
}

static void test_auroc_and_ece(void) {
    rng_state r;
    rng_seed(&r, 21);
    for (int trial = 0; trial < 50; trial++) {
        size_t n = 2 + (size_t)rng_below(&r, 60);
        double s[64];
        bool pos[64];
        bool both = false;
        for (size_t i = 0; i < n; i++) {
            s[i] = (double)rng_below(&r, 8) / 8.0;   // coarse scores: many ties
            pos[i] = rng_uniform(&r) < 0.3 + 0.5 * s[i];
            both = both || pos[i] != pos[0];
        }
        if (both) CHECK_CLOSE(calib_auroc(s, pos, n), auroc_pairs(s, pos, n), 1e-12, 1e-12);
        else CHECK(isnan(calib_auroc(s, pos, n)));
    }
    double s[4] = {0.1, 0.9, 0.3, 0.8};
    bool p[4] = {false, true, true, false};
    CHECK_CLOSE(calib_auroc(s, p, 4), 0.75, 1e-12, 0);   // pairs: (0.9>0.1) (0.9>0.8) (0.3>0.1) (0.3<0.8)
    // ECE, 2 bins: [0, .5): scores .1, .3 mean .2, labels 0, 1 mean .5 → |.2−.5|·2/4; [.5, 1]: .9, .8 mean .85,
    // labels 1, 0 mean .5 → |.85−.5|·2/4. Total .15 + .175.
    double y[4] = {0, 1, 1, 0};
    CHECK_CLOSE(calib_ece(s, y, 4, 2), 0.325, 1e-12, 0);
    double perfect_s[3] = {0.25, 0.25, 1.0}, perfect_y[3] = {0.25, 0.25, 1.0};   // soft labels equal to the score
    CHECK_CLOSE(calib_ece(perfect_s, perfect_y, 3, 10), 0.0, 0, 1e-15);
}

// A toy policy on "1+2+3+4+5" (reference: 3+3+4+5 / 6+4+5 / 10+5 / 15): from a prefix whose lines are all
// correct with j of the 4 steps done, each remaining step is right with probability q, so the prefix's value
// is exactly q^(4−j); after a wrong line the value is 0.
typedef struct { double q; size_t calls; } toy;
static sx_status toy_rollout(void *ctx, const arith_problem *p, const char *prefix, size_t n, rng_state *rng, size_t *correct) {
    toy *t = ctx;
    bool ok[8];
    size_t done = arith_check_steps(p, prefix, ok, 8);
    bool good = true;
    for (size_t i = 0; i < done; i++) good = good && ok[i];
    *correct = 0;
    for (size_t k = 0; k < n && good; k++) {
        bool all = true;
        for (size_t s = done; s < 4; s++) all = all && rng_uniform(rng) < t->q;
        *correct += all;
    }
    t->calls++;
    return SX_OK;
}

static void test_mc_step_labels(void) {
    arith_problem p = {.expr = "1+2+3+4+5", .answer = 15, .n_ops = 4, .digits = 1};
    char ref[128];
    arith_solution(&p, ref, sizeof ref);
    CHECK(!strcmp(ref, "3+3+4+5\n6+4+5\n10+5\n15\n"));
    rng_state r;
    rng_seed(&r, 4);
    double lab[8];
    size_t n, rolls = 0;
    toy t = {.q = 1.0};   // a policy that never errs: every correct prefix has value exactly 1
    CHECK(mc_step_labels(toy_rollout, &t, &p, ref, 16, &r, lab, 8, &n, &rolls) == SX_OK);
    CHECK(n == 4 && rolls == 3 * 16 && t.calls == 3);
    for (size_t i = 0; i < n; i++) CHECK(lab[i] == 1.0);
    // A wrong second line: 1 then 0 for every later prefix, and the last line is the (wrong) outcome.
    const char *bad = "3+3+4+5\n6+4+6\n10+6\n16\n";
    CHECK(mc_step_labels(toy_rollout, &t, &p, bad, 16, &r, lab, 8, &n, NULL) == SX_OK && n == 4);
    CHECK(lab[0] == 1.0 && lab[1] == 0.0 && lab[2] == 0.0 && lab[3] == 0.0);
    // q = 0.8 and 20000 rollouts: labels q³, q², q within 5 binomial standard deviations; last line exact 1.
    t.q = 0.8;
    CHECK(mc_step_labels(toy_rollout, &t, &p, ref, 20000, &r, lab, 8, &n, NULL) == SX_OK && n == 4);
    for (size_t j = 0; j < 3; j++) {
        double v = pow(0.8, 3.0 - (double)j), sd = sqrt(v * (1 - v) / 20000);
        CHECK(fabs(lab[j] - v) < 5 * sd);
    }
    CHECK(lab[3] == 1.0);
    // An unfinished solution (no complete line) has no labels; max_steps caps them.
    CHECK(mc_step_labels(toy_rollout, &t, &p, "3+3", 4, &r, lab, 8, &n, NULL) == SX_OK && n == 0);
    CHECK(mc_step_labels(toy_rollout, &t, &p, ref, 4, &r, lab, 2, &n, NULL) == SX_OK && n == 2);
}

// The features a value head reads: the hidden part is exactly the LM head's input (logits = features · head
// weights); the step statistics are the trunk's own log-probabilities of the tokens written, the same whether a
// sequence is fed in one call or in pieces across a fork; a head trained on another trunk is refused.
static void test_trunk_features(void) {
    model_config c;
    model m;
    if (!CHECK(model_config_parse("d1-w32-hd8", ARITH_VOCAB, &c) == SX_OK && model_init(&m, &c) == SX_OK)) return;
    model_init_weights(&m, 7);
    decoder a, b;
    CHECK(decoder_init(&a, &m, 64) == SX_OK && decoder_init(&b, &m, 64) == SX_OK);
    trunk_reader ta, tb;
    trunk_reader_init(&ta, &a);
    trunk_reader_init(&tb, &b);
    enum { N = 9, C = 32, F = 32 + TRUNK_EXTRA };
    CHECK(trunk_feature_dim(&ta) == F);
    int32_t tok[N] = {ARITH_EOT, '1', '+', '2', '\n', '3', '\n', '4', '\n'};   // problem line, then steps "3", "4"
    int seq_a[N], seq_b[N];
    int sa = trunk_new_seq(&ta);
    for (int i = 0; i < N; i++) seq_a[i] = sa;
    float logits[N * ARITH_VOCAB], fa[N * F], fb[N * F], again[N * ARITH_VOCAB], h[N * C];
    CHECK(trunk_forward(&ta, N, seq_a, tok, fa) == SX_OK);
    int s0 = kvcache_new_seq(&a.cache);
    for (int i = 0; i < N; i++) seq_a[i] = s0;
    CHECK(decoder_forward_features(&a, N, seq_a, tok, h, logits) == SX_OK);
    for (int r = 0; r < N; r++) CHECK(!memcmp(fa + r * F, h + r * C, C * sizeof *h));
    linear_forward(N, C, ARITH_VOCAB, h, m.p[m.head], again, false);
    CHECK_ARRAYS_CLOSE(again, logits, N * ARITH_VOCAB, 1e-5, 1e-6);
    // Log-probabilities of tokens 5, 6 (step "3\n") and 7, 8 (step "4\n") from the logits before them.
    double lp[N];
    for (int r = 1; r < N; r++) {
        double mx = -INFINITY, z = 0;
        for (int v = 0; v < ARITH_VOCAB; v++) mx = fmax(mx, logits[(r - 1) * ARITH_VOCAB + v]);
        for (int v = 0; v < ARITH_VOCAB; v++) z += exp(logits[(r - 1) * ARITH_VOCAB + v] - mx);
        lp[r] = logits[(r - 1) * ARITH_VOCAB + tok[r]] - mx - log(z);
    }
    CHECK_CLOSE(fa[6 * F + C], fmin(lp[5], lp[6]), 1e-4, 1e-5);         // step min at the first step's newline
    CHECK_CLOSE(fa[6 * F + C + 1], (lp[5] + lp[6]) / 2, 1e-4, 1e-5);     // step mean
    CHECK_CLOSE(fa[6 * F + C + 2], fmin(lp[5], lp[6]), 1e-4, 1e-5);     // path min: the problem line not counted
    CHECK_CLOSE(fa[8 * F + C], fmin(lp[7], lp[8]), 1e-4, 1e-5);
    CHECK_CLOSE(fa[8 * F + C + 2], fmin(fmin(lp[5], lp[6]), fmin(lp[7], lp[8])), 1e-4, 1e-5);
    // In pieces: the problem line, a fork, then one step per call: the same features.
    int root = trunk_new_seq(&tb);
    for (int i = 0; i < 5; i++) seq_b[i] = root;
    CHECK(trunk_forward(&tb, 5, seq_b, tok, fb) == SX_OK);
    int kid = trunk_fork(&tb, root);
    for (int i = 5; i < N; i++) seq_b[i] = kid;
    CHECK(trunk_forward(&tb, 2, seq_b + 5, tok + 5, fb + 5 * F) == SX_OK);
    CHECK(trunk_forward(&tb, 2, seq_b + 7, tok + 7, fb + 7 * F) == SX_OK);
    CHECK_ARRAYS_CLOSE(fb, fa, N * F, 1e-5, 1e-6);
    value_head hd;
    CHECK(value_head_init(&hd, F, 4, model_param_count(&m) + 1, 1) == SX_OK);
    verifier v = {.d = &b, .head = &hd, .trunk = &tb};
    double score[1];
    int32_t one = '5';
    CHECK(verifier_forward(&v, 1, &kid, &one, score) == SX_ERR_MISMATCH);
    hd.trunk_params = model_param_count(&m);
    double f0 = b.flops;
    CHECK(verifier_forward(&v, 1, &kid, &one, score) == SX_OK && score[0] > 0 && score[0] < 1);
    CHECK(b.flops - f0 > value_head_flops(&hd));   // the trunk's FLOPs and the head's
    trunk_release(&tb, kid), trunk_release(&tb, root), trunk_release(&ta, sa), kvcache_release(&a.cache, s0);
    CHECK(kvcache_floats(&a.cache) == 0 && kvcache_floats(&b.cache) == 0);
    value_head_free(&hd);
    trunk_reader_free(&ta);
    trunk_reader_free(&tb);
    decoder_free(&a);
    decoder_free(&b);
    model_free(&m);
}

int main(void) {
    testlib_bind_gemm_workspace();   // one check runs the head's product itself (linear_forward)
    TEST_RUN(test_gradients_by_finite_differences);
    TEST_RUN(test_training_and_file);
    TEST_RUN(test_auroc_and_ece);
    TEST_RUN(test_mc_step_labels);
    TEST_RUN(test_trunk_features);
    return testlib_finish("test_value_head");
}
