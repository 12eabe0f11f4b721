// The chained downstream law (laws/accchain.h) and Gadre's one-exponent loss law (laws.h ND1): the ND1
// Jacobian matches finite differences and a fit recovers planted parameters; on runs planted from a known
// loss law and error law, leave-one-size-out picks the error form the data came from (and Chinchilla's two
// exponents when they differ), and the chained forecast for a 4x larger size lands on the truth; bad
// input is refused.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "laws/accchain.h"
#include "laws/fit.h"
#include "laws/laws.h"
#include "support/testlib.h"

static const double nd1_true[LAW_ND1_NPARAM] = {[LAW_ND1_E] = 1.8, [LAW_ND1_A] = 150, [LAW_ND1_B] = 260, [LAW_ND1_ALPHA] = 0.27};
static const double nd_true[LAW_ND_NPARAM] = {[LAW_ND_E] = 1.7, [LAW_ND_A] = 400, [LAW_ND_B] = 900, [LAW_ND_ALPHA] = 0.34,
                                              [LAW_ND_BETA] = 0.26};
static const double exp_true[3] = {0.86, 2.2, 0.72};          // err = e - k exp(-g L) (as the Gadre RPJ fit)
static const double sig_true[4] = {0.2, 0.62, 4.0, 3.6};      // acc = floor + (ceil - floor)/(1 + exp(k (L - L0)))

#define SIZES 4
#define MULTS 6
#define RUNS (SIZES * MULTS)
static const double sizes[SIZES] = {1e7, 8e7, 1.5e8, 4e8}, mults[MULTS] = {5, 10, 20, 80, 320, 640};

static void test_nd1_law(void) {
    double n[RUNS], d[RUNS], y[RUNS];
    for (size_t i = 0; i < RUNS; i++) {
        n[i] = sizes[i / MULTS];
        d[i] = n[i] * mults[i % MULTS];
        y[i] = law_nd1_eval(nd1_true, n[i], d[i]);
    }
    fit_law law;
    CHECK(law_nd1_bind(n, d, RUNS, &law) == SX_OK);
    double pred[RUNS], jac[RUNS * LAW_ND1_NPARAM], a[RUNS], b[RUNS];
    law.eval(law.ctx, nd1_true, pred, jac);
    CHECK_CLOSE(pred[7], y[7], 1e-12, 0);
    for (size_t j = 0; j < LAW_ND1_NPARAM; j++) {
        double p[LAW_ND1_NPARAM], h = 1e-6 * nd1_true[j];
        memcpy(p, nd1_true, sizeof p);
        p[j] += h;
        law.eval(law.ctx, p, a, NULL);
        p[j] -= 2 * h;
        law.eval(law.ctx, p, b, NULL);
        for (size_t i = 0; i < RUNS; i += 5) CHECK_CLOSE(jac[i * LAW_ND1_NPARAM + j], (a[i] - b[i]) / (2 * h), 1e-5, 1e-9);
    }
    rng_state r;
    rng_seed(&r, 3);
    for (size_t i = 0; i < RUNS; i++) y[i] *= exp(0.002 * rng_normal(&r));
    fit_options o;
    fit_options_default(&o);
    fit_result res;
    CHECK(fit_law_run(&law, y, NULL, &o, &res) == SX_OK);
    CHECK_CLOSE(res.params[LAW_ND1_E], nd1_true[LAW_ND1_E], 0.03, 0);
    CHECK_CLOSE(res.params[LAW_ND1_ALPHA], nd1_true[LAW_ND1_ALPHA], 0.05, 0);
    CHECK(res.mean_abs_rel < 0.003);
    fit_result_free(&res);
    fit_law_free(&law);
}

typedef struct {
    double n[RUNS], d[RUNS], loss[RUNS], acc[RUNS];
    size_t group[RUNS];
    accchain_data data;
} runs;

// Runs of the planted laws, loss with 0.2% and error with 0.3% relative noise.
static void make(runs *r, accchain_loss_form lf, const double *lp, acclaw_form af, const double *ap, uint64_t seed) {
    rng_state g;
    rng_seed(&g, seed);
    for (size_t i = 0; i < RUNS; i++) {
        r->n[i] = sizes[i / MULTS];
        r->d[i] = r->n[i] * mults[i % MULTS];
        r->group[i] = i / MULTS;
        r->loss[i] = accchain_loss_eval(lf, lp, r->n[i], r->d[i]) * exp(0.002 * rng_normal(&g));
        r->acc[i] = 1 - (1 - acclaw_eval(af, ap, r->loss[i])) * exp(0.003 * rng_normal(&g));
    }
    r->data = (accchain_data){.n = RUNS, .params = r->n, .tokens = r->d, .loss = r->loss, .acc = r->acc, .group = r->group};
}

// A 4x larger model at 20 and at 640 tokens per parameter, predicted from N and D alone.
static void check_forecast(const accchain_model *m, accchain_loss_form lf, const double *lp, acclaw_form af, const double *ap) {
    for (int k = 0; k < 2; k++) {
        double n = 1.6e9, d = n * (k ? 640 : 20), loss, acc;
        accchain_predict(m, n, d, &loss, &acc);
        double true_loss = accchain_loss_eval(lf, lp, n, d), true_err = 1 - acclaw_eval(af, ap, true_loss);
        CHECK_CLOSE(loss, true_loss, 0.01, 0);
        CHECK_CLOSE(1 - acc, true_err, 0.02, 0);
    }
}

static void test_chain_choice(void) {
    runs r;
    accchain_model m;
    make(&r, ACCCHAIN_LOSS_ND, nd_true, ACCLAW_SIGMOID, sig_true, 11);
    CHECK(accchain_fit(&r.data, &m) == SX_OK);
    CHECK(m.n_groups == SIZES && m.loss_form == ACCCHAIN_LOSS_ND && m.acc_form == ACCLAW_SIGMOID);
    CHECK(m.cv_err[ACCCHAIN_LOSS_ND][ACCLAW_SIGMOID] < m.cv_err[ACCCHAIN_LOSS_ND1][ACCLAW_SIGMOID]);
    // held-out sizes include the smallest, extrapolated downwards: a few percent; the wrong error form, 5x that
    CHECK(m.cv_err[ACCCHAIN_LOSS_ND][ACCLAW_SIGMOID] < 0.05 && m.cv_err[ACCCHAIN_LOSS_ND][ACCLAW_EXP] > 0.15);
    check_forecast(&m, ACCCHAIN_LOSS_ND, nd_true, ACCLAW_SIGMOID, sig_true);
    make(&r, ACCCHAIN_LOSS_ND1, nd1_true, ACCLAW_EXP, exp_true, 12);
    CHECK(accchain_fit(&r.data, &m) == SX_OK);
    CHECK(m.acc_form == ACCLAW_EXP && m.cv_err[m.loss_form][ACCLAW_EXP] < 0.05);
    check_forecast(&m, ACCCHAIN_LOSS_ND1, nd1_true, ACCLAW_EXP, exp_true);
    json_t *j = accchain_model_to_json(&m);
    CHECK(!strcmp(json_string_value(json_object_get(j, "acc_form")), "exp") &&
          json_is_number(json_object_get(json_object_get(j, "cv"), "nd1/sigmoid")));
    json_decref(j);
}

static void test_refusals(void) {
    runs r;
    accchain_model m;
    make(&r, ACCCHAIN_LOSS_ND1, nd1_true, ACCLAW_EXP, exp_true, 13);
    r.data.n = 2 * MULTS;   // two sizes: nothing to hold out beyond them
    CHECK(accchain_fit(&r.data, &m) == SX_ERR_ARG && strstr(sx_last_error(), "2 sizes"));
    r.data.n = RUNS;
    r.acc[3] = 1.2;
    CHECK(accchain_fit(&r.data, &m) == SX_ERR_ARG && strstr(sx_last_error(), "run 3"));
}

int main(void) {
    TEST_RUN(test_nd1_law);
    TEST_RUN(test_chain_choice);
    TEST_RUN(test_refusals);
    return testlib_finish("accchain");
}
