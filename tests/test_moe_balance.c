// MoE Quantile Balancing (model/moe_balance.c and its use in model/ffn_moe.c): the selection, thresholds,
// prices and next bias against naive sorting references and the PyTorch fixture of one QB step; the MoE
// module's QB step on a planted router logit matrix; loads balancing on skewed logits; gradients equal to the
// unbalanced router's at b = 0, finite differences with a bias, and the whole-model PyTorch fixture.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "core/tensorfile.h"
#include "model/flops.h"
#include "model/model.h"
#include "model/moe_balance.h"
#include "support/modelcheck.h"
#include "support/testlib.h"

static const float *sort_key;   // the values qsort's comparators read
// Descending by value, ties to the lower index.
static int by_value_desc(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    if (sort_key[i] != sort_key[j]) return sort_key[i] > sort_key[j] ? -1 : 1;
    return i - j;
}
static int float_desc(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

// Naive QB step by full sorts: chosen experts (T,K), thresholds (T), prices (E), next bias (E).
static void naive_qb(size_t T, size_t E, size_t K, const float *u, const float *b, int32_t *idx, float *alpha,
                     float *beta, float *b_next) {
    float *sel = malloc(E * sizeof *sel), *col = malloc(T * sizeof *col);
    int order[64];
    for (size_t t = 0; t < T; t++) {
        for (size_t e = 0; e < E; e++) sel[e] = u[t * E + e] + b[e], order[e] = (int)e;
        sort_key = sel;
        qsort(order, E, sizeof *order, by_value_desc);
        for (size_t j = 0; j < K; j++) idx[t * K + j] = order[j];
        alpha[t] = sel[order[K]];
    }
    size_t k = T * K / E ? T * K / E : 1;
    double mean = 0;
    for (size_t e = 0; e < E; e++) {
        for (size_t t = 0; t < T; t++) col[t] = u[t * E + e] - alpha[t];
        qsort(col, T, sizeof *col, float_desc);
        mean += beta[e] = col[k - 1];
    }
    mean /= (double)E;
    for (size_t e = 0; e < E; e++) b_next[e] = (float)(mean - beta[e]);
    free(sel);
    free(col);
}

// Quickselect equals sorting, on every k of arrays with many ties, already sorted and reversed inputs.
static void test_kth_largest(void) {
    rng_state r;
    rng_seed(&r, 4);
    float x[97], sorted[97], work[97];
    size_t bad = 0;
    for (int kind = 0; kind < 4; kind++) {
        for (size_t n = 1; n <= 97; n += 8) {
            for (size_t i = 0; i < n; i++)
                x[i] = kind == 0 ? (float)rng_normal(&r) : kind == 1 ? (float)rng_below(&r, 3) : (float)(kind == 2 ? i : n - i);
            memcpy(sorted, x, n * sizeof *x);
            qsort(sorted, n, sizeof *sorted, float_desc);
            for (size_t k = 1; k <= n; k++) {
                memcpy(work, x, n * sizeof *x);
                bad += moe_kth_largest(work, n, k) != sorted[k - 1];
            }
        }
    }
    CHECK(bad == 0);
}

// Planted logits: selection, thresholds, prices and the next bias equal the naive reference exactly.
static void test_qb_step_matches_naive(void) {
    enum { T = 53, E = 8, K = 3 };
    rng_state r;
    rng_seed(&r, 9);
    float u[T * E], b[E], alpha[T], want_alpha[T], beta[E], want_beta[E], col[T], nb[E], want_nb[E];
    int32_t idx[T * K], want_idx[T * K];
    for (size_t i = 0; i < T * E; i++) u[i] = (float)rng_normal(&r) + (i % E == 0 ? 1.0f : 0.0f);
    for (size_t e = 0; e < E; e++) b[e] = 0.3f * (float)rng_normal(&r);
    b[5] = b[6] - u[5] + u[6];   // a planted tie in token 0's selection: the lower index must win
    moe_choose(T, E, K, u, b, idx, alpha);
    moe_qb_prices(T, E, K, u, alpha, col, beta);
    moe_qb_bias(E, beta, 1.0f, nb);
    naive_qb(T, E, K, u, b, want_idx, want_alpha, want_beta, want_nb);
    CHECK(!memcmp(idx, want_idx, sizeof idx));
    CHECK(!memcmp(alpha, want_alpha, sizeof alpha));
    CHECK(!memcmp(beta, want_beta, sizeof beta));
    CHECK(!memcmp(nb, want_nb, sizeof nb));
    double sum = 0;
    for (size_t e = 0; e < E; e++) sum += nb[e];
    CHECK(fabs(sum) < 1e-5);   // centred
    // The prices of two batches average: summed prices over 2 batches give the bias of their mean.
    float twice[E];
    for (size_t e = 0; e < E; e++) twice[e] = 2 * beta[e];
    moe_qb_bias(E, twice, 2.0f, nb);
    CHECK_ARRAYS_CLOSE(nb, want_nb, E, 1e-6, 1e-7);
}

// The PyTorch reference's QB step (tools/ref/variants.py qb_step, fixture moe_qb_step).
static void test_qb_step_fixture(void) {
    tensorfile f;
    if (!CHECK(tf_read("tests/fixtures/moe_qb_step.sxt", "fixture", &f) == SX_OK)) return;
    size_t T = (size_t)json_integer_value(json_object_get(f.meta, "T"));
    size_t E = (size_t)json_integer_value(json_object_get(f.meta, "E"));
    size_t K = (size_t)json_integer_value(json_object_get(f.meta, "K"));
    const tf_tensor *u = tf_find(&f, "u"), *b = tf_find(&f, "b"), *idx = tf_find(&f, "idx"),
                    *alpha = tf_find(&f, "alpha"), *beta = tf_find(&f, "beta"), *nb = tf_find(&f, "b_next");
    if (CHECK(u && b && idx && alpha && beta && nb && u->nbytes == T * E * 4 && idx->nbytes == T * K * 4)) {
        int32_t *got_idx = malloc(T * K * sizeof *got_idx);
        float *got_alpha = malloc(T * sizeof *got_alpha), *col = malloc(T * sizeof *col);
        float *got_beta = malloc(E * sizeof *got_beta), *got_nb = malloc(E * sizeof *got_nb);
        moe_choose(T, E, K, u->data, b->data, got_idx, got_alpha);
        moe_qb_prices(T, E, K, u->data, got_alpha, col, got_beta);
        moe_qb_bias(E, got_beta, 1.0f, got_nb);
        CHECK(!memcmp(got_idx, idx->data, T * K * sizeof *got_idx));
        CHECK_ARRAYS_CLOSE(got_alpha, alpha->data, T, 1e-6, 0);
        CHECK_ARRAYS_CLOSE(got_beta, beta->data, E, 1e-6, 1e-7);
        CHECK_ARRAYS_CLOSE(got_nb, nb->data, E, 1e-5, 1e-6);
        free(got_idx), free(got_alpha), free(col), free(got_beta), free(got_nb);
    }
    tf_free(&f);
}

// The MoE module on planted router logits: with router = [I | 0] and h = [u | 0], u is exactly the planted
// matrix. Runs forward + stats over `steps` fresh batches, after_step after each; returns max/mean load of
// the first and the mean over the last 10 steps.
typedef struct {
    model m;
    size_t ir, BT;
    float *h, *out, *saved, *scratch, *acc;
} planted_layer;

static bool planted_init(planted_layer *p, const char *desc, size_t BT) {
    model_config c;
    memset(p, 0, sizeof *p);
    if (!CHECK(model_config_parse(desc, 0, &c) == SX_OK) || !CHECK(model_init(&p->m, &c) == SX_OK)) return false;
    p->ir = (size_t)param_table_find(&p->m.table, "l0.router");
    size_t C = c.width, E = c.n_expert;
    memset(p->m.p[p->ir], 0, E * C * sizeof(float));
    for (size_t e = 0; e < E; e++) p->m.p[p->ir][e * C + e] = 1;
    p->BT = BT;
    p->h = calloc(BT * C, sizeof(float));
    p->out = calloc(BT * C, sizeof(float));
    p->saved = calloc(ffn_moe_module.saved_floats(&c, BT), sizeof(float));
    p->scratch = calloc(ffn_moe_module.scratch_floats(&c, BT), sizeof(float));
    p->acc = calloc(ffn_moe_module.n_stats(&c), sizeof(float));
    return true;
}

static void planted_free(planted_layer *p) {
    free(p->h), free(p->out), free(p->saved), free(p->scratch), free(p->acc);
    model_free(&p->m);
}

// One forward of logits u (BT,E) and its statistics into acc.
static void planted_forward(planted_layer *p, const float *u) {
    const model_config *c = &p->m.cfg;
    size_t C = c->width, E = c->n_expert;
    for (size_t t = 0; t < p->BT; t++) memcpy(p->h + t * C, u + t * E, E * sizeof *u);
    block_shape bs = {.cfg = c, .B = 1, .T = p->BT, .grad_scale = 1};
    ffn_moe_module.forward(&bs, p->m.p + p->ir, p->h, p->out, p->saved, p->scratch);
    ffn_moe_module.stats(c, p->BT, p->saved, p->acc);
}

static double max_over_mean(const float *load, size_t E) {
    double total = 0, mx = 0;
    for (size_t e = 0; e < E; e++) total += load[e], mx = fmax(mx, load[e]);
    return mx * (double)E / total;
}

// Two micro-batches of planted logits through the module: the loads are the naive selection's, and the bias
// after the step is the naive next bias of the mean price.
static void test_qb_module_step(void) {
    enum { BT = 37, E = 8, K = 2 };
    planted_layer p;
    if (!planted_init(&p, "d1-w32-hd8-moe8k2-ew8-balance=qb-v50", BT)) return;
    float *b = p.m.p[p.ir + 1], u[2][BT * E], b0[E];
    rng_state r;
    rng_seed(&r, 21);
    for (size_t e = 0; e < E; e++) b0[e] = b[e] = 0.2f * (float)rng_normal(&r);
    float want_load[E] = {0}, want_beta[E] = {0};
    for (int mb = 0; mb < 2; mb++) {
        for (size_t i = 0; i < BT * E; i++) u[mb][i] = (float)rng_normal(&r) + (float)(i % E) * 0.3f;
        planted_forward(&p, u[mb]);
        int32_t idx[BT * K];
        float alpha[BT], beta[E], nb[E];
        naive_qb(BT, E, K, u[mb], b0, idx, alpha, beta, nb);
        for (size_t i = 0; i < BT * K; i++) want_load[idx[i]] += 1;
        for (size_t e = 0; e < E; e++) want_beta[e] += beta[e];
    }
    CHECK(!memcmp(p.acc, want_load, sizeof want_load));
    CHECK(!memcmp(p.acc + E, want_beta, sizeof want_beta) && p.acc[2 * E] == 2);
    ffn_moe_module.after_step(&p.m.cfg, p.m.p + p.ir, p.acc);
    float want_b[E];
    moe_qb_bias(E, want_beta, 2.0f, want_b);
    double mean = 0;
    for (size_t e = 0; e < E; e++) mean += want_beta[e] / 2;
    mean /= E;
    CHECK(!memcmp(b, want_b, sizeof want_b));
    CHECK_CLOSE(b[0], mean - want_beta[0] / 2, 1e-5, 1e-6);
    planted_free(&p);
}

// Skewed logits (expert e favoured by 0.6·(E−1−e)): without balancing the first expert takes nearly every
// token. Returns max/mean load of the first step (*first) and the mean over steps 20-29, on the same batch
// each step or on fresh ones (fresh).
static double skewed_run(const char *desc, bool fresh, double *first) {
    enum { BT = 512, E = 8 };
    planted_layer p;
    if (!planted_init(&p, desc, BT)) return NAN;
    rng_state r;
    rng_seed(&r, 5);
    float *u = malloc(BT * E * sizeof *u);
    double late = 0;
    for (int step = 0; step < 30; step++) {
        if (step == 0 || fresh) for (size_t i = 0; i < BT * E; i++) u[i] = (float)rng_normal(&r) + 0.6f * (float)(E - 1 - i % E);
        memset(p.acc, 0, ffn_moe_module.n_stats(&p.m.cfg) * sizeof *p.acc);
        planted_forward(&p, u);
        double ratio = max_over_mean(p.acc, E);
        if (step == 0) *first = ratio;
        if (step >= 20) late += ratio / 10;
        if (ffn_moe_module.after_step && p.m.cfg.qb_balance) ffn_moe_module.after_step(&p.m.cfg, p.m.p + p.ir, p.acc);
    }
    free(u);
    planted_free(&p);
    return late;
}

// QB's alternating dual steps converge to exact balance on a fixed batch (within one token of the fair share,
// 128), and keep fresh batches near balance (their prices come from the previous batch: sampling noise remains).
static void test_qb_balances_skewed_loads(void) {
    double first_qb, first_none, first_fixed;
    double qb = skewed_run("d1-w32-hd8-moe8k2-ew8-balance=qb-v50", true, &first_qb);
    double fixed = skewed_run("d1-w32-hd8-moe8k2-ew8-balance=qb-v50", false, &first_fixed);
    double none = skewed_run("d1-w32-hd8-moe8k2-ew8-v50", true, &first_none);
    fprintf(stderr, "  max/mean load, steps 20-29: unbalanced %.3f, QB on one batch %.4f, QB on fresh batches %.3f "
            "(first step %.3f)\n", none, fixed, qb, first_qb);
    CHECK(first_qb > 3 && first_fixed > 3 && none > 3);   // the skew: far from balanced until QB acts
    CHECK(fixed <= 1.0 + 1.0 / 128);
    CHECK(qb < 1.3);
}

// With b = 0, QB selects on u where the plain router selects on softmax(u): the same experts, so the loss and
// every gradient are bit-identical to the unbalanced model's (QB never touches gradients); and the bias's
// gradient is exactly zero.
static void test_qb_gradients_equal_router_path(void) {
    const char *plain = "d2-w32-hd8-swiglu-moe6k2-ew16-shared1-v50", *qb = "d2-w32-hd8-swiglu-moe6k2-ew16-shared1-balance=qb-v50";
    model_config c;
    model a, q;
    if (!CHECK(model_config_parse(plain, 0, &c) == SX_OK && model_init(&a, &c) == SX_OK)) return;
    if (!CHECK(model_config_parse(qb, 0, &c) == SX_OK && model_init(&q, &c) == SX_OK)) { model_free(&a); return; }
    CHECK(model_reserve(&a, 2, 9) == SX_OK && model_reserve(&q, 2, 9) == SX_OK);
    modelcheck_randomize(&a, 17);
    size_t copied = 0;
    for (size_t i = 0; i < q.table.n; i++) {
        long j = param_table_find(&a.table, q.table.v[i].name);
        size_t n = q.table.v[i].rows * q.table.v[i].cols;
        if (j >= 0) memcpy(q.p[i], a.p[j], n * sizeof(float)), copied++;
        else memset(q.p[i], 0, n * sizeof(float));   // the router biases
    }
    CHECK(copied == a.table.n && q.table.n == a.table.n + 2);
    int32_t tok[2 * 10];
    for (size_t i = 0; i < 20; i++) tok[i] = (int32_t)(i * 13 % 50);
    model_zero_grad(&a);
    model_zero_grad(&q);
    double la = model_loss_and_grad(&a, tok, 1.0f), lq = model_loss_and_grad(&q, tok, 1.0f);
    CHECK(la == lq);
    size_t differ = 0;
    for (size_t i = 0; i < q.table.n; i++) {
        long j = param_table_find(&a.table, q.table.v[i].name);
        size_t n = q.table.v[i].rows * q.table.v[i].cols;
        if (j >= 0) differ += memcmp(q.g[i], a.g[j], n * sizeof(float)) != 0;
        else for (size_t k = 0; k < n; k++) differ += q.g[i][k] != 0;
    }
    CHECK(differ == 0);
    model_free(&a);
    model_free(&q);
}

// Finite differences with a random selection bias (selection on u + b, weights from the scores).
static void test_gradcheck_qb(void) { modelcheck_gradcheck("d2-w32-hd8-kv2-moe4k2-ew16-sigmoid-balance=qb-aux0.05-v50"); }
static void test_fixture_qb(void) { modelcheck_fixture("moe_qb"); }

// Accounting: the bias is a parameter but not a matmul weight; FLOPs per token equal the unbalanced model's.
static void test_qb_accounting(void) {
    model_config c, plain;
    model m;
    if (!CHECK(model_config_parse("d2-w32-hd8-moe6k2-ew16-balance=qb-v50", 0, &c) == SX_OK && model_init(&m, &c) == SX_OK)) return;
    CHECK(model_config_parse("d2-w32-hd8-moe6k2-ew16-v50", 0, &plain) == SX_OK);
    model_flops f = model_flops_count(&c, 64), g = model_flops_count(&plain, 64);
    CHECK(f.params_total == (double)model_param_count(&m) && f.params_total - g.params_total == 2.0 * 6);
    CHECK(f.train_per_token == g.train_per_token && f.params_active - g.params_active == 2.0 * 6);
    model_free(&m);
}

// The descriptor: balance=qb excludes balance=bias and brate, and needs K < E.
static void test_qb_descriptor(void) {
    model_config c;
    CHECK(model_config_parse("d2-moe8k2-balance=qb", 0, &c) == SX_OK && c.qb_balance && !c.bias_balance);
    CHECK(model_config_parse("d2-moe8k2-balance=qb-balance=bias", 0, &c) == SX_ERR_ARG);
    CHECK(model_config_parse("d2-moe8k2-balance=qb-brate0.1", 0, &c) == SX_ERR_ARG);
    CHECK(model_config_parse("d2-moe4k4-balance=qb", 0, &c) == SX_ERR_ARG);
    CHECK(model_config_parse("d2-balance=qb", 0, &c) == SX_ERR_ARG);
}

int main(void) {
    testlib_bind_gemm_workspace();   // the kernels and modules here run outside a model
    TEST_RUN(test_kth_largest);
    TEST_RUN(test_qb_step_matches_naive);
    TEST_RUN(test_qb_step_fixture);
    TEST_RUN(test_qb_module_step);
    TEST_RUN(test_qb_balances_skewed_loads);
    TEST_RUN(test_qb_gradients_equal_router_path);
    TEST_RUN(test_gradcheck_qb);
    TEST_RUN(test_fixture_qb);
    TEST_RUN(test_qb_accounting);
    TEST_RUN(test_qb_descriptor);
    return testlib_finish("moe_balance");
}
