// spending: group-sequential levels against published boundaries (five equal looks, one-sided 0.025, as the R
// package ldbounds tabulates them, Reboussin et al. 2000: Lan–DeMets O'Brien–Fleming type 4.8769, 3.3569,
// 2.6803, 2.2898, 2.0310; Pocock type 2.4380, 2.4268, 2.4101, 2.3966, 2.3859), and against an independent Monte Carlo of the Brownian motion at uneven looks: the
// chance of ever crossing is alpha and each look spends its increment. The problem it solves, measured the
// same way: ten looks at the fixed-sample 5% level decide about 19% of the time under no effect.
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <gsl/gsl_cdf.h>
#include "core/rng.h"
#include "core/status.h"
#include "scale/spending.h"
#include "support/testlib.h"

#define PATHS 400000

// Fraction of PATHS Brownian paths (seeded) whose Z = W(t)/sqrt(t) first reaches the two-sided nominal level
// at each look; crossed (k) overwritten; returns the fraction crossing at any look.
static double monte_carlo(const double *t, const double *nominal, size_t k, double *crossed) {
    rng_state r;
    rng_seed(&r, 20261205);
    double c[16], any = 0;
    for (size_t j = 0; j < k; j++) { c[j] = nominal[j] > 0 ? gsl_cdf_ugaussian_Qinv(nominal[j] / 2) : INFINITY; crossed[j] = 0; }
    for (int p = 0; p < PATHS; p++) {
        double w = 0, before = 0;
        for (size_t j = 0; j < k; j++) {
            w += sqrt(t[j] - before) * rng_normal(&r);
            before = t[j];
            if (fabs(w) / sqrt(t[j]) >= c[j]) { crossed[j] += 1.0 / PATHS; any += 1.0 / PATHS; break; }
        }
    }
    return any;
}

static void test_published(void) {
    const double t[5] = {0.2, 0.4, 0.6, 0.8, 1};
    const double z[2][5] = {{4.8769, 3.3569, 2.6803, 2.2898, 2.0310}, {2.4380, 2.4268, 2.4101, 2.3966, 2.3859}};
    double (*const spend[2])(double, double) = {spending_obf, spending_pocock};
    for (int f = 0; f < 2; f++) {
        double spent[5], nominal[5];
        // one-sided 0.025 on each side: the two-sided spending is twice it (the two sides' overlap is negligible)
        for (int j = 0; j < 5; j++) spent[j] = 2 * spend[f](t[j], 0.025);
        if (!CHECK(spending_levels(t, spent, 5, nominal) == SX_OK)) return;
        for (int j = 0; j < 5; j++) {
            double got = gsl_cdf_ugaussian_Qinv(nominal[j] / 2);
            printf("%s look %d: z %.4f (published %.4f)\n", f ? "Pocock" : "O'Brien-Fleming", j + 1, got, z[f][j]);
            CHECK_CLOSE(got, z[f][j], 0, 3e-4);
        }
    }
}

static void test_spending_function(void) {
    CHECK(spending_obf(0, 0.05) == 0 && spending_obf(1, 0.05) == 0.05 && spending_obf(2, 0.05) == 0.05);
    CHECK(spending_pocock(0, 0.05) == 0 && spending_pocock(1, 0.05) == 0.05);
    CHECK_CLOSE(spending_obf(0.5, 0.05), 2 * gsl_cdf_ugaussian_Q(gsl_cdf_ugaussian_Qinv(0.025) / sqrt(0.5)), 1e-12, 0);
    CHECK_CLOSE(spending_pocock(0.5, 0.05), 0.05 * log(1 + (M_E - 1) / 2), 1e-12, 0);
    double t = 1, spent = 0.05, nominal;   // one look: the fixed-sample level
    CHECK(spending_levels(&t, &spent, 1, &nominal) == SX_OK);
    CHECK_CLOSE(nominal, 0.05, 1e-9, 0);
}

// Uneven looks, one adding no information, a final look spending what is left: the Monte Carlo crossing
// probabilities match the increments, and the total is alpha.
static void test_monte_carlo(void) {
    const double t[7] = {0.05, 0.12, 0.4, 0.4, 0.41, 0.8, 1};
    double (*const spend[2])(double, double) = {spending_obf, spending_pocock};
    for (int f = 0; f < 2; f++) {
        double spent[7], nominal[7], crossed[7];
        for (int j = 0; j < 7; j++) spent[j] = spend[f](t[j], 0.05);
        if (!CHECK(spending_levels(t, spent, 7, nominal) == SX_OK)) return;
        CHECK(nominal[3] == 0);   // no information added: nothing spent
        double any = monte_carlo(t, nominal, 7, crossed), se = sqrt(0.05 * 0.95 / PATHS);
        printf("%s, uneven looks: ever crossing %.5f of %d paths (alpha 0.05, se %.5f); per look", f ? "Pocock" : "O'Brien-Fleming",
               any, PATHS, se);
        for (int j = 0; j < 7; j++) printf(" %.5f/%.5f", crossed[j], spent[j] - (j ? spent[j - 1] : 0));
        printf("\n");
        CHECK(fabs(any - 0.05) < 4 * se);
        for (int j = 0; j < 7; j++) {
            double want = spent[j] - (j ? spent[j - 1] : 0);
            CHECK(fabs(crossed[j] - want) < 4 * sqrt(want / PATHS) + 1e-5);
        }
        CHECK(nominal[6] > 0.005 && nominal[6] < 0.05);   // the last look below the fixed-sample level
    }
}

// Without spending: ten equal looks each at the fixed-sample 5% level (Pocock 1977: 0.193).
static void test_inflation(void) {
    double t[10], nominal[10], crossed[10];
    for (int j = 0; j < 10; j++) { t[j] = (j + 1) / 10.0; nominal[j] = 0.05; }
    double any = monte_carlo(t, nominal, 10, crossed);
    printf("ten looks at the fixed 5%% level: %.4f decide under no effect\n", any);
    CHECK(any > 0.18 && any < 0.21);
}

// Levels of looks at information I (k of them) against horizon H with Pocock spending, the look final_at
// (if < k) spending what is left.
static void pocock_levels(const double *I, size_t k, double H, size_t final_at, double *nominal) {
    double t[16], spent[16];
    for (size_t j = 0; j < k; j++) {
        t[j] = fmin(1, I[j] / H);
        spent[j] = j == final_at ? 0.05 : spending_pocock(t[j], 0.05);
    }
    CHECK(spending_levels(t, spent, k, nominal) == SX_OK);
}

// A second `compare --until-decided` on the same ladders (scale/look_record.h), as two runs of looks on one
// Brownian path: the first at information 1, 2 and 3.5, the second at 3.5 again, 5, 7 and 9.5 (its budget's
// end). Restarting the spending, the second run's looks spend a fresh 5%; continuing, every look is counted at
// the new horizon 9.5 (the repeated look adds nothing). Where the first run stopped inside a budget that
// reached 9.5 (a study resumed), continuing holds 5% and restarting does not; where the first run's own budget
// ended at 3.5 (its last look final, all of its 5% spent) and the second extends it, both pass 5%: continuing
// only a little less.
static void test_two_runs(void) {
    const double I[6] = {1, 2, 3.5, 5, 7, 9.5}, Ic[7] = {1, 2, 3.5, 3.5, 5, 7, 9.5}, I2[4] = {3.5, 5, 7, 9.5};
    double t[6], lc[7], lr[4], err[2][2];
    for (int j = 0; j < 6; j++) t[j] = I[j] / 9.5;
    pocock_levels(Ic, 7, 9.5, 6, lc);
    pocock_levels(I2, 4, 9.5, 3, lr);
    for (int ext = 0; ext < 2; ext++) {   // 0: the first run's budget reached 9.5; 1: it ended at 3.5
        double l1[3], both[6], crossed[6];
        pocock_levels(I, 3, ext ? 3.5 : 9.5, ext ? 2 : 99, l1);
        for (int restart = 0; restart < 2; restart++) {
            for (int j = 0; j < 3; j++) both[j] = l1[j];
            if (restart) both[2] = fmax(l1[2], lr[0]);   // the second run's first look tests the same data again
            for (int j = 3; j < 6; j++) both[j] = restart ? lr[j - 2] : lc[j + 1];
            err[ext][restart] = monte_carlo(t, both, 6, crossed);
        }
        printf("first run's budget %s: continuing %.4f, restarting %.4f decide under no effect\n",
               ext ? "ended at 3.5, extended to 9.5" : "reached 9.5, stopped at 3.5", err[ext][0], err[ext][1]);
    }
    double se = sqrt(0.05 * 0.95 / PATHS);
    CHECK(fabs(err[0][0] - 0.05) < 4 * se && err[0][1] > 0.055);
    CHECK(err[1][0] > 0.06 && err[1][0] < err[1][1]);
}

// A rung added by --until-decided (scale/sequential.h): two looks of one estimator (information 1 and 2 of a
// horizon of 6, Pocock type), then a new estimator of the same null effect (the law refitted with a larger rung)
// whose first statistic is correlated rho with the last one before, looked at three times (information 3, 6 and 9,
// the last final). Its stage tests at what the first left, 5% - spend(2/6, 5%): under no effect the two stages
// together decide at most 5% whatever rho (they add at most, Bonferroni); a fresh 5% for the second stage passes it.
static void test_stages(void) {
    const double t1[2] = {1.0 / 6, 2.0 / 6}, t2[3] = {3.0 / 9, 6.0 / 9, 1};
    const double rhos[2] = {0, 0.7};
    double l1[2], spent1[2], l2[2][3], spent2[3];
    for (int j = 0; j < 2; j++) spent1[j] = spending_pocock(t1[j], 0.05);
    CHECK(spending_levels(t1, spent1, 2, l1) == SX_OK);
    for (int fresh = 0; fresh < 2; fresh++) {
        double a = fresh ? 0.05 : 0.05 - spent1[1];
        for (int j = 0; j < 3; j++) spent2[j] = j == 2 ? a : spending_pocock(t2[j], a);
        CHECK(spending_levels(t2, spent2, 3, l2[fresh]) == SX_OK);
    }
    double err[2][2] = {{0}}, se = sqrt(0.05 * 0.95 / PATHS);
    for (int c = 0; c < 2; c++) {
        rng_state r;
        rng_seed(&r, 20261206 + (uint64_t)c);
        for (int p = 0; p < PATHS; p++) {
            double w = 0, z = 0, v, before = 0;
            bool first = false;
            for (int j = 0; j < 2 && !first; j++) {
                w += sqrt(t1[j] - before) * rng_normal(&r);
                before = t1[j];
                z = w / sqrt(t1[j]);
                first = 2 * gsl_cdf_ugaussian_Q(fabs(z)) <= l1[j];
            }
            // the second estimator: its first statistic rho-correlated with the last one before, then new increments
            v = sqrt(t2[0]) * (rhos[c] * z + sqrt(1 - rhos[c] * rhos[c]) * rng_normal(&r));
            double z2[3] = {v / sqrt(t2[0])};
            for (int j = 1; j < 3; j++) { v += sqrt(t2[j] - t2[j - 1]) * rng_normal(&r); z2[j] = v / sqrt(t2[j]); }
            for (int fresh = 0; fresh < 2; fresh++) {
                bool any = first;
                for (int j = 0; j < 3 && !any; j++) any = 2 * gsl_cdf_ugaussian_Q(fabs(z2[j])) <= l2[fresh][j];
                err[c][fresh] += any ? 1.0 / PATHS : 0;
            }
        }
        printf("a rung added after 2 looks, rho %.1f: the second stage at the alpha left %.4f, at a fresh 5%% %.4f decide under no effect\n",
               rhos[c], err[c][0], err[c][1]);
        CHECK(err[c][0] < 0.05 + 3 * se && err[c][1] > 0.05 + 3 * se);
    }
}

// Looks after the last one that adds information (t repeats at the end) spend nothing: level 0 each.
static void test_repeated_last(void) {
    const double t[4] = {0.5, 1, 1, 1}, spent[4] = {0.01, 0.05, 0.05, 0.05};
    double nominal[4] = {NAN, NAN, NAN, NAN};
    CHECK(spending_levels(t, spent, 4, nominal) == SX_OK);
    CHECK(nominal[0] > 0 && nominal[1] > 0 && nominal[2] == 0 && nominal[3] == 0);
}

static void test_bad_input(void) {
    double t[2] = {0.5, 0.4}, spent[2] = {0.01, 0.02}, nominal[2];
    CHECK(spending_levels(t, spent, 2, nominal) == SX_ERR_ARG);
    t[1] = 1.5;
    CHECK(spending_levels(t, spent, 2, nominal) == SX_ERR_ARG);
    t[1] = 1;
    spent[1] = 0.005;
    CHECK(spending_levels(t, spent, 2, nominal) == SX_ERR_ARG);
    t[0] = 0;
    spent[1] = 0.05;
    CHECK(spending_levels(t, spent, 2, nominal) == SX_ERR_ARG);
}

int main(void) {
    TEST_RUN(test_published);
    TEST_RUN(test_spending_function);
    TEST_RUN(test_monte_carlo);
    TEST_RUN(test_inflation);
    TEST_RUN(test_repeated_last);
    TEST_RUN(test_two_runs);
    TEST_RUN(test_stages);
    TEST_RUN(test_bad_input);
    return testlib_finish("spending");
}
