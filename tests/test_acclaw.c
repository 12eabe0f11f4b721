// Accuracy-vs-loss laws (laws/acclaw.h): the sigmoid and the exponential form recover planted parameters
// (exactly on noise-free accuracies, within a few standard errors on binomially noisy ones), leave-one-rung-
// out picks the form the data came from, the band around an extrapolated forecast holds the truth and is
// narrow when the task is informative, and a task at chance or at its ceiling is called flat with a wide band
// instead of a law fitted through its noise. The fitted model survives a JSON round trip.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "laws/acclaw.h"
#include "support/testlib.h"

#define RUNGS 5
#define FRACS 10
#define N (RUNGS * FRACS)

static const double sig_true[4] = {0.25, 0.85, 3.0, 4.0};   // floor, ceil, k, L0
static const double exp_true[3] = {0.8, 5.0, 1.0};          // e, k, g

typedef struct {
    double loss[N], acc[N], items[N];
    size_t group[N];
    acclaw_data d;
} points;

// Rung r's task loss falls over training from 7 - 0.6 r to 2.8 + 0.5 (4 - r); accuracy from the law, with
// binomial noise of `items` items when rng is given.
static void make(points *p, acclaw_form f, const double *law, double items, rng_state *rng) {
    for (size_t r = 0; r < RUNGS; r++)
        for (size_t q = 0; q < FRACS; q++) {
            size_t i = r * FRACS + q;
            double start = 7 - 0.6 * (double)r, end = 2.8 + 0.5 * (double)(RUNGS - 1 - r);
            p->loss[i] = start + (end - start) * (double)(q + 1) / FRACS;
            double a = law ? acclaw_eval(f, law, p->loss[i]) : 0.25;
            if (rng) a += sqrt(a * (1 - a) / items) * rng_normal(rng);
            p->acc[i] = fmin(fmax(a, 0), 1);
            p->items[i] = items;
            p->group[i] = r;
        }
    p->d = (acclaw_data){.n = N, .loss = p->loss, .acc = p->acc, .items = p->items, .group = p->group};
}

static void test_exact_recovery(void) {
    points p;
    acclaw_fit fit;
    make(&p, ACCLAW_SIGMOID, sig_true, 1000, NULL);
    CHECK(acclaw_fit_form(&p.d, ACCLAW_SIGMOID, &fit) == SX_OK);
    for (int j = 0; j < 4; j++) CHECK_CLOSE(fit.p[j], sig_true[j], 1e-4, 1e-4);
    make(&p, ACCLAW_EXP, exp_true, 1000, NULL);
    CHECK(acclaw_fit_form(&p.d, ACCLAW_EXP, &fit) == SX_OK);
    for (int j = 0; j < 3; j++) CHECK_CLOSE(fit.p[j], exp_true[j], 1e-4, 1e-4);
}

static void test_noisy_recovery_and_choice(void) {
    rng_state rng;
    rng_seed(&rng, 7);
    points p;
    acclaw_model m;
    make(&p, ACCLAW_SIGMOID, sig_true, 2000, &rng);
    CHECK(acclaw_model_fit(&p.d, 64, 1, &m) == SX_OK);
    CHECK(m.status == ACCLAW_INFORMATIVE);
    CHECK(m.chosen == ACCLAW_SIGMOID);   // the exponential cannot bend back to a floor
    CHECK(m.forms[ACCLAW_SIGMOID].loro_rmse < m.forms[ACCLAW_EXP].loro_rmse);
    CHECK_CLOSE(m.forms[ACCLAW_SIGMOID].p[0], sig_true[0], 0, 0.02);
    CHECK_CLOSE(m.forms[ACCLAW_SIGMOID].p[1], sig_true[1], 0, 0.02);
    CHECK_CLOSE(m.forms[ACCLAW_SIGMOID].p[2], sig_true[2], 0.1, 0);
    CHECK_CLOSE(m.forms[ACCLAW_SIGMOID].p[3], sig_true[3], 0, 0.05);
    // The band at a loss below every rung's (an extrapolation) holds the truth and is informative (< ±6 points).
    double acc, lo, hi, L = 2.5, want = acclaw_eval(ACCLAW_SIGMOID, sig_true, L);
    acclaw_predict(&m, L, 0.01, 2000, 3, &acc, &lo, &hi);
    CHECK(lo <= want && want <= hi);
    CHECK(hi - lo < 0.12);
    CHECK_CLOSE(acc, want, 0, 0.02);
    // More items evaluated: a narrower band (the binomial part shrinks).
    double lo2, hi2;
    acclaw_predict(&m, L, 0.01, 100, 3, &acc, &lo2, &hi2);
    CHECK(hi2 - lo2 > hi - lo);
    // JSON round trip: the same forecast.
    json_t *j = acclaw_model_to_json(&m);
    acclaw_model back;
    CHECK(acclaw_model_from_json(j, &back) == SX_OK);
    double acc3, lo3, hi3;
    acclaw_predict(&back, L, 0.01, 2000, 3, &acc3, &lo3, &hi3);
    CHECK_CLOSE(acc3, acc, 1e-12, 0);
    CHECK_CLOSE(lo3, lo, 1e-12, 0);
    CHECK_CLOSE(hi3, hi, 1e-12, 0);
    json_decref(j);
    acclaw_model_free(&back);
    acclaw_model_free(&m);

    make(&p, ACCLAW_EXP, exp_true, 2000, &rng);
    CHECK(acclaw_model_fit(&p.d, 64, 1, &m) == SX_OK);
    CHECK(m.status == ACCLAW_INFORMATIVE);
    CHECK_CLOSE(m.forms[ACCLAW_EXP].p[0], exp_true[0], 0, 0.02);
    CHECK(m.chosen == ACCLAW_EXP);
    // k and g trade off against each other (k exp(-g L)): the planted pair lies inside the bootstrap's range.
    for (int j = 1; j < 3; j++) {
        double lo_j = INFINITY, hi_j = -INFINITY;
        for (size_t b = 0; b < m.n_boot; b++) {
            lo_j = fmin(lo_j, m.boot[b * ACCLAW_MAX_PARAMS + j]);
            hi_j = fmax(hi_j, m.boot[b * ACCLAW_MAX_PARAMS + j]);
        }
        printf("  exp %s: fit %.4f, bootstrap range [%.4f, %.4f], planted %.4f\n", acclaw_param_name(ACCLAW_EXP, j),
               m.forms[ACCLAW_EXP].p[j], lo_j, hi_j, exp_true[j]);
        CHECK(lo_j <= exp_true[j] && exp_true[j] <= hi_j);
        CHECK_CLOSE(m.forms[ACCLAW_EXP].p[j], exp_true[j], 0.25, 0);
    }
    want = acclaw_eval(ACCLAW_EXP, exp_true, L);
    acclaw_predict(&m, L, 0.01, 2000, 3, &acc, &lo, &hi);
    CHECK(lo <= want && want <= hi);
    acclaw_model_free(&m);
}

// Accuracies at chance (0.25 on every rung) or at the ceiling (0.99): flat, and the band says so.
static void test_flat_tasks(void) {
    rng_state rng;
    rng_seed(&rng, 11);
    points p;
    acclaw_model m;
    make(&p, ACCLAW_SIGMOID, NULL, 500, &rng);
    CHECK(acclaw_model_fit(&p.d, 32, 1, &m) == SX_OK);
    CHECK(m.status == ACCLAW_CHANCE);
    CHECK_CLOSE(m.level, 0.25, 0, 0.01);
    double acc, lo, hi;
    acclaw_predict(&m, 2.0, 0.01, 500, 3, &acc, &lo, &hi);
    CHECK_CLOSE(acc, 0.25, 0, 0.01);
    CHECK(lo < 0.25 - 0.02 && hi == 1);   // could stay at chance, could take off: the ladder cannot tell
    acclaw_model_free(&m);

    const double top[4] = {0.99, 0.99, 1, 0};   // a constant 0.99 written as a degenerate sigmoid
    make(&p, ACCLAW_SIGMOID, top, 500, &rng);
    CHECK(acclaw_model_fit(&p.d, 32, 1, &m) == SX_OK);
    CHECK(m.status == ACCLAW_CEILING);
    acclaw_predict(&m, 2.0, 0.01, 500, 3, &acc, &lo, &hi);
    CHECK(hi == 1 && lo < m.min_acc && lo < 0.975);
    acclaw_model_free(&m);
}

static void test_refusals(void) {
    points p;
    make(&p, ACCLAW_SIGMOID, sig_true, 1000, NULL);
    acclaw_fit fit;
    p.d.n = 3;
    CHECK(acclaw_fit_form(&p.d, ACCLAW_SIGMOID, &fit) == SX_ERR_ARG);
    p.d.n = N;
    p.acc[4] = 1.5;
    CHECK(acclaw_fit_form(&p.d, ACCLAW_EXP, &fit) == SX_ERR_ARG);
}

int main(void) {
    TEST_RUN(test_exact_recovery);
    TEST_RUN(test_noisy_recovery_and_choice);
    TEST_RUN(test_flat_tasks);
    TEST_RUN(test_refusals);
    return testlib_finish("acclaw");
}
